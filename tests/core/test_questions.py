"""Question types, limits, choice_over, degenerate criteria, chunking (seeds 001 and 004)."""

from __future__ import annotations

import enum
from typing import Any

import pytest

from toolnexus import (
    MAX_CHOICE_OPTIONS,
    MAX_SCORE_LEVELS,
    MIN_SCORE_LEVELS,
    ChoiceQuestion,
    NoulCriteria,
    NoulQuestion,
    QuestionError,
    RawQuestion,
    ScoreQuestion,
    canonical_request,
    choice_over,
    chunk_questions,
    degenerate_criteria,
)
from toolnexus.core.questions import check_limits, normalize_questions, question_from_wire


def test_limit_constants() -> None:
    assert (MAX_CHOICE_OPTIONS, MIN_SCORE_LEVELS, MAX_SCORE_LEVELS) == (255, 2, 10)


@pytest.mark.parametrize(
    ("questions", "key", "fragment"),
    [
        pytest.param(
            {"route": ChoiceQuestion("?", {f"o{i}": "m" for i in range(256)})},
            "route",
            "255",
            id="choice-256",
        ),
        pytest.param({"route": ChoiceQuestion("?", {})}, "route", "1..255", id="choice-0"),
        pytest.param({"urgency": ScoreQuestion("?", ["only"])}, "urgency", "2..10", id="score-1"),
        pytest.param(
            {"urgency": ScoreQuestion("?", [str(i) for i in range(11)])},
            "urgency",
            "2..10",
            id="score-11",
        ),
    ],
)
def test_limits_name_the_key_and_the_limit(questions: Any, key: str, fragment: str) -> None:
    """seed 001: 'The error is a ClassifierError that names the offending question key and
    the limit, and no request is sent.'"""
    with pytest.raises(QuestionError) as info:
        check_limits(questions)
    assert f"'{key}'" in str(info.value) and fragment in str(info.value)
    assert info.value.key == key


@pytest.mark.parametrize("n", [1, 255])
def test_choice_limit_edges_pass(n: int) -> None:
    check_limits({"c": ChoiceQuestion("?", {f"o{i}": f"means {i}" for i in range(n)})})


@pytest.mark.parametrize("n", [2, 10])
def test_score_limit_edges_pass(n: int) -> None:
    check_limits({"s": ScoreQuestion("?", [f"l{i}" for i in range(n)])})


def test_keys_walked_in_sorted_order() -> None:
    """seed 001: 'Keys are walked in sorted order, so the same malformed set always names the
    same key first.'"""
    bad = {"zeta": ScoreQuestion("?", ["x"]), "alpha": ScoreQuestion("?", ["y"])}
    with pytest.raises(QuestionError, match="'alpha'"):
        check_limits(bad)


def test_no_questions_and_empty_key_are_errors() -> None:
    with pytest.raises(QuestionError, match="no questions"):
        check_limits({})
    with pytest.raises(QuestionError, match="cannot be empty"):
        check_limits({"": NoulQuestion("?")})


def test_raw_question_has_no_client_side_limits_and_needs_a_type() -> None:
    """seed 004 raw-question: 'sent AS WRITTEN ... with no client-side limits ... type must be
    non-empty.'"""
    check_limits({"b": RawQuestion("box", "find the cat", {"k": list(range(500))})})
    assert canonical_request("m", {"b": RawQuestion("box", "find")}) == (
        b'{"model":"m","questions":{"b":{"instructions":"find","type":"box"}}}'
    )
    with pytest.raises(QuestionError, match="non-empty type"):
        RawQuestion("", "x")


class Desk(enum.Enum):
    BILLING = "billing"
    TECH = "technical"


class Level(enum.IntEnum):
    LOW = 1


