"""Selective prediction (issue 35 item 5): per labelled question, what answering only above a
confidence floor buys (accuracy) and costs (coverage), as a risk-coverage curve with its area
(AURC) and the coverage reached at a target risk.

A noul's confidence is ``max(p, 1 - p)`` and it is right when ``p >= 0.5`` says the label; a
choice's or score's is the wire ``confidence`` and it is right when its pick (level) is the
label. Answers are taken from the most confident down; answers of equal confidence are taken
together (a floor cannot split them), so the curve and AURC do not depend on the file's order.
AURC is the mean, over the answers, of the risk once each answer's group has been taken
(lower is better; 0 when every answer is right). A separate pass over the run, taken only when
``--selective`` or ``--target-risk`` asks for it. Pure counting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .judged import decided_records, label_reading
from .labels import Labels

__all__ = ["FLOORS", "RiskPoint", "SelectiveReport", "confident", "selective_reports"]

_OMIT_NONE: Mapping[str, str] = {"json": "omit_none"}
#: The floors of the curve: 0.00, 0.05, ..., 1.00 (a noul's confidence is at least 0.5).
FLOORS = tuple(i / 20 for i in range(21))


@dataclass(frozen=True)
class RiskPoint:
    """Answering only at confidence ``>= floor``: how many, their share, their error rate."""

    floor: float
    answered: int
    coverage: float
    risk: float | None


@dataclass(frozen=True)
class SelectiveReport:
    """One question's risk-coverage figures over its ``n`` labelled answers."""

    n: int
    aurc: float | None
    curve: tuple[RiskPoint, ...]
    target_risk: float | None = field(default=None, metadata=_OMIT_NONE)
    #: the largest coverage whose risk is at most ``target_risk``, and the floor that gives it
    coverage_at_target: float | None = field(default=None, metadata=_OMIT_NONE)
    floor_at_target: float | None = field(default=None, metadata=_OMIT_NONE)


def confident(answer: Any, label: str) -> tuple[float, bool] | None:
    """``(confidence, right)`` of one answer against its label, None when it cannot be read."""
    reading = label_reading(answer)  # the type's, report/judged.py
    return reading.confident(answer, label) if reading is not None else None


def _report(pairs: list[tuple[float, bool]], target_risk: float | None) -> SelectiveReport:
    n = len(pairs)
    pairs.sort(key=lambda cr: -cr[0])
    aurc = 0.0
    taken = wrong = 0
    best: tuple[float, float] | None = None  # (coverage, floor) at the target risk
    i = 0
    while i < n:
        conf = pairs[i][0]
        j = i
        while j < n and pairs[j][0] == conf:
            wrong += not pairs[j][1]
            j += 1
        taken = j
        aurc += wrong / taken * (j - i) / n
        if target_risk is not None and wrong / taken <= target_risk:
            best = (taken / n, conf)
        i = j
    curve = []
    for floor in FLOORS:
        said = [right for conf, right in pairs if conf >= floor]
        error = (len(said) - sum(said)) / len(said) if said else None
        curve.append(RiskPoint(floor, len(said), len(said) / n if n else 0.0, error))
    return SelectiveReport(
        n,
        aurc if n else None,
        tuple(curve),
        target_risk,
        (best[0] if best else 0.0) if target_risk is not None else None,
        best[1] if best else None,
    )


def selective_reports(
    run: str, labels: Labels, target_risk: float | None = None
) -> dict[str, SelectiveReport]:
    """Per labelled question of ``run`` (noul, choice, score), in the labels file's order."""
    pairs: dict[str, list[tuple[float, bool]]] = {}
    for item_id, record in decided_records(run):
        row = labels.rows.get(item_id)
        answers = record.get("answers")
        if row is None or not isinstance(answers, Mapping):
            continue
        for i, key in enumerate(labels.keys, 1):
            if row[i] and key in answers:
                got = confident(answers[key], row[i])
                if got is not None:
                    pairs.setdefault(key, []).append(got)
    return {k: _report(v, target_risk) for k, v in pairs.items()}
