"""Issue 32, "Client CPU" (``bench/pack_cpu.py``: client CPU per state at pack 32, at most 1.0x
jev-ultralightspeed's): the third pass of cuts on a packed run's per-state work, each pinned by
a count (calls made, objects built), never by a time. Each test fails on the code before its
cut; the results they check are the same as before it."""

from __future__ import annotations

import abc
import asyncio
import contextlib
import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolnexus import (
    BatchOptions,
    create_classifier,
)
from toolnexus.core import (
    observe as probe,
)
from toolnexus.core import (
    state,
    validity,
)
from toolnexus.core.canonical import canonical_json
from toolnexus.core.decision import decode_answers
from toolnexus.core.errors import InvalidState
from toolnexus.core.qtypes.noul import NoulAnswer
from toolnexus.core.questions import questions_to_wire
from toolnexus.evaluate import packing

QUESTIONS: dict[str, Any] = {
    "refund": {"type": "noul", "instructions": "Is the customer asking for money back?"},
    "angry": {"type": "noul", "instructions": "Is the customer angry?"},
}
STATES = [f"ticket {i}: charged twice" for i in range(40)]


def synthetic() -> Any:
    """Every request answered by ``serve``'s synthetic model, in this process (no socket),
    through the classifier's public ``transport=`` seam (an ``httpx.MockTransport``)."""
    import httpx

    from toolnexus.serve import synthesize

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=synthesize(json.loads(request.content)))

    return httpx.MockTransport(answer)


def events(seen: list[tuple[str, Any]], name: str) -> list[Any]:
    """The values of the probe's ``name`` events (``toolnexus.core.observe``)."""
    return [value for event, value in seen if event == name]


def run(how: str, states: list[Any], pack: int = 20) -> list[Any]:
    async def go() -> list[Any]:
        async with create_classifier(
            base_url="http://127.0.0.1:9", api_key_env="NO_SUCH", transport=synthetic()
        ) as c:
            options = BatchOptions(concurrency=2, pack=pack)
            if how == "evaluate_batch":
                return await c.evaluate_batch(states, QUESTIONS, options=options)
            return await c.states(states, options=options).evaluate(**QUESTIONS)

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("how", "built"),
    [
        pytest.param("evaluate_batch", 0, id="evaluate-batch-keeps-bare-decisions"),
        pytest.param("states", 40, id="states-still-returns-state-results"),
    ],
)
def test_evaluate_batch_keeps_no_state_result_per_state(how: str, built: int) -> None:
    """Seed 004 ``evaluate-batch`` returns the decisions: a packed run no longer wraps each one
    in a ``StateResult`` (one more object per state for the collector to walk until the run
    ends) only to unwrap it; ``states(...)``, whose results ARE StateResults, still builds one
    each."""
    with probe.counting() as seen:
        got = run(how, STATES)
    assert len(got) == 40 and len(events(seen, "batch.state_result")) == built
    decisions = got if how == "evaluate_batch" else [r.decision for r in got]
    assert [d.packed for d in decisions] == [20] * 40
    assert [d.position for d in decisions] == list(range(20)) * 2


def test_a_packed_reply_is_validated_without_sorting_the_questions_per_state() -> None:
    """Seed 004 ``validate-decision`` for every state of a packed reply: the question set's
    keys are sorted and their types looked up once per pack (``validity.answers_validator``),
    not by a ``validate_answers`` per state (three sorts each)."""
    with probe.counting() as seen:
        got = run("evaluate_batch", STATES)
    assert [d.reasked for d in got] == [False] * 40
    assert events(seen, "validate.answers") == []


_NOUL_QS: dict[str, Any] = {}
#: ``None`` in the cases below: a valid answer to the choice question "b"
GOOD_CHOICE = {
    "type": "choice",
    "choice": "x",
    "confidence": 0.9,
    "probabilities": {"x": 0.9, "y": 0.1},
}


def _prepared() -> Any:
    if not _NOUL_QS:
        qs = {
            "a": {"type": "noul", "instructions": "A?"},
            "b": {"type": "choice", "instructions": "B?", "criteria": {"x": "X.", "y": "Y."}},
        }
        _NOUL_QS["qs"] = create_classifier(api_key_env="NO_SUCH").prepare(qs)
    return _NOUL_QS["qs"]


