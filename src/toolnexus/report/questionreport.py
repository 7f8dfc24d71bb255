"""One question's report: its answers' distribution, its flags and, against labels, its
metrics (each type's), confusion, bands and per-option calibration, and the wire's own beside
a recalibrated run's. The classes ``report.model``'s :class:`~.model.Report` holds per question;
how they are written as JSON is ``report.jsonshape``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..metrics.measures import ReliabilityBin, Threshold
from .figures import (
    CoveragePoint,
    EceUncertainty,
    ThresholdCut,
    ThresholdPair,
)
from .jsonshape import EMPTY_OBJECT, OMIT_NONE, OMIT_ZERO, SKIP

__all__ = [
    "SCALAR_METRICS",
    "AccuracySplit",
    "BandPrecision",
    "ChoiceDistribution",
    "ChoiceMetrics",
    "Confusion",
    "Count",
    "Distribution",
    "FlagCount",
    "HistogramBin",
    "LevelCount",
    "Metrics",
    "NearUniformSplit",
    "NoulBands",
    "NoulDistribution",
    "NoulMetrics",
    "OptionCalibration",
    "PooledMetrics",
    "QuestionMetrics",
    "QuestionReport",
    "Recalibration",
    "ScoreDistribution",
    "ScoreMetrics",
]

#: The metrics a comparison subtracts and ``--fail-on`` names (the nested ones, confusion and
#: bands, are not scalars); each is a field of the metrics classes that have it.
SCALAR_METRICS = (
    "accuracy",
    "brier",
    "log_loss",
    "nll",
    "auroc",
    "ece",
    "macro_f1",
    "within_one",
    "mae",
    "rps",
)


@dataclass(frozen=True)
class Count:
    """How many answers, and their share of the question's answers (``None`` of none)."""

    n: int
    share: float | None


@dataclass(frozen=True)
class FlagCount(Count):
    """A flag's count and share, with the ids of its first answers in file order."""

    ids: tuple[str, ...] = field(default=(), metadata=SKIP)


@dataclass(frozen=True)
class HistogramBin:
    lo: float
    hi: float
    n: int


@dataclass(frozen=True)
class NoulDistribution:
    histogram: tuple[HistogramBin, ...]
    bands: Mapping[str, Count]


@dataclass(frozen=True)
class ChoiceDistribution:
    options: Mapping[str, Count]


@dataclass(frozen=True)
class LevelCount:
    """A score level's answers; ``label`` is the level's label (a structured level's
    ``label``, seed 003), always a string."""

    label: str
    n: int
    share: float | None


@dataclass(frozen=True)
class ScoreDistribution:
    """``confidence_fits``: per known score confidence formula (top probability, the choice
    formula over the levels, jevcompat's distance formula), the answers whose confidence it
    gives within rounding, as a share of the answers with a confidence (issue 33: no formula
    is published for score, so the report says which one a backend's answers fit)."""

    levels: Mapping[str, LevelCount]
    mean_score: float | None
    confidence_fits: Mapping[str, Count]


Distribution = NoulDistribution | ChoiceDistribution | ScoreDistribution


@dataclass(frozen=True)
class BandPrecision:
    n: int
    precision: float | None
    recall: float | None


@dataclass(frozen=True)
class NoulBands:
    yes: BandPrecision
    no: BandPrecision
    uncertain: Count


@dataclass(frozen=True)
class Confusion:
    """Rows: label; columns: answer; both in ``labels`` order."""

    labels: tuple[str, ...]
    matrix: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class AccuracySplit:
    n: int
    accuracy: float | None


@dataclass(frozen=True)
class NearUniformSplit:
    near_uniform: AccuracySplit
    not_near_uniform: AccuracySplit


@dataclass(frozen=True)
class OptionCalibration:
    """One choice option, one-vs-rest: ``labelled`` records carry it as their label; its ECE
    and bins, or ``skipped`` saying why it was left out (fewer than 30 labels)."""

    option: str
    labelled: int
    ece: float | None
    reliability: tuple[ReliabilityBin, ...]
    skipped: str | None


class Metrics:
    """What the metrics of every type share: a scalar metric read by its name."""

    def scalar(self, name: str) -> float | None:
        """The scalar metric ``name`` (one of :data:`SCALAR_METRICS`), ``None`` when this type
        does not have it or it is undefined."""
        value = getattr(self, name, None) if name in SCALAR_METRICS else None
        return value if isinstance(value, int | float) else None


