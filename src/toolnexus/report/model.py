"""The typed report: what ``build_report`` returns and every output reads by attribute (the
table, ``--format json``, the HTML page, ``--fail-on``).

Frozen dataclasses, one per object of ``report.schema.json``; a class's fields, in order, ARE
that object's keys (:func:`to_json` walks them), so the JSON shape is written once, here and in
``report.questionreport`` (one question's classes, re-exported here). How a field's
``metadata["json"]`` (``SKIP``, ``OMIT_NONE``, ``EMPTY_OBJECT``) writes it is
``report.jsonshape``'s (re-exported here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..metrics.definitions import DEFAULT_DEFINITIONS, MetricDefinitions
from ..metrics.measures import ReliabilityBin, Threshold
from .figures import (
    CalibrationFit,
    CoveragePoint,
    EceUncertainty,
    FittedMap,
    ThresholdCut,
    ThresholdPair,
)
from .jsonshape import EMPTY_OBJECT, OMIT_NONE, SKIP, map_text, to_json
from .judged import GateReport, PairedCount
from .questionreport import (
    SCALAR_METRICS,
    AccuracySplit,
    BandPrecision,
    ChoiceDistribution,
    ChoiceMetrics,
    Confusion,
    Count,
    Distribution,
    FlagCount,
    HistogramBin,
    LevelCount,
    Metrics,
    NearUniformSplit,
    NoulBands,
    NoulDistribution,
    NoulMetrics,
    OptionCalibration,
    PooledMetrics,
    QuestionMetrics,
    QuestionReport,
    Recalibration,
    ScoreDistribution,
    ScoreMetrics,
)
from .selective import SelectiveReport
from .sweep import GateSweep

__all__ = [
    "EMPTY_OBJECT",
    "OMIT_NONE",
    "SCALAR_METRICS",
    "SKIP",
    "AccuracySplit",
    "BandPrecision",
    "CalibrationFit",
    "ChangedId",
    "ChoiceDistribution",
    "ChoiceMetrics",
    "Comparison",
    "Confusion",
    "Count",
    "CoveragePoint",
    "Distribution",
    "EceUncertainty",
    "FittedMap",
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
    "ReliabilityBin",
    "Report",
    "RunSummary",
    "ScoreDistribution",
    "ScoreMetrics",
    "Threshold",
    "ThresholdCut",
    "ThresholdPair",
    "Usage",
    "map_text",
    "to_json",
]

# --- runs ----------------------------------------------------------------------------------


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


# --- two runs ------------------------------------------------------------------------------


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


# --- the report ----------------------------------------------------------------------------


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
