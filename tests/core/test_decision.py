"""Answers, Decision, decoding, validate_decision and threshold_band (seeds 000, 003, 004)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus import (
    DEFAULT_THRESHOLDS,
    AnswerAccessError,
    ChoiceAnswer,
    ChoiceQuestion,
    ClassifierError,
    ClassifierUsage,
    Decision,
    DecisionError,
    NoulAnswer,
    NoulQuestion,
    RawAnswer,
    RawQuestion,
    ScoreAnswer,
    ScoreQuestion,
    near_uniform,
    parse_decision,
    threshold_band,
    validate_decision,
)

RISK = ScoreQuestion("How destructive?", ["harmless", "reversible", "destructive"])
RECORDED = {
    "model": "typesafe/jev-1.13-20260917",
    "calibrated": True,
    "answers": {
        "risk": {
            "type": "score",
            "score": 1.21,
            "legend": {"0": "harmless", "1": "reversible", "2": "destructive"},
            "probabilities": {"0": 0.10, "1": 0.59, "2": 0.31},
            "confidence": 0.71,
        }
    },
    "usage": {"input_tokens": 210, "output_tokens": 24},
}


def test_typed_accessors_fail_loudly_with_two_distinct_messages() -> None:
    """seed 000: 'classifier: no answer "urgency" in this decision' and
    'classifier: answer "urgency" is a choice answer, not score'."""
    d = parse_decision(RECORDED, {"risk": RISK})
    with pytest.raises(AnswerAccessError) as wrong:
        d.noul("risk")
    assert str(wrong.value) == 'classifier: answer "risk" is a score answer, not noul'
    with pytest.raises(AnswerAccessError) as absent:
        d.score("urgency")
    assert str(absent.value) == 'classifier: no answer "urgency" in this decision'
    with pytest.raises(AnswerAccessError, match="is a score answer, not raw"):
        d.raw("risk")
    assert d.score("risk").ordered_legend() == ["harmless", "reversible", "destructive"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(None, True, id="null"),
        pytest.param("absent", True, id="absent"),
        pytest.param(True, True, id="true"),
        pytest.param(False, False, id="false"),
        pytest.param(0, True, id="zero-is-not-false"),
    ],
)
def test_calibrated_absent_or_null_is_true_only_false_is_false(value: Any, expected: bool) -> None:
    """SPEC 8B: 'An absent or null calibrated on the wire decodes as true ... Only the literal
    false yields false.'"""
    body = dict(RECORDED)
    if value == "absent":
        body.pop("calibrated")
    else:
        body["calibrated"] = value
    assert parse_decision(body).calibrated is expected


def test_cost_absent_is_none_not_zero() -> None:
    assert parse_decision(RECORDED).usage == ClassifierUsage(210, 24, None)
    assert parse_decision({**RECORDED, "usage": {"cost": 0}}).usage.cost == 0.0


@pytest.mark.parametrize(
    ("probs", "expected"),
    [
        pytest.param({"a": 0.30, "b": 0.25, "c": 0.25, "d": 0.20}, True, id="at-the-tolerance"),
        pytest.param({"a": 0.56, "b": 0.44}, False, id="just-outside"),
        pytest.param({"a": 0.97, "b": 0.03}, False, id="decisive"),
        pytest.param({"only": 0.02}, True, id="n1-trivially-uniform"),
        pytest.param({}, False, id="empty"),
    ],
)
def test_near_uniform_seed_000_cases(probs: dict[str, float], expected: bool) -> None:
    """seed 000: near_uniform <=> max |p_i - 1/n| <= 0.05, inclusive; never renormalised."""
    assert near_uniform(probs) is expected


def test_choice_answer_derives_near_uniform_even_when_built_by_hand() -> None:
    a = ChoiceAnswer("billing", {"billing": 0.34, "shipping": 0.33, "technical": 0.33}, 0.95)
    assert a.near_uniform is True
    wire = {
        "type": "choice",
        "choice": "a",
        "probabilities": {"a": 1, "b": 0},
        "confidence": 1,
        "near_uniform": True,
    }
    decoded = parse_decision({"model": "m", "answers": {"k": wire}}).choice("k")
    assert decoded.near_uniform is False  # never read from the wire


