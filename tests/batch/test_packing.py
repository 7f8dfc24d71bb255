"""Packing several states into one request (issue 20): the pure shape and the split back."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from imagegen import png
from toolnexus import (
    ChoiceQuestion,
    ClassifierUsage,
    DecisionError,
    NoulCriteria,
    NoulQuestion,
    RawQuestion,
    ScoreQuestion,
    canonical_request,
    lift_images,
    with_images,
)
from toolnexus.core.assets import LiftedState
from toolnexus.core.decision import Decision, parse_decision
from toolnexus.core.questions import questions_to_wire
from toolnexus.evaluate.packing import (
    PACKED_CACHE_KIND,
    STATES_KEY,
    derived_key,
    largest_remainder,
    pack_instructions,
    pack_lifted,
    pack_questions,
    pack_state,
    split_derived_key,
    split_usage,
    state_weights,
    unpack_decisions,
    unpack_instructions,
    unpack_questions_wire,
)

QUESTIONS = {
    "refund": NoulQuestion("Is the customer asking for money back?", NoulCriteria("yes", "no")),
    "desk": ChoiceQuestion(
        "Which desk owns it?", {"billing": "money that moved", "tech": "the product broke"}
    ),
    "urgency": ScoreQuestion("How urgent?", ["can wait", {"label": "now", "description": "x"}]),
}


def _answers(state: int) -> dict[str, Any]:
    p = round(0.1 * state, 2)
    return {
        "refund": {"type": "noul", "noul": p},
        "desk": {
            "type": "choice",
            "choice": "billing",
            "confidence": 0.5,
            "probabilities": {"billing": 0.75, "tech": 0.25},
        },
        "urgency": {
            "type": "score",
            "score": 0.4,
            "confidence": 0.2,
            "legend": {"0": "can wait", "1": "now"},
            "probabilities": {"0": 0.6, "1": 0.4},
        },
    }


def _packed_body(n: int, usage: dict[str, Any]) -> dict[str, Any]:
    answers = {derived_key(i, k): a for i in range(n) for k, a in _answers(i).items()}
    return {"model": "jev-1.13.0", "answers": answers, "usage": usage}


@given(st.integers(min_value=0, max_value=10_000), st.text())
def test_derived_key_round_trips_any_caller_key(index: int, key: str) -> None:
    """Keys never reach the model (seed 001): a derived key only has to be unique and
    reversible, for any caller key, a ':' in it included."""
    assert split_derived_key(derived_key(index, key)) == (index, key)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("refund", id="no-colon"),
        pytest.param(":refund", id="empty-index"),
        pytest.param("01:refund", id="leading-zero"),
        pytest.param("-1:refund", id="negative"),
        pytest.param("١:refund", id="non-ascii-digit"),
    ],
)
def test_split_derived_key_refuses_what_it_never_builds(text: str) -> None:
    assert split_derived_key(text) is None


def test_derived_questions_keep_the_callers_criteria_byte_for_byte() -> None:
    """Instructions address the state by position; the criteria are the caller's unchanged, so
    check-criteria findings still hold for the packed request."""
    packed = pack_questions(QUESTIONS, 3)
    assert list(packed) == [derived_key(i, k) for i in range(3) for k in QUESTIONS]
    for i in range(3):
        for key, question in QUESTIONS.items():
            derived = packed[derived_key(i, key)]
            assert derived.criteria == question.criteria
            assert derived.instructions == f"For states[{i}] only: {question.instructions}"
            assert type(derived) is type(question)


def test_structured_and_raw_instructions_are_addressed_too() -> None:
    structured = {"task": "judge", "context": ["a"]}
    assert pack_instructions(2, structured) == ["For states[2] only:", structured]
    parts = ["part", {"x": 1}]
    assert pack_instructions(0, parts) == ["For states[0] only:", parts]
    raw = pack_questions({"b": RawQuestion("box", "Where is the cat?")}, 2)
    assert raw["1:b"] == RawQuestion("box", "For states[1] only: Where is the cat?")


def test_pack_of_one_still_derives_keys_and_a_pack_of_zero_is_refused() -> None:
    assert list(pack_questions(QUESTIONS, 1)) == ["0:refund", "0:desk", "0:urgency"]
    with pytest.raises(ValueError, match="at least one state"):
        pack_questions(QUESTIONS, 0)


def test_packed_request_bytes_are_canonical_and_stable() -> None:
    """The documented canonical example of a packed request (README): a golden of the bytes."""
    body = canonical_request("jev-1.13.0", pack_questions({"refund": QUESTIONS["refund"]}, 2))
    assert body == (
        b'{"model":"jev-1.13.0","questions":{"0:refund":{"criteria":{"false":"no","true":"yes"},'
        b'"instructions":"For states[0] only: Is the customer asking for money back?",'
        b'"type":"noul"},"1:refund":{"criteria":{"false":"no","true":"yes"},'
        b'"instructions":"For states[1] only: Is the customer asking for money back?",'
        b'"type":"noul"}}}'
    )
    assert pack_state(["a", {"b": 1}]) == {STATES_KEY: ["a", {"b": 1}]}


@given(
    st.integers(min_value=0, max_value=10**9),
    st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=40),
)
def test_largest_remainder_parts_sum_exactly(total: int, weights: list[int]) -> None:
    """Usage parts "sum exactly to the response's totals" (issue 20 item 4)."""
    parts = largest_remainder(total, weights)
    assert sum(parts) == total
    assert len(parts) == len(weights)
    whole = sum(weights) or len(weights)
    shares = weights if sum(weights) else [1] * len(weights)
    for part, w in zip(parts, shares, strict=True):
        assert abs(part - total * w / whole) < 1 + 1e-9


def test_largest_remainder_is_deterministic_on_ties() -> None:
    assert largest_remainder(5, [1, 1, 1]) == [2, 2, 1]
    assert largest_remainder(0, [3, 4]) == [0, 0]
    assert largest_remainder(7, [0, 0]) == [4, 3]
    with pytest.raises(ValueError):
        largest_remainder(-1, [1])


@given(
    st.integers(min_value=0, max_value=10**7),
    st.integers(min_value=0, max_value=10**6),
    st.one_of(st.none(), st.decimals(min_value=0, max_value=100, places=9)),
    st.lists(st.integers(min_value=1, max_value=10**5), min_size=1, max_size=25),
)
def test_split_usage_sums_to_the_response_without_float_sums(
    inp: int, out: int, cost: Decimal | None, weights: list[int]
) -> None:
    usage = ClassifierUsage(inp, out, None if cost is None else float(cost))
    parts = split_usage(usage, weights)
    assert sum(p.input_tokens for p in parts) == inp
    assert sum(p.output_tokens for p in parts) == out
    if cost is None:
        assert all(p.cost is None for p in parts)
    else:
        total = sum((Decimal(repr(p.cost)) for p in parts), Decimal(0))
        assert total == Decimal(repr(float(cost))).quantize(Decimal(10) ** -9)


@given(
    st.integers(min_value=-(2**53), max_value=2**53),
    st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=40),
)
def test_split_cost_parts_are_the_decimal_quotients_bit_for_bit(
    nanos: int, weights: list[int]
) -> None:
    """Issue 32's CPU cut keeps every output byte: a cost part is ``p / 10**9`` in ints, the
    same double as the Decimal quotient it replaced (a negative cost's empty part is -0.0)."""
    usage = ClassifierUsage(0, 0, nanos / 10**9)
    cents = int((Decimal(repr(usage.cost)) * Decimal(10) ** 9).to_integral_value())
    sign = -1 if cents < 0 else 1
    want = [
        float(sign * Decimal(p) / Decimal(10) ** 9) for p in largest_remainder(abs(cents), weights)
    ]
    got = [p.cost for p in split_usage(usage, weights)]
    assert [float(c).hex() for c in got if c is not None] == [c.hex() for c in want]


def test_each_state_decodes_exactly_as_if_asked_alone() -> None:
    """One Decision per state: the caller's keys, typed answers, near_uniform derived on
    decode; only calibrated (seed 001), usage, and the pack's size and the state's position
    in it differ from an unpacked decode."""
    states = ["short", {"ticket": "a much longer state " * 4}, "mid-size state"]
    weights = state_weights(states, QUESTIONS)
    body = _packed_body(3, {"input_tokens": 1001, "output_tokens": 31, "cost": 0.0003})
    results = unpack_decisions(body, QUESTIONS, weights)
    assert len(results) == 3
    for i, got in enumerate(results):
        assert not isinstance(got, DecisionError)
        alone = parse_decision(
            {"model": "jev-1.13.0", "answers": _answers(i), "usage": None}, QUESTIONS
        )
        unpacked = dataclasses.replace(
            got, calibrated=True, usage=alone.usage, packed=1, position=0
        )
        assert unpacked == alone
        assert got.calibrated is False
        assert (got.packed, got.position) == (3, i)
        assert got.score("urgency").label == "can wait"
    assert sum(r.usage.input_tokens for r in results if not isinstance(r, DecisionError)) == 1001
    first, second = results[0], results[1]
    assert not isinstance(first, DecisionError) and not isinstance(second, DecisionError)
    assert second.usage.input_tokens > first.usage.input_tokens  # the longer state costs more


def test_one_bad_state_never_fails_its_neighbours() -> None:
    body = _packed_body(3, {"input_tokens": 90, "output_tokens": 9})
    body["answers"]["1:refund"] = {"type": "noul", "noul": "high"}
    del body["answers"]["2:desk"]
    results = unpack_decisions(body, QUESTIONS, [1, 1, 1])
    assert not isinstance(results[0], DecisionError)
    bad, missing = results[1], results[2]
    assert isinstance(bad, DecisionError) and "states[1]" in str(bad)
    assert isinstance(missing, DecisionError)
    assert str(missing) == "classifier: the packed response has no answer 'desk' for states[2]"
    assert missing.key == "desk"


def test_answers_not_asked_are_ignored() -> None:
    body = _packed_body(1, {"input_tokens": 3, "output_tokens": 1})
    body["answers"]["7:refund"] = {"type": "noul", "noul": 0.5}
    body["answers"]["0:other"] = {"type": "noul", "noul": 0.5}
    body["answers"]["refund"] = {"type": "noul", "noul": 0.5}
    (only,) = unpack_decisions(body, QUESTIONS, [1])
    assert not isinstance(only, DecisionError)
    assert set(only.answers) == set(QUESTIONS)


@pytest.mark.parametrize(
    "stray",
    [
        pytest.param("00:refund", id="leading-zero"),
        pytest.param("+0:refund", id="signed"),
        pytest.param("\u0660:refund", id="arabic-indic-digit"),
        pytest.param(" 0:refund", id="space"),
        pytest.param("3:refund", id="past-the-pack"),
        pytest.param("0:refund:x", id="another-key"),
        pytest.param("0", id="no-key"),
    ],
)
def test_only_the_derived_keys_of_the_pack_are_read(stray: str) -> None:
    """The lookup of the pack's derived keys reads exactly what ``split_derived_key`` reads:
    any other spelling is an answer not asked, and is ignored."""
    body = _packed_body(3, {"input_tokens": 3, "output_tokens": 1})
    body["answers"] = {stray: {"type": "noul", "noul": "bad"}, **body["answers"]}
    assert (
        split_derived_key(stray) is None
        or split_derived_key(stray)[0] >= 3
        or (split_derived_key(stray)[1] not in QUESTIONS)
    )
    results = unpack_decisions(body, QUESTIONS, [1, 1, 1])
    assert all(isinstance(r, Decision) for r in results)
    assert [list(r.answers) for r in results if isinstance(r, Decision)] == [list(QUESTIONS)] * 3


@pytest.mark.parametrize(
    "body",
    [
        pytest.param([], id="not-an-object"),
        pytest.param({"model": "m", "answers": []}, id="answers-not-an-object"),
        pytest.param({"answers": {}}, id="no-model"),
        pytest.param({"model": "m", "answers": {}, "usage": 3}, id="bad-usage"),
    ],
)
def test_a_body_that_is_no_packed_decision_fails_the_whole_request(body: Any) -> None:
    with pytest.raises(DecisionError):
        unpack_decisions(body, QUESTIONS, [1, 1])


def test_packed_answers_have_their_own_cache_kind() -> None:
    """Issue 20 item 7: a packed answer is never served to an unpacked request."""
    assert PACKED_CACHE_KIND != "decision"


def test_state_weights_count_the_questions_once_per_state() -> None:
    asked = len(canonical_request("m", QUESTIONS)) - len(b'{"model":"m","questions":}')
    weights = state_weights(["ab", "abcd"], QUESTIONS)
    assert weights[1] - weights[0] == 2
    assert weights[0] == len(b'"ab"') + asked


def _lifted(text: str, **images: bytes) -> LiftedState:
    return lift_images(with_images(text, images))


def test_images_with_colliding_aliases_keep_their_own_identity() -> None:
    """Issue 20 item 1: two states that both say <before> with different bytes get distinct
    placeholders; the same bytes under the same placeholder are sent once."""
    red, blue = png(2, 2, (255, 0, 0)), png(2, 2, (0, 0, 255))
    packed = pack_lifted(
        [
            _lifted("Is <before> red?", before=red),
            _lifted("Is <before> red?", before=blue),
            _lifted("And <before>?", before=red),
        ]
    )
    assert packed.state == {STATES_KEY: ["Is <before> red?", "Is <before@1> red?", "And <before>?"]}
    assert [(a.placeholder, a.part) for a in packed.assets] == [
        ("<before>", "asset-0"),
        ("<before@1>", "asset-1"),
    ]
    assert packed.assets[1].image.sha256 != packed.assets[0].image.sha256


def test_states_without_images_pack_as_plain_json() -> None:
    packed = pack_lifted([LiftedState("a"), LiftedState({"b": ["c"]})])
    assert packed == LiftedState({STATES_KEY: ["a", {"b": ["c"]}]}, ())


@pytest.mark.parametrize(
    "instructions",
    [
        pytest.param("Is it a refund?", id="text"),
        pytest.param("For states[1] only: already prefixed", id="text-that-looks-packed"),
        pytest.param({"task": "judge"}, id="object"),
        pytest.param([{"task": "judge"}], id="list-of-one-object"),
        pytest.param(["a", "b"], id="list"),
    ],
)
def test_packed_instructions_read_back_exactly(instructions: Any) -> None:
    """serve --synthetic answers a packed question as it answers the question alone: that
    needs the caller's instructions back, exactly, for every shape."""
    for index in (0, 7):
        assert unpack_instructions(index, pack_instructions(index, instructions)) == (
            True,
            instructions,
        )
    assert unpack_instructions(1, pack_instructions(0, instructions)) == (False, None)


def test_unpack_questions_wire_refuses_what_is_not_a_pack() -> None:
    wire = questions_to_wire(pack_questions(QUESTIONS, 2))
    got = unpack_questions_wire(wire, 2)
    assert got is not None
    assert [(k, i) for k, i, _ in got] == [
        (derived_key(i, k), i) for i in range(2) for k in QUESTIONS
    ]
    assert got[0][2] == questions_to_wire(QUESTIONS)["refund"]
    assert unpack_questions_wire(wire, 1) is None  # an index past the pack
    assert unpack_questions_wire(questions_to_wire(QUESTIONS), 1) is None  # plain keys
    forged = {**wire, "0:refund": {**wire["0:refund"], "instructions": "no prefix"}}
    assert unpack_questions_wire(forged, 2) is None
