"""Streaming statistics over one question's answers: what every type counts, and the noul
accumulator. A record's answer is counted and dropped; only counters and, per labelled answer,
the ``(y_true, y_prob)`` arrays that every metric of :mod:`.metrics` is computed over are kept.

Every accumulator can ``merge`` the same accumulator of a later chunk of the run
(:mod:`.reader` counts chunks side by side). A field that ``toolnexus batch`` never writes is a
:class:`RecordError`, checked on the hot path with cheap type and range tests (the checks and
the errors are :mod:`.fieldchecks`'). Choice and score live in :mod:`.ranked`.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from ..core import FLAGS
from ..metrics import (
    DEFAULT_DEFINITIONS,
    N_BINS,
    MetricDefinitions,
    Reliability,
    ReliabilityBin,
    Threshold,
    accuracy_score,
    brier_score_loss,
    in_order_sum,
    log_loss,
    reliability,
    roc_auc_score,
    threshold_for_precision,
)
from .extras import (
    Defined,
    LabelledArrays,
    defined_figures,
    ece_uncertainty,
    nll,
    noul_threshold_pair,
    noul_threshold_table,
    temperature,
)
from .fieldchecks import LabelError, RecordError, _probability, _shown
from .model import (
    BandPrecision,
    Count,
    Distribution,
    FlagCount,
    HistogramBin,
    NoulBands,
    NoulDistribution,
    NoulMetrics,
    QuestionMetrics,
    QuestionReport,
    Recalibration,
)

__all__ = [
    "AUTO_INTERVALS_MAX",
    "BANDS",
    "NoulStats",
    "OtherStats",
    "QuestionStats",
]

BANDS = ("yes", "no", "uncertain")
_BAND_INDEX: dict[Any, int] = {b: i for i, b in enumerate(BANDS)}
#: Score level keys on the wire, by level index (a rubric has at most 10 levels).
_LEVEL_KEYS = tuple(str(i) for i in range(10))
#: The flags a report counts per question, in the renderer's order: every flag of
#: ``validation.FLAGS`` but ``invalid``, which the report counts as invalid answers. The first
#: three keep the order reports have always printed; every flag added to ``FLAGS`` after them
#: follows in ``FLAGS`` order, so a new flag is written once, there.
REPORT_FLAGS = (
    "near-uniform",
    "uncertain",
    "uncalibrated",
    *(f for f in FLAGS if f not in ("near-uniform", "uncertain", "uncalibrated", "invalid")),
)
#: How many ids of a flag's first answers are kept (``--fail-on`` names them).
FIRST_IDS = 5
#: ``report``'s default computes an ECE's interval and floor up to this many labelled answers
#: (``--intervals`` at any count, ``--no-intervals`` never).
AUTO_INTERVALS_MAX = 20_000
_TRUTH = {"true": 1, "yes": 1, "1": 1, "false": 0, "no": 0, "0": 0}


def _share(n: int, total: int) -> float | None:
    return n / total if total else None


def _mean(total: float, n: int) -> float | None:
    return total / n if n else None


def _band(band: Any) -> int:
    if band is None:
        return len(BANDS)
    raise RecordError(f"band is {_shown(band)}, not yes, no or uncertain")


class QuestionStats:
    """What every question type counts: answers, invalid answers, flags, confidence."""

    type = ""

    def __init__(self, key: str) -> None:
        self.key = key
        self.n = 0
        self.invalid = 0
        self.flags: Counter[str] = Counter()
        #: per flag, the ids of its first FIRST_IDS answers in file order
        self.flag_ids: dict[str, list[str]] = {}
        #: every answer's confidence, in file order: the mean is one sum in record order,
        #: the same however the run was cut in chunks (JSONL bytes, Parquet row groups)
        self.confidences = array("d")
        self.labelled = 0
        #: labelled answers flagged invalid: counted here, left out of every probability
        #: metric (issue 47: "refused and invalid answers are left out ... and counted")
        self.labelled_invalid = 0
        #: a recalibrated run: the wire's answers, counted apart (``None`` until one is met)
        self.wire: Any = None
        #: answers that carried recalibrated probabilities
        self.recalibrated = 0

    def add(self, answer: Mapping[str, Any], label: str | None, sid: str = "") -> None:
        """Count one answer of the record whose id is ``sid``, against ``label``."""
        raise NotImplementedError

    def merge(self, other: Any) -> None:
        """Add the counts of ``other`` (the same question, counted over a later chunk of the
        run). Counts and the labelled arrays are joined in file order, so the result does not
        depend on how many processes counted the chunks."""
        self.n += other.n
        self.invalid += other.invalid
        self.flags.update(other.flags)
        for f, ids in other.flag_ids.items():
            mine = self.flag_ids.setdefault(f, [])
            mine.extend(ids[: FIRST_IDS - len(mine)])
        self.confidences.extend(other.confidences)
        self.labelled += other.labelled
        self.labelled_invalid += other.labelled_invalid
        self.recalibrated += other.recalibrated
        if other.wire is not None:
            if self.wire is None:
                self.wire = type(other.wire)(self.key)
            self.wire.merge(other.wire)

    def _count_common(self, answer: Mapping[str, Any], sid: str) -> None:
        """The answer itself and its flags: every type counts these."""
        self.n += 1
        flags = answer.get("flags")
        if flags:
            self._count_flags(flags, sid)

    def _count_flags(self, flags: Iterable[str], sid: str) -> None:
        if type(flags) is not list:
            raise RecordError(f"flags is {_shown(flags)}, not a list of flag names")
        counts = self.flags
        for f in flags:
            if type(f) is not str:
                raise RecordError(f"flags holds {_shown(f)}, not a flag name")
            n = counts[f] + 1
            counts[f] = n
            if n <= FIRST_IDS:
                self.flag_ids.setdefault(f, []).append(sid)
            if f == "invalid":
                self.invalid += 1

    def distribution(self) -> Distribution | None:
        return None

    def metrics(
        self,
        target_precision: float | None = None,
        intervals: bool = True,
        definitions: MetricDefinitions = DEFAULT_DEFINITIONS,
    ) -> QuestionMetrics | None:
        """The metrics against the labels (only called with at least one label);
        ``target_precision`` asks a noul for its threshold search, ``intervals`` for each
        ECE's bootstrap interval and noise floor, ``definitions`` which ECE, floor and
        temperature (issue 47)."""
        return None

    def reliability(
        self, definitions: MetricDefinitions = DEFAULT_DEFINITIONS
    ) -> tuple[ReliabilityBin, ...]:
        return ()

    def labelled_arrays(self) -> LabelledArrays | None:
        """The labelled answers as the definitions' figures read them (``None``: a type
        without probabilities)."""
        return None

    def arrays(self) -> LabelledArrays | None:
        """:meth:`labelled_arrays`, built once per count (the metrics, the reliability bins
        and the pooled block read them)."""
        cached: tuple[int, LabelledArrays | None] | None = self.__dict__.get("_arrays")
        if cached is None or cached[0] != self.labelled:
            cached = self.__dict__["_arrays"] = (self.labelled, self.labelled_arrays())
        return cached[1]

    def figures(self, d: MetricDefinitions, intervals: bool) -> Defined:
        """:func:`.extras.defined_figures` of this question under ``d``, computed once per
        count (the bins of a report with intervals are those of its metrics)."""
        cache: dict[Any, Defined] = self.__dict__.setdefault("_figures", {})
        for key in ((self.labelled, d, intervals), (self.labelled, d, True)):
            if key in cache:
                return cache[key]
        a = self.arrays()
        assert a is not None, "called for a type with probabilities"
        cache[(self.labelled, d, intervals)] = found = defined_figures(
            a, d.of(self.type), d, intervals
        )
        return found

    def _defined(
        self, definitions: MetricDefinitions, intervals: bool
    ) -> tuple[Defined | None, float | None, float | None]:
        """Under non-historic definitions: the ECE figures; and the floored ``nll`` (``None``:
        ``log_loss`` is the nll) and the refit temperature, when asked for."""
        d = definitions
        if d.historic(self.type) and d.log_floor is None and not d.fit_temperature:
            return None, None, None
        a = self.arrays()
        if a is None:
            return None, None, None
        figures = None
        if not d.historic(self.type):
            figures = self.figures(d, intervals)
        floored = nll(a, d) if d.log_floor is not None else None
        return figures, floored, temperature(a, d) if d.fit_temperature else None

    def category(self, answer: Mapping[str, Any]) -> Any:
        """What counts as "the answer changed" between two runs."""
        return None

    def probabilities(self, answer: Mapping[str, Any]) -> Mapping[str, float]:
        return {}

    def _recalibrated(
        self, answer: Mapping[str, Any], rec: Any, label: str | None, sid: str
    ) -> Mapping[str, Any]:
        """An answer recalibrated by ``--calibration``: the wire's answer is counted by the
        wire's own accumulator, and the answer this one measures is the wire's with the
        recalibrated fields (``noul``, or ``probabilities`` and ``confidence``) put in."""
        if type(rec) is not dict:
            raise RecordError(f"recalibrated is {_shown(rec)}, not an object")
        wire = {k: v for k, v in answer.items() if k != "recalibrated"}
        if self.wire is None:
            self.wire = type(self)(self.key)
        self.wire.add(wire, label, sid)
        self.recalibrated += 1
        return {**wire, **rec}

    def report(
        self,
        errors: Mapping[str, int],
        target_precision: float | None = None,
        intervals: bool | None = None,
        definitions: MetricDefinitions = DEFAULT_DEFINITIONS,
    ) -> QuestionReport:
        """This question over the run whose error records by code are ``errors``; ``intervals``
        ``None``: each ECE's interval and floor while the labelled answers are at most
        :data:`AUTO_INTERVALS_MAX` (where a bare ECE misleads; far past it the interval is
        narrow and the floor near 0, and the resampling is what a long report would wait for)."""
        if intervals is None:
            intervals = self.labelled <= AUTO_INTERVALS_MAX
        d = definitions
        recalibration = None
        if self.wire is not None:
            w = self.wire
            recalibration = Recalibration(
                self.recalibrated,
                w.metrics(target_precision, intervals, d) if w.labelled else None,
                w.reliability(d) if w.labelled else (),
            )
        return QuestionReport(
            type=self.type,
            n=self.n,
            errors=dict(sorted(errors.items())),
            invalid=self.invalid,
            distribution=self.distribution(),
            flags={
                f: FlagCount(
                    self.flags[f], _share(self.flags[f], self.n), tuple(self.flag_ids.get(f, ()))
                )
                for f in REPORT_FLAGS
            },
            mean_confidence=_mean(in_order_sum(self.confidences), len(self.confidences)),
            labelled=self.labelled,
            labelled_invalid=self.labelled_invalid,
            metrics=self.metrics(target_precision, intervals, d) if self.labelled else None,
            reliability=self.reliability(d) if self.labelled else (),
            invalid_ids=tuple(self.flag_ids.get("invalid", ())),
            recalibrated=recalibration,
        )


class OtherStats(QuestionStats):
    """A type the library does not model (``raw: true``): counted, not judged."""

    def __init__(self, key: str, qtype: str) -> None:
        super().__init__(key)
        self.type = qtype

    def add(self, answer: Mapping[str, Any], label: str | None, sid: str = "") -> None:
        self._count_common(answer, sid)


class NoulStats(QuestionStats):
    type = "noul"

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.hist = [0] * N_BINS
        self.band_n = [0] * (len(BANDS) + 1)  # yes, no, uncertain, anything else
        #: per labelled answer, its label and its p: what every metric is computed over
        self.y_true = array("b")
        self.y_prob = array("d")
        self.band_truth = [0] * (2 * len(BANDS) + 2)  # band index * 2 + label
        self._bins: tuple[int, Reliability] | None = None

    def _truth(self, label: str) -> int:
        y = _TRUTH.get(label.lower())
        if y is None:
            raise LabelError(
                f"question {self.key!r} is noul: label true/false (yes/no, 1/0), got {label!r}"
            )
        return y

    # The hot path of a report: one call per answer, so bins and counters are inlined here.
    def add(self, answer: Mapping[str, Any], label: str | None, sid: str = "") -> None:
        rec = answer.get("recalibrated")
        if rec is not None:
            answer = self._recalibrated(answer, rec, label, sid)
        self.count(answer["noul"], answer.get("band"), answer.get("flags"), label, sid)

    def count(self, p: Any, band: Any, flags: Any, label: str | None, sid: str) -> None:
        """One answer given by its fields (what :meth:`add` reads from an answer object, and
        a Parquet run's columns hold)."""
        self.n += 1
        if flags:
            self._count_flags(flags, sid)
        if type(p) is not float or not 0.0 <= p <= 1.0:
            p = _probability(p, "noul")
        b = int(p * N_BINS)  # bin_index, inlined
        if b >= N_BINS:
            b = N_BINS - 1
        elif b < 0:
            b = 0
        self.hist[b] += 1
        band = _BAND_INDEX.get(band, len(BANDS)) if type(band) is str else _band(band)
        self.band_n[band] += 1
        if label is None:
            return
        y = _TRUTH.get(label)
        if y is None:
            y = self._truth(label)
        if flags and "invalid" in flags:
            self.labelled_invalid += 1
            return
        self.labelled += 1
        self.y_prob.append(p)
        self.y_true.append(y)
        self.band_truth[band * 2 + y] += 1

    def merge(self, other: Any) -> None:
        super().merge(other)
        for i, n in enumerate(other.hist):
            self.hist[i] += n
        for i, n in enumerate(other.band_n):
            self.band_n[i] += n
        for i, n in enumerate(other.band_truth):
            self.band_truth[i] += n
        self.y_prob.extend(other.y_prob)
        self.y_true.extend(other.y_true)

    def category(self, answer: Mapping[str, Any]) -> Any:
        return answer.get("band")

    def probabilities(self, answer: Mapping[str, Any]) -> Mapping[str, float]:
        return {"yes": answer["noul"]}

    def distribution(self) -> NoulDistribution:
        return NoulDistribution(
            histogram=tuple(
                HistogramBin(b / N_BINS, (b + 1) / N_BINS, self.hist[b]) for b in range(N_BINS)
            ),
            bands={
                b: Count(self.band_n[i], _share(self.band_n[i], self.n))
                for i, b in enumerate(BANDS)
            },
        )

    def labelled_arrays(self) -> LabelledArrays:
        return LabelledArrays.of_noul(self.y_true, self.y_prob)

    def metrics(
        self,
        target_precision: float | None = None,
        intervals: bool = True,
        definitions: MetricDefinitions = DEFAULT_DEFINITIONS,
    ) -> NoulMetrics:
        y_true, y_prob = self.y_true, self.y_prob
        figures, floored, refit = self._defined(definitions, intervals)
        loss = log_loss(y_true, y_prob)
        n = len(y_true)
        pos = sum(y_true)
        neg = n - pos
        truth = self.band_truth

        def bt(band: str, y: int) -> int:
            return truth[_BAND_INDEX[band] * 2 + y]

        said_yes = bt("yes", 1) + bt("yes", 0)
        said_no = bt("no", 1) + bt("no", 0)
        unsure = bt("uncertain", 1) + bt("uncertain", 0)
        return NoulMetrics(
            accuracy=accuracy_score(y_true, [p >= 0.5 for p in y_prob]),
            brier=brier_score_loss(y_true, y_prob),
            log_loss=loss,
            nll=loss if definitions.log_floor is None else floored,
            auroc=roc_auc_score(y_true, y_prob),
            ece=self._reliability().ece() if figures is None else figures.ece,
            bands=NoulBands(
                yes=BandPrecision(
                    said_yes, _share(bt("yes", 1), said_yes), _share(bt("yes", 1), pos)
                ),
                no=BandPrecision(said_no, _share(bt("no", 0), said_no), _share(bt("no", 0), neg)),
                uncertain=Count(unsure, _share(unsure, n)),
            ),
            threshold=None if target_precision is None else self.threshold(target_precision),
            ece_uncertainty=(
                None
                if not intervals
                else ece_uncertainty(y_true, y_prob, definitions)
                if figures is None
                else figures.ece_uncertainty
            ),
            threshold_table=noul_threshold_table(y_true, y_prob),
            thresholds=(
                None
                if target_precision is None
                else noul_threshold_pair(y_true, y_prob, target_precision)
            ),
            temperature=refit,
        )

    def threshold(self, target: float) -> Threshold:
        return threshold_for_precision(self.y_true, self.y_prob, target)

    def _reliability(self) -> Reliability:
        """The bins over the labelled answers, built once per count (ece and the bins)."""
        if self._bins is None or self._bins[0] != self.labelled:
            self._bins = (self.labelled, reliability(self.y_true, self.y_prob))
        return self._bins[1]

    def reliability(
        self, definitions: MetricDefinitions = DEFAULT_DEFINITIONS
    ) -> tuple[ReliabilityBin, ...]:
        if definitions.historic(self.type):
            return self._reliability().bins()
        return self.figures(definitions, False).reliability
