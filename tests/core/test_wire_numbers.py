"""Issue 17 item 3: "A score answer whose probability or legend key is a number of thousands of
digits gives a Python ValueError traceback from int() (decision.py _level_index). Audit every
place wire or file data reaches int()/float()." Each gives the library's error, naming where."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolnexus import ConfigError, Decision, DecisionError, ScoreQuestion, parse_decision

RISK = ScoreQuestion("How destructive?", ["harmless", "reversible", "destructive"])
HUGE_KEY = "1" * 5000  # past CPython's 4300-digit int() limit


def _score(**changes: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "type": "score",
        "score": 0.5,
        "legend": {"0": "harmless", "1": "reversible", "2": "destructive"},
        "probabilities": {"0": 0.2, "1": 0.6, "2": 0.2},
        "confidence": 0.6,
    }
    answer.update(changes)
    return {"model": "m", "answers": {"risk": answer}}


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        pytest.param(
            _score(probabilities={HUGE_KEY: 1.0}), "probability key '1111", id="probability-key"
        ),
        pytest.param(_score(legend={HUGE_KEY: "harmless"}), "legend key '1111", id="legend-key"),
        pytest.param(
            _score(probabilities={"0" + HUGE_KEY: 1.0}), "probability key '0111", id="leading-0"
        ),
    ],
)
@pytest.mark.parametrize("with_question", [True, False], ids=["checked", "unchecked"])
def test_a_level_key_of_thousands_of_digits_is_a_decision_error(
    body: dict[str, Any], expect: str, with_question: bool
) -> None:
    questions = {"risk": RISK} if with_question else None
    for decode in (lambda: parse_decision(body, questions),
                   lambda: Decision.from_json(json.dumps(body), questions)):  # fmt: skip
        with pytest.raises(DecisionError) as e:
            decode()
        message = str(e.value)
        assert message.startswith('classifier: answer "risk": ') and expect in message
        assert "not a level index" in message and len(message) < 300, message


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        pytest.param(_score(score=10**400), "score is out of range", id="score"),
        pytest.param(_score(confidence=-(10**400)), "confidence is out of range", id="confidence"),
        pytest.param(
            _score(probabilities={"0": 10**400}), "probability '0' is out of range", id="prob"
        ),
    ],
)
def test_a_python_int_too_large_for_a_float_is_a_decision_error(
    body: dict[str, Any], expect: str
) -> None:
    """A host's own dict (a custom style, recorded answers) is not bounded by the JSON reader:
    float(10**400) raises OverflowError."""
    with pytest.raises(DecisionError) as e:
        parse_decision(body, {"risk": RISK})
    assert str(e.value).startswith('classifier: answer "risk": ') and expect in str(e.value)


def test_usage_tokens_too_large_are_a_decision_error() -> None:
    body = _score()
    body["usage"] = {"input_tokens": 10**5000}
    with pytest.raises(DecisionError) as e:
        parse_decision(body, {"risk": RISK})
    assert "usage.input_tokens" in str(e.value)


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        pytest.param('{"n": ' + "9" * 5000 + "}", "a number of 5000 characters", id="long-int"),
        pytest.param("[" * 100_000 + "]" * 100_000, "nested more than", id="deep"),
    ],
)
def test_a_recording_file_with_a_hostile_number_names_its_path(
    tmp_path: Path, text: str, expect: str
) -> None:
    from toolnexus.styles.recordings import read_recording

    path = tmp_path / "r.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        read_recording(path)
    assert str(e.value).startswith(f"classifier: recording {path}: ") and expect in str(e.value)
