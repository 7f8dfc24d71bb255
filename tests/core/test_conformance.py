"""Every fixture in tests/fixtures/conformance/ (copied from the shared folder), byte for byte
(SPEC 8B: "every port runs against these files; they are the contract, not per-port test data")."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import pytest

from paths import CONFORMANCE, conformance_files, load_json
from toolnexus import (
    NEAR_UNIFORM_TOLERANCE,
    ChoiceAnswer,
    Decision,
    NoulAnswer,
    ScoreAnswer,
    StaticMiss,
    canonical_json,
    canonical_request,
    create_classifier,
    near_uniform,
    parse_decision,
    static_classifier,
)
from toolnexus.core.questions import normalize_questions

#: Every fixture this suite knows how to run. A new fixture copied in fails
#: test_every_fixture_is_run until a test covers it: none is skipped silently.
KNOWN = {"base", "decisions", "degenerate", "hardened", "near-uniform", "numbers", "wide"}


def _fixtures_with_canonical() -> list[Any]:
    out = []
    for path in conformance_files():
        data = load_json(path)
        if "canonical" in data:
            out.append(pytest.param(data, id=path.stem))
        for i, entry in enumerate(data.get("entries", [])):
            out.append(pytest.param(entry, id=f"{path.stem}[{i}]"))
    return out


def test_every_fixture_is_run() -> None:
    """README: 'Every port runs against these files'."""
    present = {p.stem for p in conformance_files()}
    assert present, f"no fixtures found in {CONFORMANCE}"
    assert present == KNOWN, f"fixtures without a test: {sorted(present - KNOWN)}"


@pytest.mark.parametrize("fixture", _fixtures_with_canonical())
def test_canonical_bytes_sha256_and_length(fixture: dict[str, Any]) -> None:
    """'canonical: the exact bytes a port must emit for model + questions' — keys sorted
    recursively in ASCII order, arrays never reordered, compact, <>&'" and non-ASCII raw."""
    request = fixture["request"]
    questions = normalize_questions(request["questions"])
    got = canonical_request(request["model"], questions)
    want = fixture["canonical"].encode("utf-8")
    assert got == want
    assert hashlib.sha256(got).hexdigest() == fixture["canonicalSha256"]
    if "canonicalBytes" in fixture:
        assert len(got) == fixture["canonicalBytes"]
    # The same bytes from the generic encoder over the wire-form mapping: one encoder, no drift.
    assert canonical_json({"model": request["model"], "questions": request["questions"]}) == want


def _decode(name: str) -> tuple[dict[str, Any], Decision]:
    data = load_json(CONFORMANCE / f"{name}.json")
    qs = normalize_questions(data["request"]["questions"])
    return data, parse_decision(data["response"], qs)


@pytest.mark.parametrize("name", ["base", "near-uniform", "wide", "numbers"])
def test_decode_expectations(name: str) -> None:
    """'expect: what a port must derive from the response'."""
    data, decision = _decode(name)
    expect = data["expect"]
    if "calibrated" in expect:
        assert decision.calibrated is expect["calibrated"]
    for key, want in expect.get("answers", {}).items():
        answer = decision.answers[key]
        if "noul" in want:
            assert isinstance(answer, NoulAnswer) and answer.noul == want["noul"]
        if "choice" in want:
            assert isinstance(answer, ChoiceAnswer) and answer.choice == want["choice"]
        if "score" in want:
            assert isinstance(answer, ScoreAnswer) and answer.score == want["score"]
        if "confidence" in want:
            assert isinstance(answer, ChoiceAnswer | ScoreAnswer)
            assert answer.confidence == want["confidence"]
        if "nearUniform" in want:
            assert isinstance(answer, ChoiceAnswer)
            assert answer.near_uniform is want["nearUniform"]
        if "probabilityCount" in want:
            assert isinstance(answer, ChoiceAnswer)
            assert len(answer.probabilities) == want["probabilityCount"]
        if "maxDeviation" in want:
            assert isinstance(answer, ChoiceAnswer)
            n = len(answer.probabilities)
            dev = max(abs(p - 1 / n) for p in answer.probabilities.values())
            assert dev == pytest.approx(want["maxDeviation"], abs=1e-9)


def test_near_uniform_boundaries_0_0499_and_0_0501() -> None:
    """'nearUniform at 0.0499 (true) and 0.0501 (false), tolerance 0.05 inclusive'."""
    data, decision = _decode("near-uniform")
    assert data["expect"]["tolerance"] == NEAR_UNIFORM_TOLERANCE == 0.05
    assert decision.choice("boundary_inside").near_uniform is True
    assert decision.choice("boundary_outside").near_uniform is False
    # Derived on decode, never read from the wire: the fixture's response carries no such field.
    assert all(
        "nearUniform" not in a and "near_uniform" not in a
        for a in data["response"]["answers"].values()
    )
    for key, answer in data["response"]["answers"].items():
        assert near_uniform(answer["probabilities"]) is decision.choice(key).near_uniform