@pytest.mark.parametrize(
    "answers",
    [
        pytest.param({"a": {"type": "noul", "noul": 0.2}, "b": None}, id="valid"),
        pytest.param({"a": {"type": "noul", "noul": 1.5}, "b": None}, id="noul-out-of-range"),
        pytest.param({"a": {"type": "noul", "noul": 0.5}}, id="missing-answer"),
        pytest.param(
            {"a": {"type": "noul", "noul": 0.5}, "b": None, "c": {"type": "noul", "noul": 0.1}},
            id="unexpected-answer",
        ),
        pytest.param({"b": None, "c": {"type": "noul", "noul": 0.1}}, id="missing-and-extra"),
        pytest.param({"a": None, "b": None}, id="wrong-type"),
        pytest.param(
            {"a": {"type": "noul", "noul": -0.1}, "b": {"type": "noul", "noul": 0.5}},
            id="two-bad-first-wins",
        ),
        pytest.param(
            {"a": {"type": "noul", "noul": 0.5}, "b": {**GOOD_CHOICE, "choice": "z"}},
            id="choice-not-offered",
        ),
    ],
)
def test_the_per_pack_validator_gives_validate_answers_verdict(answers: dict[str, Any]) -> None:
    """``answers_validator(qs)(answers)`` is ``validate_answers(qs, answers)``: seed 004's
    checks in its order, first failure wins, the same message and key."""
    qs = _prepared()
    wire = {k: (GOOD_CHOICE if v is None else v) for k, v in answers.items()}
    typed = decode_answers(wire)
    want = validity.validate_answers(qs, typed)
    got = validity.answers_validator(qs)(typed)
    assert (got is None) == (want is None)
    if want is not None and got is not None:
        assert (got.detail, got.key) == (want.detail, want.key)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("ticket 7: charged twice", id="plain-ascii"),
        pytest.param("", id="empty"),
        pytest.param('she said "refund"', id="quote"),
        pytest.param("C:\\path", id="backslash"),
        pytest.param("tab\there", id="control-char"),
        pytest.param("line\nbreak", id="newline"),
        pytest.param("del\x7fchar", id="del"),
        pytest.param("請求が二重に発生しました", id="non-ascii"),
        pytest.param("café <b> & 'x'", id="latin-and-html"),
        pytest.param("\u2028", id="line-separator"),
    ],
)
def test_a_state_weight_is_its_canonical_size(text: str) -> None:
    """A state's share of a packed request's input is its canonical bytes' length (issue 20's
    split): the shortcut for plain text gives exactly the full computation's number."""
    assert packing._canonical_size(text) == len(canonical_json(text))
    qs = _prepared()
    asked = len(canonical_json(questions_to_wire(qs)))
    assert packing.state_weights([text], qs) == [len(canonical_json(text)) + asked]


def test_plain_text_weights_are_not_encoded() -> None:
    """Issue 32 pack CPU: ``state_weights`` runs per state of every packed request; a plain
    ASCII string is not JSON-encoded to learn its length (objects and escaped text still are)."""
    states: list[Any] = [*STATES, 'say "hi"', {"ticket": "x"}]
    qs = _prepared()
    with probe.counting() as seen:
        weights = packing.state_weights(states, qs)
    assert len(weights) == 42
    encoded = events(seen, "pack.weigh")
    # once for the questions, once for the quoted text, once for the object
    assert len(encoded) == 3 and encoded[1:] == ['say "hi"', {"ticket": "x"}]


@pytest.mark.parametrize(
    ("value", "walks"),
    [
        pytest.param("ticket 7: charged twice", 0, id="ascii-text-not-walked"),
        pytest.param("請求", 1, id="non-ascii-text-walked"),
        pytest.param({"ticket": "x"}, 1, id="object-walked"),
    ],
)
def test_ascii_text_is_checked_without_the_walk(value: Any, walks: int) -> None:
    """``evaluate_batch`` checks every state before any request (seed 004); ASCII text can hold
    no lone surrogate, the one thing the walk finds in a string, so it is not walked."""
    with probe.counting() as seen:
        state.check_state(value)
    assert len(events(seen, "state.walk")) == walks


