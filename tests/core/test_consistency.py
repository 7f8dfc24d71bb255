"""Issue 33 item 1: "each answer says whether its numbers agree with each other, as named entries
in the existing flags list" — derived on decode, never repaired; a reply without usage is
flagged and charged at its estimate, never 0."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from paths import TESTS
from toolnexus.core.answers import ClassifierUsage
from toolnexus.core.consistency import consistency_flags, score_confidence_fits, score_mean_bound
from toolnexus.core.decision import parse_decision
from toolnexus.core.questions import normalize_questions
from toolnexus.core.validation import FLAGS, validate_decision
from toolnexus.records.decision import decision_record
from toolnexus.scheduler import Outcome, Ticket, TokenEstimate
from toolnexus.scheduler.budget import Budget, Caps

LIVE = TESTS / "fixtures" / "recordings-live"

QUESTIONS = normalize_questions(
    {
        "dept": {
            "type": "choice",
            "instructions": "Which department?",
            "criteria": {"Técnico": "tech", "Billing": "money", "Account": "login"},
        },
        "tone": {"type": "score", "instructions": "How angry?", "criteria": ["level 0", "level 1"]},
    }
)


def _choice(choice: str, probs: dict[str, float], confidence: float) -> dict[str, Any]:
    return {"type": "choice", "choice": choice, "probabilities": probs, "confidence": confidence}


def _score(score: float, probs: list[float], confidence: float = 0.5) -> dict[str, Any]:
    return {
        "type": "score",
        "score": score,
        "legend": {str(i): f"level {i}" for i in range(len(probs))},
        "probabilities": {str(i): p for i, p in enumerate(probs)},
        "confidence": confidence,
    }


def _flags(answer: dict[str, Any], calibrated: bool = True) -> tuple[str, ...]:
    body = {
        "model": "m",
        "answers": {"k": answer},
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    return consistency_flags(parse_decision(body).answers["k"], calibrated=calibrated)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param(
            _choice("Técnico", {"Técnico": 0.2, "Billing": 0.64, "Account": 0.16}, 0.46),
            ("choice-not-top",),
            id="issue-example-choice-not-the-most-probable",
        ),
        pytest.param(
            _choice("Técnico", {"Técnico": 0.45, "Billing": 0.45, "Account": 0.1}, 0.18),
            (),
            id="a-tie-for-the-top-is-allowed",
        ),
        pytest.param(
            _choice("Billing", {"Técnico": 0.2, "Billing": 0.64, "Account": 0.16}, 0.314),
            ("confidence-off-formula",),
            id="issue-example-confidence-0.314-where-the-formula-gives-0.46",
        ),
        pytest.param(
            _choice("Billing", {"Técnico": 0.2, "Billing": 0.64, "Account": 0.16}, 0.45),
            (),
            id="confidence-within-rounding-of-the-formula",
        ),
        pytest.param(
            _choice("a", {"a": 0.3, "b": 0.7}, 0.9),
            ("choice-not-top", "confidence-off-formula"),
            id="both-choice-flags-in-flags-order",
        ),
        pytest.param(_choice("only", {"only": 1.0}, 0.2), (), id="one-option-has-no-formula"),
        pytest.param(
            _score(0.0, [0.444, 0.556]), ("score-not-mean",), id="issue-example-score-0-mean-0.556"
        ),
        pytest.param(_score(0.49, [0.52, 0.48]), (), id="the-wire-doc-example-0.49-vs-0.48"),
        pytest.param(_score(0.5, [0.52, 0.48]), ("score-not-mean",), id="two-levels-bound-0.01"),
        pytest.param(
            _score(4.65, [0.0] * 4 + [0.55, 0.45] + [0.0] * 4),
            (),
            id="ten-levels-bound-0.23-covers-4.65-vs-4.45",
        ),
        pytest.param(
            _score(4.2, [0.0] * 4 + [0.55, 0.45] + [0.0] * 4),
            ("score-not-mean",),
            id="ten-levels-off-by-0.25",
        ),
        pytest.param({"type": "noul", "noul": 0.3}, (), id="noul-has-nothing-to-compare"),
    ],
)
def test_consistency_flags_are_derived_from_the_answers_own_numbers(
    answer: dict[str, Any], expected: tuple[str, ...]
) -> None:
    assert _flags(answer) == expected


def test_the_score_bound_grows_with_the_number_of_levels() -> None:
    """Item 1: "the bound grows with the number of levels: state it" — 0.005·(1 + n(n−1)/2)."""
    assert [round(score_mean_bound(n), 4) for n in (2, 3, 5, 10)] == [0.01, 0.02, 0.055, 0.23]


def test_a_self_reported_confidence_is_not_held_to_the_api_formula() -> None:
    """Item 1: "decide and document whether llm-style answers get the confidence check": an
    uncalibrated (self-reported) reply states its own confidence; argmax is still checked."""
    off = _choice("a", {"a": 0.3, "b": 0.7}, 0.9)
    assert _flags(off, calibrated=False) == ("choice-not-top",)


@pytest.mark.parametrize("path", sorted(LIVE.glob("*.json")), ids=lambda p: p.stem)
def test_no_live_capture_earns_a_consistency_flag(path: Path) -> None:
    """The live API's own answers are consistent: the bounds never flag what it sends."""
    found: list[tuple[str, ...]] = []

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            if isinstance(obj.get("answers"), dict) and "model" in obj:
                d = parse_decision(obj)
                found.extend(consistency_flags(a) for a in d.answers.values())
            for v in obj.values():
                walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)

    walk(json.loads(path.read_text(encoding="utf-8")))
    assert found and not any(found)