def _resolve(decision: Decision, path: str) -> Any:
    head, *rest = path.split(".")
    obj: Any = decision.answers if head == "answers" else decision.usage
    for part in rest:
        if isinstance(obj, dict):
            obj = obj[part]
        elif hasattr(obj, "probabilities") and part == "probabilities":
            obj = obj.probabilities
        else:
            obj = getattr(obj, part)
    return obj


def test_numbers_parse_numerically() -> None:
    """numbers.json: 'Compare numerically, never as strings: 0 vs 0.0 and 1.6716e-5 vs
    0.000016716 are the same value and different bytes.'"""
    data, decision = _decode("numbers")
    for path, want in data["expect"]["parse"].items():
        got = _resolve(decision, path)
        assert isinstance(got, float), f"{path} decoded as {type(got).__name__}"
        assert got == want, path
    # The state is transmitted verbatim as the host supplied it: numerically unchanged.
    state = data["request"]["state"]
    assert json.loads(canonical_json(state)) == data["expect"]["stateRoundTrip"]


def test_integers_on_the_wire_decode_as_floats() -> None:
    """Gateways write 0/1 where the direct API writes 0.0/1.0 (base.json's technical: 0)."""
    _, decision = _decode("base")
    probs = decision.choice("department").probabilities
    assert probs["technical"] == 0.0 and isinstance(probs["technical"], float)


def test_hardened_state_is_outside_the_claim() -> None:
    """hardened.json: -0.0 and 1e+21 in the state 'are passed through and not asserted on'."""
    data = load_json(CONFORMANCE / "hardened.json")
    state = data["request"]["state"]
    assert json.loads(canonical_json(state)) == state


def test_degenerate_warnings_once_per_key_request_unchanged() -> None:
    """degenerate.json: exactly three warnings, naming keys_as_criteria, all_identical and
    all_empty, none naming described; once per key however many calls; bytes unchanged."""
    data = load_json(CONFORMANCE / "degenerate.json")
    request, expect = data["request"], data["expect"]
    events: list[dict[str, Any]] = []
    seen_bytes: list[bytes] = []

    def evaluate(state: Any, questions: dict[str, Any]) -> Decision:
        seen_bytes.append(canonical_request(request["model"], questions))
        return Decision(model="stub", answers={})

    judge = create_classifier(
        style="custom", model=request["model"], evaluate=evaluate, on_metric=events.append
    )
    for _ in range(3):
        asyncio.run(judge.evaluate(request["state"], request["questions"]))
    warnings = [e for e in events if e["event"] == "classifier.warning"]
    assert sorted(w["question"] for w in warnings) == expect["warnings"]
    assert not {w["question"] for w in warnings} & set(expect["noWarning"])
    assert all("error" not in w and w["warning"] for w in warnings)
    assert expect["requestUnchanged"] is True
    assert seen_bytes == [data["canonical"].encode("utf-8")] * 3


#: decisions.json bands, read with the ToolGuard cut-points of SPEC 8B: risk < 1.5 allows,
#: < 2.5 asks, else denies.
def _band(risk: float) -> str:
    return "allow" if risk < 1.5 else "ask" if risk < 2.5 else "deny"


def test_static_corpus_of_decisions_json() -> None:
    """decisions.json: 'a static backend keyed on the canonical request alone cannot tell them
    apart, and MUST key on the state too'."""
    data = load_json(CONFORMANCE / "decisions.json")
    entries = data["entries"]
    judge = static_classifier(
        [
            {
                "state": e["request"]["state"],
                "questions": e["request"]["questions"],
                "response": e["response"],
            }
            for e in entries
        ],
        model="typesafe/jev-1.13",
    )
    assert len({e["canonicalSha256"] for e in entries}) == 1
    for entry in entries:
        d = asyncio.run(judge.evaluate(entry["request"]["state"], entry["request"]["questions"]))
        assert d.to_wire() == entry["response"]
        assert d.calibrated is data["calibrated"]
        assert _band(d.score("risk").score) == entry["band"]
    other = {**entries[0]["request"]["state"], "command": "ls"}
    with pytest.raises(StaticMiss, match="no recorded decision"):
        asyncio.run(judge.evaluate(other, entries[0]["request"]["questions"]))


def test_conformance_folder_is_the_copy_in_the_repository() -> None:
    """Issue 8: 'Tests read the copies.'"""
    assert CONFORMANCE.parent.name == "fixtures" and CONFORMANCE.name == "conformance"
