"""``--write-thresholds``' out-of-bag guard (issue 35 item 4): the labelled noul answers of a run,
read again only when a pair is to be written, and each side of each pair checked on bootstrap
resamples (``calibration.oob``) before it may be written."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..calibration import OobGuard, oob_guard
from ..core import registry
from .judged import LABEL_TRUTH, decided_records
from .labels import Labels

__all__ = [
    "GuardedFloor",
    "GuardedPair",
    "confidence_floors",
    "guard_pairs",
    "in_sample",
    "labelled_confidence",
    "labelled_noul",
]


@dataclass(frozen=True)
class GuardedPair:
    """One question's pair with the guard of each side; ``accepted`` when both pass. The
    in-sample precision of each side at its out-of-bag floor, on all the labels (None: no
    floor)."""

    yes: OobGuard
    no: OobGuard
    yes_in_sample: float | None = None
    no_in_sample: float | None = None

    @property
    def accepted(self) -> bool:
        return self.yes.accepted and self.no.accepted


Pairs = dict[str, tuple[list[int], list[float]]]


def _labelled(
    run: str,
    labels: Labels,
    keys: list[str],
    pick: Callable[[Mapping[str, Any], str], tuple[int, float] | None],
) -> Pairs:
    """Per question of ``keys``: ``pick(answer, label)`` of each labelled answer, as the two
    lists (1/0, number) the guards read; a pick of None leaves the answer out."""
    out: Pairs = {k: ([], []) for k in keys}
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
            got = pick(answer, row[at])
            if got is not None:
                out[key][0].append(got[0])
                out[key][1].append(got[1])
    return out


def _noul_pick(answer: Mapping[str, Any], label: str) -> tuple[int, float] | None:
    truth, p = LABEL_TRUTH.get(label.lower()), answer.get("noul")
    if truth is None or not isinstance(p, int | float) or isinstance(p, bool):
        return None
    return int(truth), float(p)


def labelled_noul(run: str, labels: Labels, keys: list[str]) -> Pairs:
    """Per noul question of ``keys``: the labels (1/0) and probabilities of its labelled answers."""
    return _labelled(run, labels, keys, _noul_pick)


def guard_pairs(run: str, labels: Labels, targets: Mapping[str, float]) -> dict[str, GuardedPair]:
    """Each question of ``targets`` (key -> target precision): both sides of its cut-point pair
    chosen on resamples and measured out of bag (the pair written is theirs, not the report's
    in-sample search)."""
    arrays = labelled_noul(run, labels, list(targets))
    out = {}
    for key, target in targets.items():
        ys, ps = arrays[key]
        no_ys, no_ps = [1 - y for y in ys], [1.0 - p for p in ps]
        yes, no = oob_guard(ys, ps, target), oob_guard(no_ys, no_ps, target)
        out[key] = GuardedPair(
            yes, no, in_sample(ys, ps, yes.floor), in_sample(no_ys, no_ps, no.floor)
        )
    return out


def labelled_confidence(run: str, labels: Labels, keys: list[str]) -> Pairs:
    """Per choice or score question of ``keys``: whether each labelled answer is right (1/0)
    and its wire ``confidence``, what ``min_confidence`` reads."""
    from .selective import confident

    def pick(answer: Mapping[str, Any], label: str) -> tuple[int, float] | None:
        if not registry.floored_by_confidence(answer.get("type")):  # a choice, a score
            return None
        got = confident(answer, label)
        return None if got is None else (int(got[1]), got[0])

    return _labelled(run, labels, keys, pick)


@dataclass(frozen=True)
class GuardedFloor:
    """A choice or score question's ``min_confidence`` for a target accuracy, chosen out of bag
    (``calibration.oob``: ``floor`` None when fewer than half the resamples reach it), the
    accuracy of the answers at or above it on all the labels (in sample), and the guard."""

    target: float
    floor: float | None
    accuracy: float | None
    guard: OobGuard


def confidence_floors(
    run: str, labels: Labels, targets: Mapping[str, float]
) -> dict[str, GuardedFloor]:
    """Per choice or score question of ``targets`` (key -> target accuracy): its floor and guard
    (issue 35 item 4: "choice and score confidence floors")."""
    arrays = labelled_confidence(run, labels, list(targets))
    out = {}
    for key, target in targets.items():
        right, conf = arrays[key]
        if not right:
            continue
        guard = oob_guard(right, conf, target)
        out[key] = GuardedFloor(target, guard.floor, in_sample(right, conf, guard.floor), guard)
    return out


def in_sample(y_true: list[int], y_prob: list[float], floor: float | None) -> float | None:
    """The share of yes among the rows at or above ``floor``, on every row."""
    if floor is None:
        return None
    said = [y for y, p in zip(y_true, y_prob, strict=True) if p >= floor]
    return sum(said) / len(said) if said else None
