"""Floor sweeps of a gate against outcome labels (issue 35 item 3): ``report RUN --labels L
--gates QUESTIONS.yaml [--floors ...]``.

A floor ``f`` sets the policy's cut-points and keeps its rules: with seed 004's inclusive
``thresholds``, ``yes = f`` and ``no = 1 - f``; with §8B's exclusive ``bands`` (a policy's
default), ``high = f`` and ``low = 1 - f``; ``min_confidence`` (choice, score) is ``f`` too. The
cut-points are built from integer hundredths (``no = (100 - F) / 100``), so a two-decimal
answer at exactly ``1 - f`` compares equal, as it does in hundredths: ``1 - 0.9`` is
``0.09999999999999998`` in floating point and would miss ``p = 0.1``.

Per floor and per outcome (the labels column named after the gate, in the user's words): the
records the policy let through (its default action), those it held (any other action or an
escalation) and, per rule question, how many it caught by direction (its rule fires), by
confidence (its answer is uncertain, missing or invalid: the gate escalates) and alone (no other
question caught it). Each question is judged on its own rules, whatever their order: the
caught-alone column is about questions, not about the first-match order.

Beside them, the published partition (issue 42 item 8; ``tests/fixtures/reference/ecosystem.md``,
"Decisions from answers"), under names that say so: a question catches a record
``published_direction`` when its answer is on the unfavourable side (a rule of its own fires on
the two-decimal value: p >= 0.5 for ``at_least: 0.5``), whatever the confidence, and
``published_confidence`` when it is on the favourable side with a confidence (noul: max(p, 1 -
p); choice, score: ``confidence``) below the floor, in hundredths, or when it has no answer that
its rules can read (missing, invalid, a misfit); ``published_alone`` when no other question
caught it either way. Today's ``direction`` counts only a rule that fired on a sure answer, so
an unfavourable answer between 0.5 and the floor is counted there under ``confidence``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from ..core import (
    Answer,
    Bands,
    ClassifierError,
    Policy,
    Question,
    Rule,
    decide,
    parse_decision,
    registry,
)
from .inputs import ReportInputError
from .labels import Labels
from .runs import iter_records
from .selective import RiskPoint

__all__ = [
    "DEFAULT_FLOORS",
    "FloorRow",
    "GateSweep",
    "QuestionCatch",
    "at_floor",
    "decided_answers",
    "gate_aurc",
    "parse_floors",
    "sweep",
]

#: 0.50 to 0.95 by 0.05, in hundredths.
DEFAULT_FLOORS = tuple(range(50, 100, 5))


@dataclass(frozen=True)
class QuestionCatch:
    """One rule question at one floor, over one outcome's records."""

    direction: int
    confidence: int
    alone: int
    #: the published partition (ecosystem.md, "Decisions from answers"; issue 42 item 8):
    #: on the unfavourable side whatever the confidence / on the favourable side below the
    #: floor (or unreadable) / either, and no other question
    published_direction: int = 0
    published_confidence: int = 0
    published_alone: int = 0


@dataclass(frozen=True)
class FloorRow:
    """One floor and one outcome: ``n`` records, ``let_through`` (the default action),
    ``held`` (anything else), and per rule question what it caught."""

    floor: float
    outcome: str
    n: int
    let_through: int
    held: int
    #: of the held: those the gate escalated (declined to decide)
    escalated: int
    #: records whose action is their outcome label (with labels)
    agreed: int
    questions: Mapping[str, QuestionCatch]


@dataclass(frozen=True)
class GateSweep:
    """A gate swept over floors: its default action, one row per floor and outcome and, with
    outcome labels, per floor the gate's selective prediction (issue 35 item 5): ``answered``
    the records it decided (did not escalate), ``coverage`` their share, ``risk`` the share of
    those whose action is not their outcome; ``aurc`` the curve's area (:func:`gate_aurc`)."""

    default: str
    cut_points: str
    rows: tuple[FloorRow, ...]
    curve: tuple[RiskPoint, ...] = ()
    #: the area under ``curve`` (:func:`gate_aurc`); None without outcome labels
    aurc: float | None = field(default=None, metadata={"json": "omit_none"})


