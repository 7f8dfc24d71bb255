"""The report's calibration figures that stand on their own (issue 24): an ECE's interval and
noise floor, the threshold table and pair, accuracy against coverage, and what
``--fit-calibration`` fitted. Fields of :mod:`.model`'s classes, written by its ``to_json``
(fields in order)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CalibrationFit",
    "CoveragePoint",
    "EceUncertainty",
    "FittedMap",
    "ThresholdCut",
    "ThresholdPair",
]


@dataclass(frozen=True)
class EceUncertainty:
    """How much an ``ece`` means at this sample size (issue 24 §1): its 95% percentile
    bootstrap interval (``low``..``high``) and the noise floor, the median and 95th percentile
    of the ECE a perfectly calibrated model shows on these same probabilities. ``above_floor``:
    the ECE is above the floor's p95 (``--fail-on ece>floor``); else it is indistinguishable
    from calibrated. ``resamples`` and ``seed`` make it reproducible."""

    low: float
    high: float
    floor_median: float
    floor_p95: float
    above_floor: bool
    resamples: int
    seed: int
    #: the floor's mean over its ``floor_draws`` label draws (issue 47)
    floor_mean: float = 0.0
    floor_draws: int = 0


@dataclass(frozen=True)
class ThresholdCut:
    """Answering yes for ``p >= cut``: its precision, recall and coverage (share said yes); and
    answering no for ``p <= 1 - cut`` (in hundredths): the no side's precision, recall (of the
    negatives) and coverage (issue 35 item 3)."""

    cut: float
    precision: float | None
    recall: float | None
    coverage: float
    no_precision: float | None = None
    no_recall: float | None = None
    no_coverage: float = 0.0


@dataclass(frozen=True)
class ThresholdPair:
    """A consistent pair of cut-points reaching ``target_precision`` on both sides (``no`` <=
    ``yes``), in the form ``--thresholds @t.yaml`` reads; ``yes``/``no`` ``None`` with
    ``reason`` when no pair reaches it."""

    target_precision: float
    yes: float | None
    no: float | None
    yes_precision: float | None
    yes_recall: float | None
    no_precision: float | None
    no_recall: float | None
    reason: str | None


@dataclass(frozen=True)
class CoveragePoint:
    """Answering only when the top-1 confidence is at least ``floor``: how many that is, their
    share, and the accuracy of those answers (``None`` when nothing is answered)."""

    floor: float
    answered: int
    coverage: float
    accuracy: float | None


@dataclass(frozen=True)
class FittedMap:
    """One question's map as ``--fit-calibration`` fitted it (``kind`` ``None`` and
    ``skipped`` saying why when it got none): cross-validated metrics before and after."""

    type: str
    labelled: int
    kind: str | None
    params: Mapping[str, Any] | None
    before: Mapping[str, float | None] | None
    after: Mapping[str, float | None] | None
    note: str | None
    skipped: str | None


@dataclass(frozen=True)
class CalibrationFit:
    """What ``--fit-calibration FILE`` wrote: the file, the sha256 of its bytes, where the
    maps hold (model, style, pack size, question-set digest) and each question's map."""

    path: str
    sha256: str
    provenance: Mapping[str, Any]
    provenance_note: str | None
    questions: Mapping[str, FittedMap]
