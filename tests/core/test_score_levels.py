"""Issue 17 item 2, library side. Seed 003: "label is always a string and comes from the
question's levels ... description is the winning level exactly as it was written in the
question, structure and all." A structured level's ``label`` is the label wherever one is
shown, accepted or matched; Python dict text never is one."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import ScoreAnswer, ScoreQuestion, parse_decision

LEVELS: list[Any] = [
    {"label": "low", "description": "can wait"},
    "normal",
    {"label": "critical", "description": "blocked now"},
]
URGENCY = ScoreQuestion("How fast?", LEVELS)


def _body(legend: dict[str, Any], probs: dict[str, float]) -> dict[str, Any]:
    answer = {"type": "score", "score": 2.0, "legend": legend, "probabilities": probs}
    return {"model": "m", "answers": {"u": {**answer, "confidence": 0.9}}}


WIRE_LEGEND = {str(i): level for i, level in enumerate(LEVELS)}


def test_a_structured_level_gives_its_label_and_keeps_its_structure() -> None:
    d = parse_decision(_body(WIRE_LEGEND, {"0": 0.05, "1": 0.05, "2": 0.9}), {"u": URGENCY})
    a = d.score("u")
    assert a.label == "critical"
    assert a.description == {"label": "critical", "description": "blocked now"}
    assert a.levels == (("low", 0.05), ("normal", 0.05), ("critical", 0.9))
    assert a.ordered_legend() == ["low", "normal", "critical"]


@pytest.mark.parametrize(
    ("legend", "labels"),
    [
        pytest.param(WIRE_LEGEND, ["low", "normal", "critical"], id="structured"),
        pytest.param(
            {"0": {"description": "no label"}, "1": "normal", "2": {"label": 7}},
            ["0", "normal", "2"],
            id="no-string-label",
        ),
        pytest.param({"0": 5, "1": None, "2": ["x"]}, ["0", "1", "2"], id="not-a-level"),
    ],
)
def test_without_the_question_a_label_is_a_string_never_python_dict_text(
    legend: dict[str, Any], labels: list[str]
) -> None:
    """Decoded without its question (or built by hand), a legend entry that carries no string
    label is named by its level index, as a level the legend leaves out is."""
    d = parse_decision(_body(legend, {"0": 0.05, "1": 0.05, "2": 0.9}))
    a = d.score("u")
    assert a.ordered_legend() == labels
    assert a.label == labels[2] and a.description == legend["2"]
    by_hand = ScoreAnswer(2.0, legend, {"0": 0.05, "1": 0.05, "2": 0.9}, 0.9)
    assert by_hand.ordered_legend() == labels