def parse_floors(text: str | None) -> tuple[int, ...]:
    """``--floors``: ``0.5,0.6,0.7`` or ``0.50:0.95:0.05`` -> floors in integer hundredths.
    Anything else is a ``ReportInputError`` naming the part that is wrong and why (issue 43
    item 3: ``nan``, ``inf`` and a step ``abc`` were tracebacks, and a step that rounds to zero
    hundredths read "not FROM:TO:STEP with FROM <= TO")."""
    if not text:
        return DEFAULT_FLOORS

    def number(part: str, what: str) -> float:
        try:
            value = float(part)
        except ValueError:
            raise ReportInputError(f"--floors: {what}{part.strip()!r} is not a number") from None
        if not math.isfinite(value):
            raise ReportInputError(
                f"--floors: {what}{part.strip()!r} is not a finite number "
                "(floors are 0.50..1.00, in hundredths)"
            )
        return value

    def hundredths(part: str, what: str = "") -> int:
        value = number(part, what)
        n = round(value * 100) if 0 <= value <= 2 else 0  # 1e308 * 100 does not round
        if abs(value * 100 - n) > 1e-6 or not 50 <= n <= 100:
            raise ReportInputError(
                f"--floors: {what}{part.strip()!r} is not a floor in 0.50..1.00 in hundredths"
            )
        return n

    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3:
            raise ReportInputError(f"--floors: {text!r} is not FROM:TO:STEP")
        lo, hi = hundredths(parts[0], "FROM "), hundredths(parts[1], "TO ")
        value = number(parts[2], "STEP ")
        if value <= 0:
            raise ReportInputError(f"--floors: STEP {parts[2].strip()!r} is not positive")
        if value > 0.5:
            raise ReportInputError(
                f"--floors: STEP {parts[2].strip()!r} is wider than 0.50..1.00, the whole "
                "range of floors"
            )
        step = round(value * 100)
        if step == 0 or abs(value * 100 - step) > 1e-6:
            raise ReportInputError(
                f"--floors: STEP {parts[2].strip()!r} is not a whole number of hundredths "
                "(floors are in hundredths: the smallest step is 0.01)"
            )
        if hi < lo:
            raise ReportInputError(
                f"--floors: {text!r}: FROM {parts[0].strip()} is above TO {parts[1].strip()}"
            )
        return tuple(range(lo, hi + 1, step))
    floors = tuple(sorted({hundredths(p) for p in text.split(",") if p.strip()}))
    if not floors:
        raise ReportInputError(f"--floors: {text!r} names no floor (e.g. 0.5,0.6,0.7)")
    return floors


def at_floor(policy: Policy, floor: int) -> Policy:
    """``policy`` with its cut-points set by ``floor`` (integer hundredths), in its own sense."""
    if policy.thresholds is not None:
        t = {"yes": floor / 100, "no": (100 - floor) / 100, "min_confidence": floor / 100}
        return Policy(policy.rules, policy.default, None, policy.skip_uncertain, t)
    bands = Bands(low=(100 - floor) / 100, high=floor / 100)
    return Policy(policy.rules, policy.default, bands, policy.skip_uncertain)


def _catch(
    policy: Policy, rules: Sequence[Rule], answers: Mapping[str, Answer], qs: Mapping[str, Question]
) -> str:
    """How this question's own rules read the answers: ``direction``, ``confidence`` or ``""``."""
    got = decide(
        rules,
        answers,
        default="\x00pass",
        bands=policy.bands,
        thresholds=policy.thresholds,
        skip_uncertain=policy.skip_uncertain,
        questions=qs,
    )
    if got.escalated:
        return "confidence"
    return "" if got.action == "\x00pass" else "direction"


def _published(rules: Sequence[Rule], answer: Answer | None, floor: int) -> str:
    """How the published floor sweep reads one question's answer at ``floor`` (hundredths):
    ``direction`` (unfavourable side, whatever the confidence), ``confidence`` (favourable side
    below the floor, or nothing its rules can read) or ``""``. Two-decimal values, as
    published."""
    qtype = registry.of_answer(answer) if answer is not None else None
    if qtype is None or not qtype.is_modelled:
        return "confidence"  # missing or raw: the gate cannot read it
    gauge, p = qtype.gauge(answer), qtype.probability(answer)
    value = None if gauge is None else round(gauge, 2)
    # a probability's confidence is its side's (max(p, 1 - p)); the others' the wire's
    confidence = max(p, 1.0 - p) if p is not None else qtype.confidence(answer)
    sure = confidence is not None and round(confidence * 100) >= floor
    for rule in rules:
        if rule.is_ is not None:
            option = qtype.option(answer)
            if option is None:
                return "confidence"
            if option == rule.is_:
                return "direction"
        elif value is None or (rule.below is None and rule.at_least is None):
            return "confidence"
        elif (rule.below is not None and value < round(rule.below, 2)) or (
            rule.at_least is not None and value >= round(rule.at_least, 2)
        ):
            return "direction"
    return "" if sure else "confidence"