def test_an_inconsistent_answer_is_flagged_in_its_record_never_repaired_and_stays_valid() -> None:
    """Item 1: "derived on decode, never repaired"; seed 004's validate_decision keeps exactly
    the checks it lists (an inconsistent answer is not invalid)."""
    body = {
        "model": "m",
        "answers": {
            "dept": _choice("Técnico", {"Técnico": 0.2, "Billing": 0.64, "Account": 0.16}, 0.46),
            "tone": _score(0.0, [0.444, 0.556]),
        },
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }
    decision = parse_decision(body, QUESTIONS)
    assert validate_decision(QUESTIONS, decision) is None
    record = decision_record(decision, QUESTIONS)
    assert record["answers"]["dept"]["choice"] == "Técnico"
    assert record["answers"]["tone"]["score"] == 0.0
    assert "choice-not-top" in record["answers"]["dept"]["flags"]
    assert "score-not-mean" in record["answers"]["tone"]["flags"]
    assert {"choice-not-top", "score-not-mean"} <= set(record["flags"])
    assert record["flags"] == [f for f in FLAGS if f in record["flags"]]


@pytest.mark.parametrize(
    "usage",
    [
        pytest.param(None, id="no-usage"),
        pytest.param({"input_tokens": None, "output_tokens": None}, id="null-counts"),
        pytest.param({"input_tokens": 5}, id="one-count-missing"),
    ],
)
def test_a_reply_without_token_counts_is_flagged_usage_missing(usage: Any) -> None:
    body: dict[str, Any] = {"model": "m", "answers": {"tone": _score(1.0, [0.0, 1.0], 1.0)}}
    if usage is not None:
        body["usage"] = usage
    decision = parse_decision(body, QUESTIONS)
    assert decision.usage.reported is False
    record = decision_record(decision, {"tone": QUESTIONS["tone"]})
    assert "usage-missing" in record["flags"]
    assert "usage-missing" in record["answers"]["tone"]["flags"]
    # The wire fields stay as they were: no field is added to the record's usage.
    assert set(record["usage"]) == {"input_tokens", "output_tokens", "cost"}


