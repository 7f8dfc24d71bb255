"""``--write-thresholds``' out-of-bag guard (issue 35 item 4): the labelled noul answers of a run,
read again only when a pair is to be written, and each side of each pair checked on bootstrap
resamples (``calibration.oob``) before it may be written."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..calibration.oob import OobGuard, oob_guard
from .judged import LABEL_TRUTH, decided_records
from .labels import Labels

__all__ = [
    "GuardedFloor",
    "GuardedPair",
    "confidence_floors",
    "guard_pairs",
    "labelled_confidence",
    "labelled_noul",
]


@dataclass(frozen=True)
class GuardedPair:
    """One question's pair with the guard of each side; ``accepted`` when both pass."""

    yes: OobGuard
    no: OobGuard

    @property
    def accepted(self) -> bool:
        return self.yes.accepted and self.no.accepted


def labelled_noul(
    run: str, labels: Labels, keys: list[str]
) -> dict[str, tuple[list[int], list[float]]]:
    """Per noul question of ``keys``: the labels (1/0) and probabilities of its labelled answers."""
    out: dict[str, tuple[list[int], list[float]]] = {k: ([], []) for k in keys}
    columns = {k: labels.column(k) for k in keys}
    for item_id, record in decided_records(run):
        row = labels.rows.get(item_id)
        answers = record.get("answers")
        if row is None or not isinstance(answers, Mapping):
            continue
        for key, at in columns.items():
            answer = answers.get(key)
            if at is None or not row[at] or not isinstance(answer, Mapping):
                continue
            truth, p = LABEL_TRUTH.get(row[at].lower()), answer.get("noul")
            if truth is None or not isinstance(p, int | float) or isinstance(p, bool):
                continue
            out[key][0].append(int(truth))
            out[key][1].append(float(p))
    return out


def guard_pairs(run: str, labels: Labels, targets: Mapping[str, float]) -> dict[str, GuardedPair]:
    """Each question of ``targets`` (key -> target precision): both sides of its cut-point pair
    chosen again on resamples and measured out of bag."""
    arrays = labelled_noul(run, labels, list(targets))
    out = {}
    for key, target in targets.items():
        ys, ps = arrays[key]
        yes = oob_guard(ys, ps, target)
        no = oob_guard([1 - y for y in ys], [1.0 - p for p in ps], target)
        out[key] = GuardedPair(yes, no)
    return out


def labelled_confidence(
    run: str, labels: Labels, keys: list[str]
) -> dict[str, tuple[list[int], list[float]]]:
    """Per choice or score question of ``keys``: whether each labelled answer is right (1/0)
    and its wire ``confidence``, what ``min_confidence`` reads."""
    from .selective import confident

    out: dict[str, tuple[list[int], list[float]]] = {k: ([], []) for k in keys}
    columns = {k: labels.column(k) for k in keys}
    for item_id, record in decided_records(run):
        row = labels.rows.get(item_id)
        answers = record.get("answers")
        if row is None or not isinstance(answers, Mapping):
            continue
        for key, at in columns.items():
            answer = answers.get(key)
            if at is None or not row[at] or not isinstance(answer, Mapping):
                continue
            if answer.get("type") not in ("choice", "score"):
                continue
            got = confident(answer, row[at])
            if got is not None:
                out[key][0].append(int(got[1]))
                out[key][1].append(got[0])
    return out


@dataclass(frozen=True)
class GuardedFloor:
    """A choice or score question's ``min_confidence`` for a target accuracy: the lowest wire
    confidence whose answers at or above it are right at least ``target`` of the time on these
    labels (``floor`` None: none is), its in-sample accuracy, and the out-of-bag guard."""

    target: float
    floor: float | None
    accuracy: float | None
    guard: OobGuard


def confidence_floors(
    run: str, labels: Labels, targets: Mapping[str, float]
) -> dict[str, GuardedFloor]:
    """Per choice or score question of ``targets`` (key -> target accuracy): its floor and guard
    (issue 35 item 4: "choice and score confidence floors")."""
    from ..metrics.measures import threshold_for_precision

    arrays = labelled_confidence(run, labels, list(targets))
    out = {}
    for key, target in targets.items():
        right, conf = arrays[key]
        if not right:
            continue
        found = threshold_for_precision(right, conf, target)
        out[key] = GuardedFloor(
            target, found.threshold, found.precision, oob_guard(right, conf, target)
        )
    return out