class TestScoreLevels:
    """seed 003: score and level are two different readings."""

    def test_bimodal_score_1_level_0(self) -> None:
        q = ScoreQuestion("?", ["low", "mid", "high"])
        a = parse_decision(
            {
                "model": "m",
                "answers": {
                    "s": {
                        "type": "score",
                        "score": 1.0,
                        "confidence": 0.1,
                        "probabilities": {"0": 0.5, "1": 0, "2": 0.5},
                    }
                },
            },
            {"s": q},
        ).score("s")
        assert (a.score, a.level, a.label) == (1.0, 0, "low")  # lowest index wins a tie

    def test_label_and_description_come_from_the_question(self) -> None:
        q = ScoreQuestion("?", [{"label": "calm", "description": "no rush"}, "urgent"])
        a = parse_decision(
            {
                "model": "m",
                "answers": {
                    "s": {
                        "type": "score",
                        "score": 0.2,
                        "confidence": 0.5,
                        "legend": {"0": {"label": "calm", "description": "no rush"}, "1": "urgent"},
                        "probabilities": {"0": 0.8},
                    }
                },
            },
            {"s": q},
        ).score("s")
        assert a.label == "calm"
        assert a.description == {"label": "calm", "description": "no rush"}
        assert list(a.levels) == [("calm", 0.8), ("urgent", 0.0)]  # left-out level is 0.0
        assert a.normalized() == pytest.approx(0.2)

    def test_levels_in_level_order_2_before_10(self) -> None:
        levels = [f"L{i}" for i in range(11)]
        a = parse_decision(
            {
                "model": "m",
                "answers": {
                    "s": {
                        "type": "score",
                        "score": 10,
                        "confidence": 1,
                        "legend": {str(i): levels[i] for i in range(11)},
                        "probabilities": {"10": 1.0},
                    }
                },
            }
        ).score("s")
        assert a.ordered_legend() == levels and a.level == 10 and a.label == "L10"

    def test_normalized_no_clamping_and_single_level(self) -> None:
        a = ScoreAnswer(
            score=3.0,
            legend={"0": "a", "1": "b", "2": "c"},
            probabilities={"2": 1.0},
            confidence=1.0,
        )
        assert a.normalized() == 1.5  # outside 0..1, not clamped
        one = ScoreAnswer(score=0.0, legend={"0": "a"}, probabilities={"0": 1.0}, confidence=1)
        assert one.normalized() == 0.0

    @pytest.mark.parametrize(
        ("answer", "fragment"),
        [
            pytest.param({"probabilities": {"3": 1.0}}, "outside 0..2", id="prob-key-outside"),
            pytest.param(
                {"probabilities": {"0": 1.0}, "legend": {"5": "x"}},
                "outside 0..2",
                id="legend-key-outside",
            ),
            pytest.param({"probabilities": {"0": "high"}}, "must be a number", id="non-number"),
            pytest.param({"probabilities": {}}, "empty probabilities", id="empty-map"),
            pytest.param(
                {"probabilities": {"0": 1.0}, "legend": {"0": "calm"}},
                "'calm' but the question's level 0 is 'low'",
                id="legend-disagrees",
            ),
            pytest.param({"probabilities": {"x": 1.0}}, "not a level index", id="not-an-index"),
        ],
    )
    def test_decoding_rejects(self, answer: dict[str, Any], fragment: str) -> None:
        """seed 003 'What decoding rejects'."""
        q = ScoreQuestion("?", ["low", "mid", "high"])
        body = {
            "model": "m",
            "answers": {"s": {"type": "score", "score": 1, "confidence": 1, **answer}},
        }
        with pytest.raises(DecisionError, match=fragment):
            parse_decision(body, {"s": q})


def test_raw_answers_decode_and_round_trip() -> None:
    body = {
        "model": "m",
        "answers": {"b": {"type": "box", "boxes": [[1, 2, 3, 4]]}},
        "usage": {"input_tokens": 1, "output_tokens": 2},
    }
    d = parse_decision(body, {"b": RawQuestion("box", "find")})
    assert d.raw("b") == RawAnswer("box", {"type": "box", "boxes": [[1, 2, 3, 4]]})
    assert d.to_wire() == body
    with pytest.raises(AnswerAccessError, match="is a box answer, not noul"):
        d.noul("b")
    assert threshold_band(d.raw("b")) == "uncertain"


def test_to_wire_keeps_derived_fields_out_and_calibrated_false() -> None:
    d = Decision("m", {"c": ChoiceAnswer("a", {"a": 0.5, "b": 0.5}, 0.5)}, calibrated=False)
    wire = d.to_wire()
    assert wire["calibrated"] is False and "near_uniform" not in wire["answers"]["c"]
    assert parse_decision(json.loads(json.dumps(wire))) == d


@settings(max_examples=300)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.floats()
        | st.integers()
        | st.text(max_size=5)
        | st.sampled_from(["noul", "choice", "score", "type", "answers", "model"]),
        lambda c: (
            st.lists(c, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "model",
                        "answers",
                        "usage",
                        "type",
                        "noul",
                        "choice",
                        "score",
                        "probabilities",
                        "legend",
                        "confidence",
                        "calibrated",
                        "0",
                        "1",
                        "k",
                    ]
                ),
                c,
                max_size=6,
            )
        ),
        max_leaves=25,
    )
)
def test_decode_never_raises_anything_but_classifier_error(value: Any) -> None:
    qs = {"k": ScoreQuestion("?", ["a", "b"]), "0": ChoiceQuestion("?", {"a": "x"})}
    for questions in (None, qs):
        with contextlib.suppress(ClassifierError):
            parse_decision(value, questions)


@pytest.mark.parametrize("text", ["", "{", "[1]", "null", '{"model": 1, "answers": {}}', "\xff"])
def test_from_json_errors_are_decision_errors(text: str) -> None:
    with pytest.raises(DecisionError):
        Decision.from_json(text)