def test_a_reply_with_its_counts_is_not_flagged() -> None:
    body = {
        "model": "m",
        "answers": {"tone": _score(1.0, [0.0, 1.0], 1.0)},
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    assert (
        "usage-missing" not in decision_record(parse_decision(body, QUESTIONS), QUESTIONS)["flags"]
    )


@pytest.mark.parametrize(
    ("usage", "charged"),
    [
        # What admission reserved for it: the upper estimate and the output margin (issue 32
        # item 4: caps hold for any text), never 0 and never less than the central estimate.
        pytest.param(ClassifierUsage(reported=False), None, id="unreported-at-its-reservation"),
        pytest.param(ClassifierUsage(0, 0), 0, id="reported-zero-is-zero"),
        pytest.param(ClassifierUsage(700, 30), 730, id="reported-counts-as-reported"),
    ],
)
def test_the_budget_charges_a_reply_without_usage_at_its_estimate(
    usage: ClassifierUsage, charged: int | None
) -> None:
    """Item 1: "budgets charge it at its estimate, never 0"."""
    budget = Budget(Caps(max_tokens=10_000), output_tokens=40)
    if charged is None:
        charged = budget.estimate(2000).tokens
        assert charged >= 1000 + 40
    ticket = Ticket(1, TokenEstimate(central=1000, upper=2000))

    async def go() -> None:
        await budget.acquire(ticket)
        await budget.release(ticket, usage, Outcome.success())

    asyncio.run(go())
    assert budget.spent.tokens == charged
    assert budget.spent.requests == 1


# --- item 2: which known formula a backend's score confidences fit --------------------------


def test_the_live_score_confidences_fit_the_choice_formula_on_levels() -> None:
    """Issue 33 item 2: "for score, where no formula is published, report says which of the
    known formulas a backend's answers fit" — the live captures fit the choice formula."""
    fits = []
    for path in sorted(LIVE.glob("*.json")):
        text = path.read_text(encoding="utf-8")
        for answer in _answers_of(json.loads(text)):
            if answer.get("type") == "score":
                probs = answer["probabilities"]
                ordered = [probs[k] for k in sorted(probs, key=int)]
                fits.append(score_confidence_fits(ordered, answer["confidence"]))
    assert fits and all(choice for _, choice, _ in fits)
    assert not all(top for top, _, _ in fits)


def _answers_of(obj: Any) -> list[dict[str, Any]]:
    if isinstance(obj, dict):
        own = list(obj["answers"].values()) if isinstance(obj.get("answers"), dict) else []
        return own + [a for v in obj.values() for a in _answers_of(v)]
    if isinstance(obj, list):
        return [a for v in obj for a in _answers_of(v)]
    return []


@pytest.mark.parametrize(
    ("probs", "confidence", "fits"),
    [
        pytest.param([0.1, 0.8, 0.1], 0.8, (True, False, False), id="top"),
        pytest.param([0.1, 0.8, 0.1], 0.7, (False, True, True), id="choice-and-distance-agree"),
        pytest.param([0.6, 0.0, 0.4], 0.0, (False, False, True), id="distance-only"),
        pytest.param([0.5, 0.0, 0.5], 0.25, (False, True, False), id="choice-only"),
        pytest.param([0.5, 0.0, 0.5], 0.5, (True, False, False), id="top-only"),
        pytest.param([0.5, 0.0, 0.5], 0.9, (False, False, False), id="none"),
    ],
)
def test_score_confidence_fits_each_known_formula(
    probs: list[float], confidence: float, fits: tuple[bool, bool, bool]
) -> None:
    assert score_confidence_fits(probs, confidence) == fits


def test_the_report_counts_fits_alike_row_by_row_and_column_wise() -> None:
    """The Parquet path (vectorized) counts what the row path counts, answer by answer."""
    import random

    from toolnexus.report.levels import ScoreStats
    from toolnexus.report.vectorized import _score_fits

    rng = random.Random(33)
    names = tuple(str(i) for i in range(4))
    rows: list[tuple[dict[str, float], float | None]] = []
    for _ in range(300):
        cents = [rng.randint(0, 100) for _ in names]
        total = sum(cents) or 1
        probs = {k: round(c / total, 2) for k, c in zip(names, cents, strict=True)}
        conf = rng.choice([None, round(rng.random(), 2), round(max(probs.values()), 2)])
        rows.append((probs, conf))
    by_row = ScoreStats("q")
    for probs, conf in rows:
        if conf is not None:
            by_row.fit(score_confidence_fits([probs[k] for k in names], conf))
    by_column = ScoreStats("q")
    values = [p for probs, _ in rows for p in probs.values()]
    _score_fits(by_column, names, values, [c for _, c in rows])
    assert (by_column.fitted, by_column.fits) == (by_row.fitted, by_row.fits)
    assert by_row.fitted and 0 < sum(by_row.fits) < 3 * by_row.fitted


def test_the_fail_on_help_names_every_flag() -> None:
    """`--fail-on` accepts every name of ``validation.FLAGS``; its help says so (the help is
    written out because the CLI must not import the core at start)."""
    from toolnexus.cli.options import FailOnOpt

    help_text = FailOnOpt.__metadata__[0].help
    assert [f for f in FLAGS if f in help_text] == list(FLAGS)


def test_a_telemetry_span_carries_the_consistency_flags_too() -> None:
    """The span's ``toolnexus.flags`` are ``validation.FLAGS`` names a decision earns by
    itself: the consistency flags and ``usage-missing`` among them."""
    from toolnexus.evaluate.pipeline import _flags

    body = {
        "model": "m",
        "answers": {
            "dept": _choice("Técnico", {"Técnico": 0.2, "Billing": 0.64, "Account": 0.16}, 0.46)
        },
    }
    decision = parse_decision(body, QUESTIONS)
    assert _flags(decision) == ["choice-not-top", "usage-missing"]


def test_a_resumed_budget_charges_recorded_replies_without_usage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Item 1 on --resume: "budgets charge it at its estimate, never 0". Records flagged
    ``usage-missing`` read 0 tokens; a resumed run counts each at the run's request estimate
    (or the mean of the reported ones, whichever is larger), never as 0."""
    from types import SimpleNamespace

    from toolnexus.run import budget as batch_budget
    from toolnexus.run import safety
    from toolnexus.run.resume import PriorOutput

    prior = PriorOutput(spent_requests=4, spent_input_tokens=900, spent_output_tokens=100)
    prior.spent_unreported = 2  # two of the four reported nothing: 1000 tokens over 2 replies
    monkeypatch.setattr(safety, "prior_of", lambda cfg, sha: prior)
    cfg = SimpleNamespace(run=None)
    spent = batch_budget.recorded_spend(cfg, "sha", None, per_unreported=300)  # type: ignore[arg-type]
    assert spent.tokens == 1000 + 2 * 500  # the mean (500) beats the estimate (300)
    spent = batch_budget.recorded_spend(cfg, "sha", None, per_unreported=800)  # type: ignore[arg-type]
    assert spent.tokens == 1000 + 2 * 800
    prior.spent_unreported = 0
    assert batch_budget.recorded_spend(cfg, "sha", None, 800).tokens == 1000  # type: ignore[arg-type]