def decided_answers(run: str) -> list[tuple[str, Mapping[str, Answer]]]:
    """The id and parsed answers of each decided record of ``run``, in file order: what a
    gate reads."""
    decided: list[tuple[str, Mapping[str, Answer]]] = []
    for line, obj in iter_records(run):
        if not isinstance(obj, Mapping) or "error" in obj or "id" not in obj:
            continue
        try:
            answers = parse_decision({"model": "", "answers": obj.get("answers", {})}).answers
        except ClassifierError as e:
            raise ReportInputError(f"{run}:{line}: {e.detail}") from None
        decided.append((str(obj["id"]), answers))
    return decided


def sweep(
    run: str,
    gates: Mapping[str, Policy],
    questions: Mapping[str, Question],
    labels: Labels | None,
    floors: Iterable[int] = DEFAULT_FLOORS,
) -> dict[str, GateSweep]:
    """Each gate of ``gates`` swept over ``floors`` on the decided records of ``run``, grouped by
    the outcome in the labels column named after the gate (``all`` without one)."""
    floors = tuple(floors)
    decided = decided_answers(run)
    out: dict[str, GateSweep] = {}
    for name, policy in gates.items():
        column = labels.column(name) if labels is not None else None
        if labels is not None and column is None:
            continue  # no outcome column for this gate: nothing to sweep against
        by_question: dict[str, list[Rule]] = {}
        for rule in policy.rules:
            by_question.setdefault(rule.question, []).append(rule)
        groups: dict[str, list[Mapping[str, Answer]]] = {}
        for item_id, answers in decided:
            if labels is None or column is None:
                groups.setdefault("all", []).append(answers)
                continue
            row = labels.rows.get(item_id)
            if row is not None and row[column]:
                groups.setdefault(row[column], []).append(answers)
        rows: list[FloorRow] = []
        for floor in floors:
            p = at_floor(policy, floor)
            for outcome in sorted(groups):
                records = groups[outcome]
                let_through = held = escalated = agreed = 0
                counts = {k: [0, 0, 0, 0, 0, 0] for k in by_question}
                for answers in records:
                    result = p.decide(answers, questions)
                    if result.action == policy.default and not result.escalated:
                        let_through += 1
                    else:
                        held += 1
                    escalated += result.escalated
                    agreed += result.action == outcome
                    caught = {k: _catch(p, r, answers, questions) for k, r in by_question.items()}
                    hits = [k for k, how in caught.items() if how]
                    for k, how in caught.items():
                        if how == "direction":
                            counts[k][0] += 1
                        elif how == "confidence":
                            counts[k][1] += 1
                        if hits == [k]:
                            counts[k][2] += 1
                    published = {k: _published(r, answers.get(k), floor)
                                 for k, r in by_question.items()}  # fmt: skip
                    hits = [k for k, how in published.items() if how]
                    for k, how in published.items():
                        if how:
                            counts[k][3 if how == "direction" else 4] += 1
                        if hits == [k]:
                            counts[k][5] += 1
                rows.append(
                    FloorRow(
                        floor / 100,
                        outcome,
                        len(records),
                        let_through,
                        held,
                        escalated,
                        agreed,
                        {k: QuestionCatch(*c) for k, c in counts.items()},
                    )
                )
        sense = "thresholds (inclusive)" if policy.thresholds is not None else "bands (exclusive)"
        curve = _curve(rows) if labels is not None else ()
        out[name] = GateSweep(
            policy.default, sense, tuple(rows), curve, gate_aurc(curve) if curve else None
        )
    return out


def _curve(rows: list[FloorRow]) -> tuple[RiskPoint, ...]:
    """Per floor, over every outcome: what the gate decided, and how often wrongly."""
    out = []
    for floor in dict.fromkeys(r.floor for r in rows):
        at = [r for r in rows if r.floor == floor]
        n = sum(r.n for r in at)
        answered = n - sum(r.escalated for r in at)
        wrong = answered - sum(r.agreed for r in at)
        out.append(
            RiskPoint(floor, answered, answered / n if n else 0.0,
                      wrong / answered if answered else None)
        )  # fmt: skip
    return tuple(out)


def gate_aurc(curve: Sequence[RiskPoint]) -> float | None:
    """A gate's AURC (issue 35 item 5, "per question and per gate ... AURC"): the area under its
    risk-coverage curve over the floors swept, by the trapezoid rule between the points ordered
    by coverage, divided by the coverage they span, so it reads as the mean risk over that span
    (lower is better; 0 when the gate never acts against an outcome). A gate has no per-record
    confidence to order its records by, as a question's AURC does; its floors are the order.
    One point (or points all at one coverage): their mean risk. None: no floor decided
    anything."""
    points = sorted((p.coverage, p.risk) for p in curve if p.risk is not None)
    if not points:
        return None
    span = points[-1][0] - points[0][0]
    if span <= 0:
        return sum(r for _, r in points) / len(points)
    area = sum((c1 - c0) * (r0 + r1) / 2 for (c0, r0), (c1, r1) in pairwise(points))
    return area / span