def test_text_with_a_lone_surrogate_is_still_refused() -> None:
    with pytest.raises(InvalidState, match="lone surrogate"):
        state.check_state("refund \ud800 please")


def test_decoding_answers_asks_the_mapping_abc_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A parsed reply's answers are dicts with string keys: decoding each one is not an
    ``isinstance`` call into the ``Mapping`` ABC (a Python-level call per answer)."""
    checked: list[Any] = []
    real = abc.ABCMeta.__instancecheck__

    def counting(cls: Any, instance: Any) -> bool:
        checked.append((cls, type(instance)))
        return real(cls, instance)

    wire = {f"q{i}": {"type": "noul", "noul": i / 10} for i in range(10)}
    monkeypatch.setattr(abc.ABCMeta, "__instancecheck__", counting)
    got = decode_answers(wire)
    monkeypatch.undo()
    assert got == {f"q{i}": NoulAnswer(i / 10) for i in range(10)}
    assert checked == []


def _python_calls(fn: Any, *args: Any) -> int:
    """Python-level function calls (generator steps included) of toolnexus's own code made while
    ``fn(*args)`` runs, ``fn``'s own call excluded: a count, not a time. A collection that
    happens to run inside ``fn`` calls whatever finalizers and ``gc.callbacks`` earlier tests
    left (it read 4 for 2 once in the whole suite), so the collector is off while counting and
    only frames of toolnexus's files count."""
    import sys

    calls = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "call" and frame.f_code.co_filename.startswith(_SRC):
            calls += 1

    with _collector_off():
        sys.setprofile(profile)
        try:
            fn(*args)
        finally:
            sys.setprofile(None)
    return calls - 1


#: toolnexus's source folder: the frames the counts above and below count
_SRC = str(Path(packing.__file__).parent.parent)  # as the code objects name their files


@contextlib.contextmanager
def _collector_off() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def test_largest_remainder_checks_its_weights_without_a_generator() -> None:
    """Issue 20's split runs twice per packed reply over every state: its weights are checked
    by ``min`` and ``sum`` in C, not a generator step per weight."""
    assert packing.largest_remainder(1000, [3] * 32)[:2] == [32, 32]
    # its own two list comprehensions; the generator made 33 more calls
    assert _python_calls(packing.largest_remainder, 1000, [3] * 32) == 2
    with pytest.raises(ValueError, match="negative"):
        packing.largest_remainder(10, [1, -1])


def _lines(fn: Any, *args: Any) -> int:
    """Lines of toolnexus's Python executed while ``fn(*args)`` runs (every frame of its files,
    the collector off as above): a count, not a time."""
    import sys

    lines = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal lines
        if event == "line" and frame.f_code.co_filename.startswith(_SRC):
            lines += 1
        return trace

    with _collector_off():
        sys.settrace(trace)
        try:
            fn(*args)
        finally:
            sys.settrace(None)
    return lines


def test_states_without_images_are_packed_without_the_merge_walk() -> None:
    """``pack_lifted`` renames clashing placeholders and merges assets; states without any
    image have nothing to merge, so their pack is built at once (the same value)."""
    from toolnexus.core.assets import LiftedState

    parts = [LiftedState({"ticket": i}) for i in range(32)]
    assert packing.pack_lifted(parts) == LiftedState({"states": [{"ticket": i} for i in range(32)]})
    assert _lines(packing.pack_lifted, parts) < 10  # it was 5 lines per state


@pytest.mark.parametrize(
    ("listening", "emitted"),
    [
        pytest.param(False, 0, id="nobody-listening-no-call"),
        pytest.param(True, 40, id="a-listener-gets-every-state"),
    ],
)
def test_a_packed_state_emits_only_when_someone_listens(listening: bool, emitted: int) -> None:
    """Issue 32 pack CPU: whether ``on_metric`` is set is asked once per pack; with a listener
    every packed state still gets its event."""
    metrics: list[Any] = []
    extra: dict[str, Any] = {"on_metric": metrics.append} if listening else {}

    async def go() -> list[Any]:
        async with create_classifier(
            base_url="http://127.0.0.1:9", api_key_env="NO_SUCH", transport=synthetic(), **extra
        ) as c:
            options = BatchOptions(concurrency=2, pack=20)
            return await c.evaluate_batch(STATES, QUESTIONS, options=options)

    with probe.counting() as seen:
        assert len(asyncio.run(go())) == 40
    assert len(events(seen, "pack.emit")) == emitted
    assert len([e for e in metrics if e.get("packed") == 20]) == emitted


