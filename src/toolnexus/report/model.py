"""The typed report: what ``build_report`` returns and every output reads by attribute (the
table, ``--format json``, the HTML page, ``--fail-on``).

Frozen dataclasses, one per object of ``report.schema.json``; a class's fields, in order, ARE
that object's keys (:func:`to_json` walks them), so the JSON shape is written once, here. A
field's ``metadata["json"]`` says how it is written when it is not written as is:

- ``SKIP``: not in the JSON (what only a message needs, such as the first ids of a flag);
- ``OMIT_NONE``: left out while ``None`` (``threshold`` without ``--target-precision``; the
  place for later per-question figures such as an ECE interval, so that reports which do not
  compute them keep their bytes);
- ``EMPTY_OBJECT``: ``{}`` while ``None`` (``metrics`` and ``distribution`` of a question with
  nothing to show).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..metrics.measures import ReliabilityBin, Threshold
from .figures import (
    CalibrationFit,
    CoveragePoint,
    EceUncertainty,
    FittedMap,
    ThresholdCut,
    ThresholdPair,
)
from .judged import GateReport, PairedCount
from .selective import SelectiveReport
from .sweep import GateSweep

T = TypeVar("T")

__all__ = [
    "EMPTY_OBJECT",
    "OMIT_NONE",
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
    "QuestionComparison",
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

SKIP: Mapping[str, str] = {"json": "skip"}
OMIT_NONE: Mapping[str, str] = {"json": "omit_none"}
EMPTY_OBJECT: Mapping[str, str] = {"json": "empty_object"}

#: The metrics a comparison subtracts and ``--fail-on`` names (the nested ones, confusion and
#: bands, are not scalars); each is a field of the metrics classes that have it.
SCALAR_METRICS = (
    "accuracy",
    "brier",
    "log_loss",
    "auroc",
    "ece",
    "macro_f1",
    "within_one",
    "mae",
    "rps",
)


def to_json(value: Any) -> Any:
    """``value`` as the JSON value the report prints: a dataclass as an object of its fields
    in order (see the module docstring for ``metadata["json"]``), a mapping as an object, a
    tuple or list as an array, anything else as is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            how = f.metadata.get("json")
            if how == "skip" or (how == "omit_none" and item is None):
                continue
            out[f.name] = {} if how == "empty_object" and item is None else to_json(item)
        return out
    if isinstance(value, Mapping):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [to_json(v) for v in value]
    return value


def map_text(value: T, fn: Callable[[str], str]) -> T:
    """A copy of ``value`` with ``fn`` applied to every string in it, mapping keys included
    (the table shows a report's text through :func:`toolnexus.printable.printable`)."""
    out: Any
    if isinstance(value, str):
        out = fn(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: map_text(getattr(value, f.name), fn) for f in dataclasses.fields(value)}
        out = dataclasses.replace(value, **changes)
    elif isinstance(value, Mapping):
        out = {map_text(k, fn): map_text(v, fn) for k, v in value.items()}
    elif isinstance(value, tuple | list):
        out = type(value)(map_text(v, fn) for v in value)
    else:
        out = value
    return out  # type: ignore[no-any-return]  # the same shape as value, strings mapped


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


# --- one question --------------------------------------------------------------------------


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
    auroc: float | None
    ece: float | None
    bands: NoulBands
    threshold: Threshold | None = field(default=None, metadata=OMIT_NONE)
    ece_uncertainty: EceUncertainty | None = field(default=None, metadata=OMIT_NONE)
    threshold_table: tuple[ThresholdCut, ...] | None = field(default=None, metadata=OMIT_NONE)
    thresholds: ThresholdPair | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class ChoiceMetrics(Metrics):
    accuracy: float | None
    brier: float | None
    log_loss: float | None
    ece: float | None
    macro_f1: float | None
    confusion: Confusion
    accuracy_by_near_uniform: NearUniformSplit
    ece_uncertainty: EceUncertainty | None = field(default=None, metadata=OMIT_NONE)
    per_option: tuple[OptionCalibration, ...] | None = field(default=None, metadata=OMIT_NONE)
    accuracy_coverage: tuple[CoveragePoint, ...] | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class ScoreMetrics(Metrics):
    accuracy: float | None
    within_one: float | None
    mae: float | None
    brier: float | None
    log_loss: float | None
    ece: float | None
    confusion: Confusion
    rps: float | None = field(default=None, metadata=OMIT_NONE)
    ece_uncertainty: EceUncertainty | None = field(default=None, metadata=OMIT_NONE)


QuestionMetrics = NoulMetrics | ChoiceMetrics | ScoreMetrics


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