def test_choice_over_keys_reach_the_wire_as_plain_names() -> None:
    """SPEC 8B: 'a key that is not already a string SHALL be coerced to its plain name'."""
    q = choice_over("which?", [(Desk.BILLING, "money"), (Desk.TECH, "product"), (7, "seven")])
    assert list(q.criteria) == ["billing", "technical", "7"]
    assert choice_over("n", {Level.LOW: "x"}).criteria == {"1": "x"}
    assert canonical_request(
        "m", {"r": choice_over("which?", {"b": "means b", "a": "means a"})}
    ) == (canonical_request("m", {"r": ChoiceQuestion("which?", {"a": "means a", "b": "means b"})}))


@pytest.mark.parametrize(
    ("criteria", "reason"),
    [
        pytest.param({"a": "", "b": None}, "empty", id="rule1-all-empty"),
        pytest.param({"east": "east", "west": "west"}, "own option id", id="rule2-keys"),
        pytest.param({"a": "a legal move", "b": "a legal move"}, "identical", id="rule3-identical"),
        pytest.param({"a": "a"}, None, id="n1-never-reported-even-when-rule2-holds"),
        pytest.param({"a": ""}, None, id="n1-never-reported-even-when-rule1-holds"),
        pytest.param({}, None, id="n0"),
        pytest.param({"a": "means a", "b": "means b"}, None, id="described"),
        pytest.param({"a": "", "b": "means b"}, None, id="one-empty-not-all"),
    ],
)
def test_degenerate_criteria_three_rules_n_lt_2_gate_first(
    criteria: dict[str, Any], reason: str | None
) -> None:
    """seed 004: 'Degenerate <=> ANY of: every value is empty, every value equals its own key,
    every value is identical (n >= 2) ... the n < 2 gate comes first for all three.'"""
    got = degenerate_criteria(criteria)
    if reason is None:
        assert got is None
    else:
        assert got is not None and reason in got


def test_chunk_questions_consecutive_ascii_order() -> None:
    qs = {k: NoulQuestion(k) for k in ["b", "a", "C", "d", "e"]}
    chunks = chunk_questions(qs, 2)
    assert [list(c) for c in chunks] == [["C", "a"], ["b", "d"], ["e"]]
    for bad in (0, -1):
        with pytest.raises(QuestionError, match="at least 1"):
            chunk_questions(qs, bad)


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        pytest.param({"type": "noul", "instructions": "x"}, NoulQuestion("x"), id="noul-absent"),
        pytest.param(
            {"type": "noul", "instructions": "x", "criteria": {}},
            NoulQuestion("x", NoulCriteria()),
            id="noul-empty",
        ),
        pytest.param(
            {"type": "choice", "instructions": "x", "criteria": {"a": "b"}},
            ChoiceQuestion("x", {"a": "b"}),
            id="choice",
        ),
        pytest.param(
            {"type": "score", "instructions": "x", "criteria": ["a", {"label": "b"}]},
            ScoreQuestion("x", ["a", {"label": "b"}]),
            id="score-structured",
        ),
        pytest.param({"type": "box", "instructions": "x"}, RawQuestion("box", "x"), id="raw"),
    ],
)
def test_question_from_wire(wire: dict[str, Any], expected: Any) -> None:
    assert question_from_wire(wire) == expected


@pytest.mark.parametrize(
    ("wire", "fragment"),
    [
        pytest.param([], "must be an object", id="not-object"),
        pytest.param({"instructions": "x"}, "type", id="no-type"),
        pytest.param(
            {"type": "choice", "instructions": "x", "criteria": ["a"]},
            "choice criteria",
            id="choice-list",
        ),
        pytest.param(
            {"type": "score", "instructions": "x", "criteria": {"a": 1}},
            "ordered list",
            id="score-object",
        ),
        pytest.param(
            {"type": "score", "instructions": "x", "criteria": [1, 2]},
            "level 0",
            id="score-level-number",
        ),
        pytest.param(
            {"type": "noul", "instructions": "x", "criteria": {"maybe": ""}},
            "noul criteria",
            id="noul-bad-key",
        ),
    ],
)
def test_question_from_wire_rejects_shapes(wire: Any, fragment: str) -> None:
    with pytest.raises(QuestionError, match=fragment):
        normalize_questions({"k": wire})