def test_a_sent_pack_is_let_go_before_the_run_ends() -> None:
    """The plan is made before the first request; each planned pack (its indices, its body's
    digest and estimate) is dropped once it is sent, not kept until the run ends: while the
    last pack is sent, only the packs still in flight are alive."""
    import weakref

    refs: list[weakref.ref[Any]] = []
    alive_at_last: list[int] = []

    def watching(event: str, value: Any) -> None:
        # Only weak references are kept: the observer itself holds no planned pack alive.
        if event == "plan.groups":
            refs.extend(weakref.ref(g) for g in value)
        elif event == "pack.send" and value is refs[-1]():
            alive_at_last.append(sum(r() is not None for r in refs))

    states = [f"ticket {i}: charged twice" for i in range(200)]
    with probe.observing(watching):
        assert len(run("evaluate_batch", states, pack=10)) == 200
    assert len(refs) == 20 and len(alive_at_last) == 1
    assert alive_at_last[0] <= 2  # concurrency 2: the last pack and at most one other


def test_text_states_are_planned_and_sent_without_a_lift_each() -> None:
    """Seed 004, "content parts in the state are lifted into assets": text holds none, so a
    pack of text is planned and sent without a ``LiftedState`` per state (the plan kept one per
    state until the run ended); the bodies are the same bytes."""
    from toolnexus.evaluate import packplan

    qs = create_classifier().prepare(QUESTIONS)
    with probe.counting() as seen:
        planned = packplan.plan_requests(STATES, qs, 20)
        assert [p.indices for p in planned] == [list(range(20)), list(range(20, 40))]
        assert [p.lifted for p in planned] == [None, None]
        got = run("evaluate_batch", STATES)
    assert [d.packed for d in got] == [20] * 40
    assert events(seen, "assets.lift") == []


def test_equal_usage_shares_are_one_value() -> None:
    """Issue 20's split: the parts still sum exactly to the reply's usage, each state's part
    as before; equal parts are one (frozen) value, not one object per state."""
    from toolnexus.core.answers import ClassifierUsage

    usage = ClassifierUsage(1422, 128, 0.0042)
    parts = packing.split_usage(usage, [142] * 32)
    assert sum(p.input_tokens for p in parts) == 1422
    assert sum(p.output_tokens for p in parts) == 128
    assert [(p.input_tokens, p.output_tokens) for p in parts] == [(45, 4)] * 14 + [(44, 4)] * 18
    assert len({id(p) for p in parts}) == 2
    # a negative cost: its empty part is -0.0, never shared with a 0.0
    negative = packing.split_usage(ClassifierUsage(0, 0, -1e-9), [1, 1, 1])
    assert [str(p.cost) for p in negative] == ["-1e-09", "-0.0", "-0.0"]


