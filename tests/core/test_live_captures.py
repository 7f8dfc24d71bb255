"""The six live captures in tests/fixtures/recordings-live/ decode to typed decisions with the
expected answers, and to_wire() round-trips each response to an equal JSON value."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from paths import live_captures, load_json
from toolnexus import ChoiceAnswer, Decision, NoulAnswer, ScoreAnswer, near_uniform
from toolnexus.core.questions import normalize_questions

CAPTURES = [pytest.param(p, id=p.stem) for p in live_captures()]


def test_all_six_captures_are_present() -> None:
    assert len(CAPTURES) == 6


@pytest.mark.parametrize("path", CAPTURES)
def test_capture_integrity(path: Path) -> None:
    """The raw entity bodies match their recorded sha256: we test against what was captured."""
    cap = load_json(path)
    for side in ("request", "response"):
        raw = cap[f"{side}_raw"].encode("utf-8")
        assert hashlib.sha256(raw).hexdigest() == cap[f"{side}_sha256"]


@pytest.mark.parametrize("path", CAPTURES)
def test_capture_decodes_to_typed_answers(path: Path) -> None:
    cap = load_json(path)
    questions = normalize_questions(cap["request"]["questions"])
    decision = Decision.from_json(cap["response_raw"], questions)
    response: dict[str, Any] = cap["response"]
    assert decision.model == response["model"]
    assert decision.calibrated is True  # the direct wire has no calibrated field: absent = true
    assert decision.usage.input_tokens == response["usage"]["input_tokens"]
    assert decision.usage.cost is None  # not reported by the direct API: None, not zero
    for key, wire in response["answers"].items():
        if wire["type"] == "noul":
            assert decision.noul(key).noul == wire["noul"]
        elif wire["type"] == "choice":
            a = decision.choice(key)
            assert (a.choice, a.confidence) == (wire["choice"], wire["confidence"])
            assert a.probabilities == wire["probabilities"]
            assert a.near_uniform is near_uniform(wire["probabilities"])
        else:
            s = decision.score(key)
            assert (s.score, s.confidence) == (wire["score"], wire["confidence"])
            best = max(wire["probabilities"].items(), key=lambda kv: (kv[1], -int(kv[0])))
            assert s.level == int(best[0])
            assert s.label == questions[key].criteria[s.level]  # type: ignore[union-attr]


@pytest.mark.parametrize("path", CAPTURES)
def test_to_wire_round_trips_the_response(path: Path) -> None:
    """'to_wire() round-trips each response to an equal JSON value'; derived fields stay out."""
    cap = load_json(path)
    questions = normalize_questions(cap["request"]["questions"])
    decision = Decision.from_json(cap["response_raw"], questions)
    assert decision.to_wire() == cap["response"]


def test_mixed_batch_has_all_three_types_and_structured_instructions() -> None:
    cap = load_json(next(p for p in live_captures() if "mixed" in p.stem))
    questions = normalize_questions(cap["request"]["questions"])
    assert isinstance(questions["technical"].instructions, dict)
    d = Decision.from_json(cap["response_raw"], questions)
    kinds = {type(a) for a in d.answers.values()}
    assert kinds == {NoulAnswer, ChoiceAnswer, ScoreAnswer}