QS = {
    "a_noul": NoulQuestion("?"),
    "b_choice": ChoiceQuestion("?", {"x": "means x", "y": "means y"}),
    "c_score": ScoreQuestion("?", ["lo", "mid", "hi"]),
}


def _good() -> dict[str, Any]:
    return {
        "a_noul": NoulAnswer(0.9),
        "b_choice": ChoiceAnswer("x", {"x": 0.9, "y": 0.1}, 0.8),
        "c_score": ScoreAnswer(1.0, {}, {"0": 0.1, "1": 0.8, "2": 0.1}, 0.7),
    }


def _with(**changes: Any) -> Decision:
    answers = _good()
    for k, v in changes.items():
        if v is None:
            answers.pop(k)
        else:
            answers[k] = v
    return Decision("m", answers)


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        pytest.param(
            _with(a_noul=None, c_score=None), 'missing answer "a_noul"', id="missing-first-ascii"
        ),
        pytest.param(
            _with(z_extra=NoulAnswer(0.5), a_extra=NoulAnswer(0.5)),
            'unexpected answer "a_extra"',
            id="unexpected-ascii",
        ),
        pytest.param(
            _with(a_noul=ChoiceAnswer("x", {}, 1)),
            '"a_noul" is a choice answer, expected noul',
            id="type",
        ),
        pytest.param(_with(a_noul=NoulAnswer(1.01)), '"a_noul" noul is 1.01', id="noul-range"),
        pytest.param(
            _with(b_choice=ChoiceAnswer("z", {"x": 1.0}, 1)), "chose 'z'", id="choice-offered"
        ),
        pytest.param(
            _with(b_choice=ChoiceAnswer("x", {"x": 0.9, "q": 0.1}, 1)),
            "option 'q'",
            id="prob-key-offered",
        ),
        pytest.param(
            _with(b_choice=ChoiceAnswer("x", {"x": 1.5, "y": -0.5}, 1)),
            "outside 0..1",
            id="prob-range",
        ),
        pytest.param(
            _with(b_choice=ChoiceAnswer("x", {"x": 0.5, "y": 0.45}, 1)), "sum to 0.95", id="sum"
        ),
        pytest.param(
            _with(b_choice=ChoiceAnswer("x", {"x": 1.0}, 1.2)),
            "confidence is 1.2",
            id="choice-confidence",
        ),
        pytest.param(
            _with(c_score=ScoreAnswer(2.5, {}, {"2": 1.0}, 1)), "outside 0..2", id="score-range"
        ),
        pytest.param(
            _with(c_score=ScoreAnswer(1, {}, {"3": 1.0}, 1)), "level '3'", id="score-level"
        ),
    ],
)
def test_validate_decision_order_first_failure_wins(decision: Decision, message: str) -> None:
    """seed 004 validate-decision: checks in order, first failure wins; the message starts
    'classifier: invalid decision: ' and names the key as "<key>"."""
    err = validate_decision(QS, decision)
    assert err is not None
    assert str(err).startswith("classifier: invalid decision: ")
    assert message in str(err)


def test_validate_decision_accepts_a_good_one_and_sum_tolerance() -> None:
    assert validate_decision(QS, _with()) is None
    ok = _with(b_choice=ChoiceAnswer("x", {"x": 0.5, "y": 0.52}, 1))  # 1.02: inside ± 0.02
    assert validate_decision(QS, ok) is None
    raw_qs = {"b": RawQuestion("box", "?")}
    assert validate_decision(raw_qs, Decision("m", {"b": RawAnswer("box", {})})) is None


@pytest.mark.parametrize(
    ("answer", "band"),
    [
        pytest.param(NoulAnswer(0.8), "yes", id="noul-0.8-inclusive-yes"),
        pytest.param(NoulAnswer(0.79), "uncertain", id="noul-0.79"),
        pytest.param(NoulAnswer(0.2), "no", id="noul-0.2-inclusive-no"),
        pytest.param(NoulAnswer(0.21), "uncertain", id="noul-0.21"),
        pytest.param(
            ChoiceAnswer("a", {"a": 0.5, "b": 0.5}, 0.6), "yes", id="choice-0.6-inclusive"
        ),
        pytest.param(ChoiceAnswer("a", {"a": 1.0}, 0.59), "uncertain", id="choice-0.59"),
        pytest.param(ScoreAnswer(1, {}, {"1": 1.0}, 0.6), "yes", id="score-0.6"),
        pytest.param(RawAnswer("box", {}), "uncertain", id="raw"),
    ],
)
def test_threshold_band_inclusive_default_cut_points(answer: Any, band: str) -> None:
    """seed 004 threshold-band: INCLUSIVE 0.8 / 0.2 / 0.6; no near-uniform demotion (a flat
    choice with confidence 0.6 is still 'yes')."""
    assert threshold_band(answer) == band


def test_threshold_band_merges_over_defaults() -> None:
    assert dict(DEFAULT_THRESHOLDS) == {"yes": 0.8, "no": 0.2, "min_confidence": 0.6}
    assert threshold_band(NoulAnswer(0.7), {"yes": 0.7}) == "yes"
    assert threshold_band(NoulAnswer(0.2), {"yes": 0.7}) == "no"
