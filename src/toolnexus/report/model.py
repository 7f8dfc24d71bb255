"""The typed report: what ``build_report`` returns and every output reads by attribute (the
table, ``--format json``, the HTML page, ``--fail-on``).

Frozen dataclasses, one per object of ``report.schema.json``; a class's fields, in order, ARE
that object's keys (:func:`to_json` walks them), so the JSON shape is written once, here and in
below (one question's classes come first). How a field's ``metadata["json"]`` (``SKIP``,
``OMIT_NONE``, ``EMPTY_OBJECT``) writes it is ``report.jsonshape``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..metrics import DEFAULT_DEFINITIONS, MetricDefinitions, ReliabilityBin, Threshold
from .figures import (
    CalibrationFit,
    CoveragePoint,
    EceUncertainty,
    ThresholdCut,
    ThresholdPair,
)
from .jsonshape import (
    EMPTY_OBJECT,
    OMIT_NONE,
    OMIT_ZERO,
    SKIP,
    to_json,
)
from .judged import GateReport, PairedCount
from .selective import SelectiveReport
from .sweep import GateSweep

__all__ = [
    "SCALAR_METRICS",
    "AccuracySplit",
    "BandPrecision",
    "ChangedId",
    "ChoiceDistribution",
    "ChoiceMetrics",
    "Comparison",
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
    "QuestionComparison",
    "QuestionMetrics",
    "QuestionReport",
    "Recalibration",
    "Report",
    "RunSummary",
    "ScoreDistribution",
    "ScoreMetrics",
    "Usage",
]

# One question's report: its answers' distribution, its flags and, against labels, its
# metrics (each type's), confusion, bands and per-option calibration, and the wire's own beside
# a recalibrated run's: the classes :class:`Report` holds per question.


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


@dataclass(frozen=True)
class Usage:
    """Tokens and cost summed over records; ``cost`` is ``None`` when no record reported one
    (absent, not zero)."""

    input_tokens: int
    output_tokens: int
    cost: float | None
    cost_reported: int


@dataclass(frozen=True)
class RunSummary:
    """One run's line: its records, errors by code, models, and what it spent; cached answers
    are counted apart (``cached_usage``: what they had cost when first asked)."""

    path: str
    records: int
    answered: int
    labelled: int
    errors: Mapping[str, int]
    models: Mapping[str, int]
    uncalibrated_records: int
    usage: Usage
    cached_records: int
    cached_usage: Usage
    #: the ids of the first error records, in file order (for ``--fail-on errors``)
    error_ids: tuple[str, ...] = field(default=(), metadata=SKIP)
    #: recalibrated records by the sha256 of the calibration file (``--calibration``)
    recalibrated_by: Mapping[str, int] | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class ChangedId:
    """An id whose answer moved: its category (choice option, score level, noul band) before
    and after, and the total variation between the two distributions."""

    id: str
    before: Any
    after: Any
    delta_p: float


@dataclass(frozen=True)
class QuestionComparison:
    type: str | None
    compared: int
    only_before: int
    only_after: int
    changed: int
    changed_share: float | None
    mean_abs_delta_p: float | None
    metric_deltas: Mapping[str, float] | None
    top_changed: tuple[ChangedId, ...]


@dataclass(frozen=True)
class Comparison:
    before: str
    after: str
    questions: Mapping[str, QuestionComparison]
    after_questions: Mapping[str, QuestionReport]


@dataclass(frozen=True)
class Report:
    """One or two runs and, per question, the report of the first run; with two, the
    comparison (whose ``after_questions`` are the second run's). ``warnings`` go to stderr."""

    records: int
    labelled: int
    runs: tuple[RunSummary, ...]
    questions: Mapping[str, QuestionReport]
    comparison: Comparison | None
    #: the path of the run that ``questions`` (and ``calibration_fit``) describe: the first
    #: (issue 31 item 7: every section names its run; ``--fail-on`` judges the last)
    questions_run: str | None = field(default=None, metadata=OMIT_NONE)
    warnings: tuple[str, ...] = field(default=(), metadata=SKIP)
    calibration_fit: CalibrationFit | None = field(default=None, metadata=OMIT_NONE)
    #: with ``--labels``: why the last run has no labelled answer (no id or no column matched)
    labels_problem: str | None = field(default=None, metadata=SKIP)
    #: per gate of the question file, over the judged (last) run (issue 35)
    gates: Mapping[str, GateReport] | None = field(default=None, metadata=OMIT_NONE)
    #: two runs and labels: per question and gate, fixes, breaks and McNemar's p (issue 35)
    paired: Mapping[str, PairedCount] | None = field(default=None, metadata=OMIT_NONE)
    #: ``--gates FILE``: each gate swept over ``--floors`` against its outcome labels (issue 35)
    sweeps: Mapping[str, GateSweep] | None = field(default=None, metadata=OMIT_NONE)
    #: ``--selective``: per labelled question of the first run, risk against coverage (issue 35)
    selective: Mapping[str, SelectiveReport] | None = field(default=None, metadata=OMIT_NONE)
    #: the question-set digests the first run's answered records carry, sorted (what
    #: ``--write-thresholds`` records it was fitted on, issue 42 item 3)
    questions_sha256: tuple[str, ...] = field(default=(), metadata=SKIP)
    #: which definition of each calibration figure the report used (issue 47)
    definitions: MetricDefinitions = DEFAULT_DEFINITIONS
    #: ``--pool``: every labelled answer of the (last) run's questions as one sample
    pooled: PooledMetrics | None = field(default=None, metadata=OMIT_NONE)

    @property
    def judged(self) -> Mapping[str, QuestionReport]:
        """The questions of the last run, which ``--fail-on`` judges."""
        return self.comparison.after_questions if self.comparison else self.questions

    def section_run(self) -> str:
        """How a section of the first run's numbers names that run: ``run PATH``, or with two
        runs ``before PATH`` and which run ``--fail-on`` judges (issue 31 item 7)."""
        first = self.runs[0].path
        if len(self.runs) == 1:
            return f"run {first}"
        return f"before {first}; --fail-on judges the after run, {self.runs[-1].path}"

    def to_json(self) -> dict[str, Any]:
        """The object ``--format json`` prints (``report.schema.json``)."""
        out: dict[str, Any] = to_json(self)
        return out