@dataclass(frozen=True)
class NoulMetrics(Metrics):
    accuracy: float | None
    brier: float | None
    log_loss: float | None
    #: ``-log`` of the label's probability at ``--log-floor`` (``log_loss`` without one)
    nll: float | None
    auroc: float | None
    ece: float | None
    bands: NoulBands
    threshold: Threshold | None = field(default=None, metadata=OMIT_NONE)
    ece_uncertainty: EceUncertainty | None = field(default=None, metadata=OMIT_NONE)
    threshold_table: tuple[ThresholdCut, ...] | None = field(default=None, metadata=OMIT_NONE)
    thresholds: ThresholdPair | None = field(default=None, metadata=OMIT_NONE)
    #: ``--fit-temperature``: the single temperature minimising ``nll`` (issue 47)
    temperature: float | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class ChoiceMetrics(Metrics):
    accuracy: float | None
    brier: float | None
    log_loss: float | None
    #: ``-log`` of the label's probability at ``--log-floor`` (``log_loss`` without one)
    nll: float | None
    ece: float | None
    macro_f1: float | None
    confusion: Confusion
    accuracy_by_near_uniform: NearUniformSplit
    ece_uncertainty: EceUncertainty | None = field(default=None, metadata=OMIT_NONE)
    per_option: tuple[OptionCalibration, ...] | None = field(default=None, metadata=OMIT_NONE)
    accuracy_coverage: tuple[CoveragePoint, ...] | None = field(default=None, metadata=OMIT_NONE)
    #: ``--fit-temperature``: the single temperature minimising ``nll`` (issue 47)
    temperature: float | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class ScoreMetrics(Metrics):
    accuracy: float | None
    within_one: float | None
    mae: float | None
    brier: float | None
    log_loss: float | None
    #: ``-log`` of the label's probability at ``--log-floor`` (``log_loss`` without one)
    nll: float | None
    ece: float | None
    confusion: Confusion
    rps: float | None = field(default=None, metadata=OMIT_NONE)
    ece_uncertainty: EceUncertainty | None = field(default=None, metadata=OMIT_NONE)
    #: ``--fit-temperature``: the single temperature minimising ``nll`` (issue 47)
    temperature: float | None = field(default=None, metadata=OMIT_NONE)


QuestionMetrics = NoulMetrics | ChoiceMetrics | ScoreMetrics


@dataclass(frozen=True)
class PooledMetrics:
    """``--pool`` (issue 47): every labelled answer of every question as one sample, as
    studies report an "all" row: accuracy, ``nll`` at the log floor, the top-label ECE (a
    noul as the two-class distribution ``[p, 1 - p]``) with its interval and floor."""

    labelled: int
    accuracy: float | None
    nll: float | None
    ece: float | None
    ece_of: str
    ece_uncertainty: EceUncertainty | None = field(default=None, metadata=OMIT_NONE)
    temperature: float | None = field(default=None, metadata=OMIT_NONE)
    #: labelled answers left out as invalid, over every question
    invalid: int = 0


@dataclass(frozen=True)
class QuestionReport:
    """One question over one run: its answers, the run's errors, its flags and, against
    labels, its metrics and reliability bins (``metrics`` ``None`` and ``reliability`` empty
    without labels)."""

    type: str
    n: int
    errors: Mapping[str, int]
    invalid: int
    distribution: Distribution | None = field(metadata=EMPTY_OBJECT)
    flags: Mapping[str, FlagCount]
    mean_confidence: float | None
    labelled: int
    #: labelled answers flagged invalid, left out of ``metrics`` (issue 47); 0 is not written
    labelled_invalid: int = field(metadata=OMIT_ZERO)
    metrics: QuestionMetrics | None = field(metadata=EMPTY_OBJECT)
    reliability: tuple[ReliabilityBin, ...]
    #: the ids of the first answers flagged invalid, in file order
    invalid_ids: tuple[str, ...] = field(default=(), metadata=SKIP)
    #: a recalibrated run: ``metrics`` and ``reliability`` measure the recalibrated
    #: probabilities; these are the wire's, beside them
    recalibrated: Recalibration | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class Recalibration:
    """A question whose answers carry recalibrated probabilities (``eval``/``batch
    --calibration``; the run's ``recalibrated_by`` names the files): how many, and the wire's
    own metrics and reliability bins beside the recalibrated ones."""

    answers: int
    wire_metrics: QuestionMetrics | None = field(metadata=EMPTY_OBJECT)
    wire_reliability: tuple[ReliabilityBin, ...]