def test_a_packed_batch_compares_no_decision_and_steps_no_generator_per_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 32 pack CPU: once every state is decided, ``evaluate_batch`` checks its results
    without comparing each decision with None (a dataclass ``__eq__`` call per state) and
    scans them for errors in one pass; the plan tells a pack of text by its types in C. No
    Python-level call per state is left in those loops."""
    import sys

    from toolnexus.core.decision import Decision

    compared: list[Any] = []
    real_eq = Decision.__eq__

    def counting_eq(self: Any, other: Any) -> Any:
        compared.append(other)
        return real_eq(self, other)

    monkeypatch.setattr(Decision, "__eq__", counting_eq)
    steps: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        ours = code.co_filename.endswith(("batch.py", "packplan.py", "batchgroups.py"))
        if event == "call" and code.co_name == "<genexpr>" and ours:
            steps.append(f"{code.co_filename}:{frame.f_lineno}")

    sys.setprofile(profile)
    try:
        got = run("evaluate_batch", STATES)
    finally:
        sys.setprofile(None)
    assert [d.position for d in got] == list(range(20)) * 2
    assert compared == [] and steps == []


ANSWER_CASES = [
    pytest.param({"a": {"type": "noul", "noul": 0.25}}, id="noul"),
    pytest.param({"a": {"type": "noul", "noul": 1}}, id="integer-noul-as-float"),
    pytest.param({"a": {"type": "noul", "noul": "high"}}, id="noul-not-a-number"),
    pytest.param({"a": {"type": "noul"}}, id="noul-missing"),
    pytest.param({"a": {"type": "choice", "choice": "x"}}, id="another-type-than-asked"),
    pytest.param({"a": ["noul", 0.5]}, id="not-an-object"),
    pytest.param({"a": {"noul": 0.5}}, id="no-type"),
    pytest.param({"a": {"type": "box", "boxes": [1]}}, id="unmodelled-type"),
    pytest.param({"b": {"type": "noul", "noul": 0.5}}, id="not-asked"),
    pytest.param({"r": {"type": "box", "boxes": [[1, 2, 3, 4]]}}, id="raw-question"),
    pytest.param({"r": {"type": "noul", "noul": 0.5}}, id="raw-question-modelled-answer"),
    pytest.param({"a": {"type": "noul", "noul": 0.5}, "c": GOOD_CHOICE}, id="noul-and-choice"),
]


@pytest.mark.parametrize("answers", ANSWER_CASES)
def test_the_per_pack_decoder_gives_decode_answers_result(answers: dict[str, Any]) -> None:
    """``answers_decoder(qs)(answers)`` is ``decode_answers(answers, qs)`` (seed 000's typed
    answers): the same answers, or the same ``DecisionError`` with the same message and key."""
    from toolnexus.core.decision import answers_decoder
    from toolnexus.core.errors import DecisionError
    from toolnexus.core.qtypes.raw import RawQuestion

    prepared = create_classifier(api_key_env="NO_SUCH").prepare(
        {
            "a": {"type": "noul", "instructions": "A?"},
            "c": {"type": "choice", "instructions": "C?", "criteria": {"x": "X.", "y": "Y."}},
        }
    )
    qs: dict[str, Any] = {**prepared, "r": RawQuestion("box", "find")}

    def outcome(decode: Any) -> Any:
        try:
            return decode()
        except DecisionError as e:
            return ("error", e.detail, e.key)

    want = outcome(lambda: decode_answers(answers, qs))
    assert outcome(lambda: answers_decoder(qs)(answers)) == want


def test_a_packed_reply_decodes_its_answers_by_their_type_directly() -> None:
    """Issue 32 pack CPU: each answer of a packed reply of its question's own type goes to
    that type's decoder, found once per pack, not through the generic per-answer dispatch."""
    with probe.counting() as seen:
        got = run("evaluate_batch", STATES)
    assert sorted(got[0].answers) == ["angry", "refund"]
    assert events(seen, "decode.dispatch") == []


def test_noul_answers_of_one_value_are_one_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """The wire prints a probability to two decimals (system-one-wire.md), so a run's noul
    answers take at most 101 values: decoding 1,010 of them makes at most 101 objects, each the
    same (frozen) value as before; -0.0 keeps its sign, and the table stays bounded."""
    from toolnexus.core.qtypes import noul

    monkeypatch.setattr(noul, "_SHARED", {})
    wire = {f"q{i}": {"type": "noul", "noul": (i % 101) / 100} for i in range(1010)}
    got = decode_answers(wire)
    assert all(a == NoulAnswer((i % 101) / 100) for i, a in enumerate(got.values()))
    assert len({id(a) for a in got.values()}) == 101
    zeros = decode_answers(
        {"p": {"type": "noul", "noul": 0.0}, "n": {"type": "noul", "noul": -0.0}}
    )
    assert [str(a.noul) for a in zeros.values()] == ["0.0", "-0.0"]
    monkeypatch.setattr(noul, "_SHARED_MAX", 200)
    many = decode_answers({f"q{i}": {"type": "noul", "noul": i / 10_000} for i in range(500)})
    assert [a.noul for a in many.values()] == [i / 10_000 for i in range(500)]
    assert len(noul._SHARED) == 200
