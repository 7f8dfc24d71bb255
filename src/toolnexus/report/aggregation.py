"""Streaming statistics over one run: counters per question, and the (probability, label) pairs
that AUROC and the threshold search need. A record is read, counted and dropped.

One accumulator per question type (:class:`NoulStats`, :class:`ChoiceStats`,
:class:`ScoreStats`; any other type only counts). ``RunStats`` walks a run's records, joins
each answer to its label by id, and, when a second run follows, keeps per id the little it
needs to say what changed (:mod:`.compare`).

Records come from ``toolnexus batch``: ``{"id", "model", "calibrated", "usage", "answers",
"flags", ...}`` or an error record ``{"id", "error": {"code", "message"}}``. Every accumulator
can ``merge`` the same accumulator of a later chunk of the run (:mod:`.reader` counts chunks
side by side); which records count (the last of a repeated id) is the reader's business.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .metrics import (
    EPS,
    N_BINS,
    Reliability,
    auroc,
    f1_from_confusion,
    threshold_for_precision,
)
from .runs import Labels, ReportInputError

__all__ = [
    "BANDS",
    "ChoiceStats",
    "LabelError",
    "NoulStats",
    "OtherStats",
    "QuestionStats",
    "RecordError",
    "RunStats",
    "ScoreStats",
    "record_id",
]

BANDS = ("yes", "no", "uncertain")
_BAND_INDEX: dict[Any, int] = {b: i for i, b in enumerate(BANDS)}
#: Score level keys on the wire, by level index (a rubric has at most 10 levels).
_LEVEL_KEYS = tuple(str(i) for i in range(10))
#: The flags a report counts per question, in the renderer's order.
REPORT_FLAGS = ("near-uniform", "uncertain", "uncalibrated")
_TRUTH = {"true": 1, "yes": 1, "1": 1, "false": 0, "no": 0, "0": 0}


class LabelError(Exception):
    """A label that does not fit its question (the caller adds the labels file and line)."""


class RecordError(ValueError):
    """A record field holding what ``toolnexus batch`` never writes (the caller adds the file,
    line and question key). Checked on the hot path with cheap type and range tests, so a
    hostile run is refused in words instead of being counted as garbage."""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _probability(value: Any, name: str) -> float:
    """The slow path of the inline ``type(v) is float and 0 <= v <= 1`` test: an integer 0 or 1
    is a probability too; anything else (a string, a bool, NaN, 7) is refused."""
    if type(value) is int and 0 <= value <= 1:
        return float(value)
    raise RecordError(f"{name} is {_shown(value)}, not a probability in [0, 1]")


def _probabilities(probs: Any) -> None:
    """``probabilities`` is an object of option name -> probability."""
    if type(probs) is not dict:
        raise RecordError(f"probabilities is {_shown(probs)}, not an object of probabilities")
    for k, v in probs.items():
        if type(v) is not float or not 0.0 <= v <= 1.0:
            _probability(v, f"probabilities[{k!r}]")


def _share(n: int, total: int) -> float | None:
    return n / total if total else None


def _mean(total: float, n: int) -> float | None:
    return total / n if n else None


def _band(band: Any) -> int:
    if band is None:
        return len(BANDS)
    raise RecordError(f"band is {_shown(band)}, not yes, no or uncertain")


def _confidence(conf: Any) -> float | None:
    return None if conf is None else _probability(conf, "confidence")


def _clip(p: float) -> float:
    return EPS if p < EPS else 1.0 - EPS if p > 1.0 - EPS else p


def _clipped_log(p: float) -> float:
    return math.log(_clip(p))


class QuestionStats:
    """What every question type counts: answers, invalid answers, flags, confidence."""

    type = ""

    def __init__(self, key: str) -> None:
        self.key = key
        self.n = 0
        self.invalid = 0
        self.flags: Counter[str] = Counter()
        self.conf_sum = 0.0
        self.conf_n = 0
        self.labelled = 0

    def add(self, answer: Mapping[str, Any], label: str | None) -> None:
        raise NotImplementedError

    def merge(self, other: Any) -> None:
        """Add the counts of ``other`` (the same question, counted over a later chunk of the
        run). Sums are added chunk by chunk in file order, so the result does not depend on
        how many processes counted the chunks."""
        self.n += other.n
        self.invalid += other.invalid
        self.flags.update(other.flags)
        self.conf_sum += other.conf_sum
        self.conf_n += other.conf_n
        self.labelled += other.labelled

    def _count_common(self, answer: Mapping[str, Any]) -> None:
        self.n += 1
        flags = answer.get("flags")
        if flags:
            self._count_flags(flags)

    def _count_flags(self, flags: Iterable[str]) -> None:
        if type(flags) is not list:
            raise RecordError(f"flags is {_shown(flags)}, not a list of flag names")
        for f in flags:
            if type(f) is not str:
                raise RecordError(f"flags holds {_shown(f)}, not a flag name")
            self.flags[f] += 1
            if f == "invalid":
                self.invalid += 1

    def distribution(self) -> dict[str, Any]:
        return {}

    def metrics(self) -> dict[str, Any]:
        return {}

    def reliability(self) -> list[dict[str, Any]]:
        return []

    def category(self, answer: Mapping[str, Any]) -> Any:
        """What counts as "the answer changed" between two runs."""
        return None

    def probabilities(self, answer: Mapping[str, Any]) -> Mapping[str, float]:
        return {}

    def to_json(self, errors: Mapping[str, int]) -> dict[str, Any]:
        return {
            "type": self.type,
            "n": self.n,
            "errors": dict(sorted(errors.items())),
            "invalid": self.invalid,
            "distribution": self.distribution(),
            "flags": {
                f: {"n": self.flags[f], "share": _share(self.flags[f], self.n)}
                for f in REPORT_FLAGS
            },
            "mean_confidence": _mean(self.conf_sum, self.conf_n),
            "labelled": self.labelled,
            "metrics": self.metrics() if self.labelled else {},
            "reliability": self.reliability() if self.labelled else [],
        }


class OtherStats(QuestionStats):
    """A type the library does not model (``raw: true``): counted, not judged."""

    def __init__(self, key: str, qtype: str) -> None:
        super().__init__(key)
        self.type = qtype

    def add(self, answer: Mapping[str, Any], label: str | None) -> None:
        self._count_common(answer)


class NoulStats(QuestionStats):
    type = "noul"

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.hist = [0] * N_BINS
        self.band_n = [0] * (len(BANDS) + 1)  # yes, no, uncertain, anything else
        self.ps = array("d")
        self.ys = array("b")
        self.rel = Reliability()
        self.band_truth = [0] * (2 * len(BANDS) + 2)  # band index * 2 + label
        # accuracy, Brier and log loss, summed as labelled answers arrive (no second pass)
        self.hits = 0
        self.brier_sum = 0.0
        self.loss_sum = 0.0

    def _truth(self, label: str) -> int:
        y = _TRUTH.get(label.lower())
        if y is None:
            raise LabelError(
                f"question {self.key!r} is noul: label true/false (yes/no, 1/0), got {label!r}"
            )
        return y

    # The hot path of a report: one call per answer, so bins and counters are inlined.
    def add(self, answer: Mapping[str, Any], label: str | None) -> None:
        self.n += 1
        flags = answer.get("flags")
        if flags:
            self._count_flags(flags)
        p = answer["noul"]
        if type(p) is not float or not 0.0 <= p <= 1.0:
            p = _probability(p, "noul")
        b = int(p * N_BINS)  # bin_index, inlined
        if b >= N_BINS:
            b = N_BINS - 1
        elif b < 0:
            b = 0
        self.hist[b] += 1
        band = answer.get("band")
        band = _BAND_INDEX.get(band, len(BANDS)) if type(band) is str else _band(band)
        self.band_n[band] += 1
        if label is None:
            return
        y = _TRUTH.get(label)
        if y is None:
            y = self._truth(label)
        self.labelled += 1
        self.ps.append(p)
        self.ys.append(y)
        if (p >= 0.5) == bool(y):
            self.hits += 1
        self.brier_sum += (p - y) ** 2
        c = EPS if p < EPS else 1.0 - EPS if p > 1.0 - EPS else p  # clip p, then log c or 1 - c
        self.loss_sum -= math.log(c) if y else math.log(1.0 - c)
        rel = self.rel
        rel.n[b] += 1
        rel.sum_p[b] += p
        rel.sum_y[b] += y
        self.band_truth[band * 2 + y] += 1

    def merge(self, other: Any) -> None:
        super().merge(other)
        for i, n in enumerate(other.hist):
            self.hist[i] += n
        for i, n in enumerate(other.band_n):
            self.band_n[i] += n
        for i, n in enumerate(other.band_truth):
            self.band_truth[i] += n
        self.ps.extend(other.ps)
        self.ys.extend(other.ys)
        self.rel.merge(other.rel)
        self.hits += other.hits
        self.brier_sum += other.brier_sum
        self.loss_sum += other.loss_sum

    def category(self, answer: Mapping[str, Any]) -> Any:
        return answer.get("band")

    def probabilities(self, answer: Mapping[str, Any]) -> Mapping[str, float]:
        return {"yes": answer["noul"]}

    def distribution(self) -> dict[str, Any]:
        return {
            "histogram": [
                {"lo": b / N_BINS, "hi": (b + 1) / N_BINS, "n": self.hist[b]} for b in range(N_BINS)
            ],
            "bands": {
                b: {"n": self.band_n[i], "share": _share(self.band_n[i], self.n)}
                for i, b in enumerate(BANDS)
            },
        }

    def metrics(self) -> dict[str, Any]:
        ps, ys = self.ps, self.ys
        n = len(ys)
        pos = sum(ys)
        neg = n - pos
        truth = self.band_truth

        def bt(band: str, y: int) -> int:
            return truth[_BAND_INDEX[band] * 2 + y]

        said_yes = bt("yes", 1) + bt("yes", 0)
        said_no = bt("no", 1) + bt("no", 0)
        unsure = bt("uncertain", 1) + bt("uncertain", 0)
        out: dict[str, Any] = {
            "accuracy": self.hits / n,
            "brier": self.brier_sum / n,
            "log_loss": self.loss_sum / n,
            "auroc": auroc(ps, ys),
            "ece": self.rel.ece(),
            "bands": {
                "yes": {
                    "n": said_yes,
                    "precision": _share(bt("yes", 1), said_yes),
                    "recall": _share(bt("yes", 1), pos),
                },
                "no": {
                    "n": said_no,
                    "precision": _share(bt("no", 0), said_no),
                    "recall": _share(bt("no", 0), neg),
                },
                "uncertain": {"n": unsure, "share": _share(unsure, n)},
            },
        }
        return out

    def threshold(self, target: float) -> dict[str, Any]:
        return threshold_for_precision(self.ps, self.ys, target).to_json()

    def reliability(self) -> list[dict[str, Any]]:
        return self.rel.bins()


class _Ranked(QuestionStats):
    """Shared by choice and score: a probability per option, a top-1 pick, a confusion matrix
    over the options in first-seen order."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.options: dict[str, None] = {}
        self._scanned = -1
        self.counts: Counter[str] = Counter()
        self.rel = Reliability()
        self.hits = 0
        self.brier_sum = 0.0
        self.loss_sum = 0.0
        self.confusion: Counter[tuple[str, str]] = Counter()

    def _see_options(self, probs: Mapping[str, float]) -> None:
        """Add options first seen in ``probs`` (callers skip this while the record has as
        many options as the last one scanned and the pick is known)."""
        for k in probs:
            if k not in self.options:
                self.options[k] = None
        self._scanned = len(probs)

    def merge(self, other: Any) -> None:
        super().merge(other)
        for k in other.options:
            self.options.setdefault(k)
        self._scanned = -1
        self.counts.update(other.counts)
        self.rel.merge(other.rel)
        self.hits += other.hits
        self.brier_sum += other.brier_sum
        self.loss_sum += other.loss_sum
        self.confusion.update(other.confusion)

    def _score(self, probs: Mapping[str, float], picked: str, truth: str) -> bool:
        """Count one labelled answer; True when the pick is right."""
        self.labelled += 1
        p_truth = probs.get(truth, 0.0)
        values = probs.values()
        # sum_k (p_k - y_k)^2 over the offered options, a missing option being 0
        self.brier_sum += sum(map(operator.mul, values, values)) - 2.0 * p_truth + 1.0
        c = EPS if p_truth < EPS else 1.0 - EPS if p_truth > 1.0 - EPS else p_truth
        self.loss_sum -= math.log(c)
        correct = picked == truth
        p = probs.get(picked, 0.0)
        b = int(p * N_BINS)  # bin_index, inlined
        if b >= N_BINS:
            b = N_BINS - 1
        elif b < 0:
            b = 0
        rel = self.rel
        rel.n[b] += 1
        rel.sum_p[b] += p
        if correct:
            rel.sum_y[b] += 1
            self.hits += 1
        self.confusion[(truth, picked)] += 1
        return correct

    def probabilities(self, answer: Mapping[str, Any]) -> Mapping[str, float]:
        probs: Mapping[str, float] = answer["probabilities"]
        return probs

    def _matrix(self, classes: list[str]) -> dict[str, Any]:
        return {
            "labels": classes,
            "matrix": [[self.confusion[(t, p)] for p in classes] for t in classes],
        }

    def _common_metrics(self) -> dict[str, Any]:
        n = self.labelled
        return {
            "accuracy": self.hits / n,
            "brier": self.brier_sum / n,
            "log_loss": self.loss_sum / n,
            "ece": self.rel.ece(),
        }

    def reliability(self) -> list[dict[str, Any]]:
        return self.rel.bins()


class ChoiceStats(_Ranked):
    type = "choice"

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.by_uniform = [0, 0, 0, 0]  # near_uniform * 2 + correct

    def add(self, answer: Mapping[str, Any], label: str | None) -> None:
        self.n += 1
        flags = answer.get("flags")
        if flags:
            self._count_flags(flags)
        choice = answer["choice"]
        probs = answer["probabilities"]
        _probabilities(probs)
        if len(probs) != self._scanned or choice not in self.options:
            if type(choice) is not str:
                raise RecordError(f"choice is {_shown(choice)}, not an option name")
            self._see_options(probs)
        self.counts[choice] += 1
        conf = answer.get("confidence")
        if type(conf) is not float or not 0.0 <= conf <= 1.0:
            conf = _confidence(conf)
        if conf is not None:
            self.conf_sum += conf
            self.conf_n += 1
        if label is None:
            return
        if label not in self.options:
            self._see_options(probs)
            if label not in self.options:
                raise LabelError(
                    f"question {self.key!r}: {label!r} is not one of its options "
                    f"({', '.join(self.options)})"
                )
        correct = self._score(probs, choice, label)
        self.by_uniform[2 * bool(answer.get("near_uniform")) + correct] += 1

    def merge(self, other: Any) -> None:
        super().merge(other)
        for i, n in enumerate(other.by_uniform):
            self.by_uniform[i] += n

    def category(self, answer: Mapping[str, Any]) -> Any:
        return answer["choice"]

    def distribution(self) -> dict[str, Any]:
        names = list(self.options) + [c for c in self.counts if c not in self.options]
        return {
            "options": {
                o: {"n": self.counts[o], "share": _share(self.counts[o], self.n)} for o in names
            }
        }

    def metrics(self) -> dict[str, Any]:
        classes = list(self.options)
        matrix = self._matrix(classes)
        out = self._common_metrics()
        out["macro_f1"] = f1_from_confusion(matrix["matrix"])
        out["confusion"] = matrix
        split = {}
        for name, flag in (("near_uniform", True), ("not_near_uniform", False)):
            right, wrong = self.by_uniform[2 * flag + 1], self.by_uniform[2 * flag]
            split[name] = {"n": right + wrong, "accuracy": _share(right, right + wrong)}
        out["accuracy_by_near_uniform"] = split
        return out


class ScoreStats(_Ranked):
    type = "score"

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.legend: dict[str, str] = {}
        self.score_sum = 0.0
        self.within = 0
        self.abs_err = 0.0
        self._label_cache: dict[str, int] = {}
        self._legend_pending = False

    def _level_of(self, label: str) -> int:
        level = self._label_cache.get(label)
        if level is not None:
            return level
        if label.isdigit() and label in self.options:
            level = int(label)
        else:
            matches = [int(k) for k, v in self.legend.items() if v == label]
            if not matches:
                levels = ", ".join(f"{k} {v}" for k, v in self.legend.items())
                raise LabelError(
                    f"question {self.key!r}: {label!r} is neither a level index nor a level "
                    f"label ({levels})"
                )
            level = matches[0]
        self._label_cache[label] = level
        return level

    def _see_options(self, probs: Mapping[str, float]) -> None:
        super()._see_options(probs)
        self._legend_pending = True

    def add(self, answer: Mapping[str, Any], label: str | None) -> None:
        self.n += 1
        flags = answer.get("flags")
        if flags:
            self._count_flags(flags)
        probs = answer["probabilities"]
        _probabilities(probs)
        level = answer["level"]
        if type(level) is not int or not 0 <= level < len(_LEVEL_KEYS):
            raise RecordError(f"level is {_shown(level)}, not a level index 0..9")
        picked = _LEVEL_KEYS[level]
        if len(probs) != self._scanned or picked not in self.options:
            self._see_options(probs)
        if self._legend_pending:
            legend = answer.get("legend") or {}
            for k in self.options:
                self.legend.setdefault(k, str(legend.get(k, k)))
            self._legend_pending = False
        score = answer["score"]
        if type(score) is not float or not 0.0 <= score <= 9.0:
            score = _score_value(score)
        self.counts[picked] += 1
        self.score_sum += score
        conf = answer.get("confidence")
        if type(conf) is not float or not 0.0 <= conf <= 1.0:
            conf = _confidence(conf)
        if conf is not None:
            self.conf_sum += conf
            self.conf_n += 1
        if label is None:
            return
        y = self._label_cache.get(label)
        if y is None:
            y = self._level_of(label)
        self._score(probs, picked, _LEVEL_KEYS[y])
        if -1 <= level - y <= 1:
            self.within += 1
        self.abs_err += abs(score - y)

    def merge(self, other: Any) -> None:
        super().merge(other)
        for k, v in other.legend.items():
            self.legend.setdefault(k, v)
        self.score_sum += other.score_sum
        self.within += other.within
        self.abs_err += other.abs_err

    def category(self, answer: Mapping[str, Any]) -> Any:
        return answer["level"]

    def _levels(self) -> list[str]:
        return sorted(set(self.options) | set(self.counts), key=lambda k: (len(k), k))

    def distribution(self) -> dict[str, Any]:
        return {
            "levels": {
                k: {
                    "label": self.legend.get(k, k),
                    "n": self.counts[k],
                    "share": _share(self.counts[k], self.n),
                }
                for k in self._levels()
            },
            "mean_score": _mean(self.score_sum, self.n),
        }

    def metrics(self) -> dict[str, Any]:
        n = self.labelled
        common = self._common_metrics()
        return {
            "accuracy": common["accuracy"],
            "within_one": self.within / n,
            "mae": self.abs_err / n,
            "brier": common["brier"],
            "log_loss": common["log_loss"],
            "ece": common["ece"],
            "confusion": self._matrix(self._levels()),
        }


def _score_value(score: Any) -> float:
    if type(score) is int and 0 <= score <= 9:
        return float(score)
    raise RecordError(f"score is {_shown(score)}, not an expected level in [0, 9]")


_TYPES: dict[str, type[QuestionStats]] = {
    "noul": NoulStats,
    "choice": ChoiceStats,
    "score": ScoreStats,
}


class RunStats:
    """Everything counted over one run file."""

    def __init__(
        self,
        path: str,
        labels: Labels | None = None,
        *,
        keep: bool = False,
    ) -> None:
        self.path = path
        self.labels = labels
        self.records = 0
        self.answered = 0
        self.labelled = 0
        self.errors: Counter[str] = Counter()
        self.models: Counter[Any] = Counter()
        self.uncalibrated = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost = 0.0
        self.cost_reported = 0
        self.questions: dict[str, QuestionStats] = {}
        #: with ``keep``: per question, id -> (category, probabilities) for a later comparison
        self.kept: dict[str, dict[str, tuple[Any, Mapping[str, float]]]] | None = (
            {} if keep else None
        )
        self.label_ids_seen: set[str] = set()
        #: per question key, resolved once: (stats, its bound add, its type, its label column
        #: in a labels row, 0 for none)
        self._plan: dict[
            str,
            tuple[QuestionStats, Callable[[Mapping[str, Any], str | None], None], str, int],
        ] = {}
        self._rows = labels.rows if labels is not None else {}

    def _question(self, key: str, answer: Mapping[str, Any]) -> QuestionStats:
        qtype = answer.get("type")
        if not isinstance(qtype, str):
            raise ValueError(f"answer {key!r} has no type")
        cls = _TYPES.get(qtype)
        st = cls(key) if cls is not None else OtherStats(key, qtype)
        self.questions[key] = st
        return st

    def add(self, record: Any, sid: str) -> None:
        """Count one record (a dict) whose id (as text) is ``sid``; raises
        :class:`RecordError` (or KeyError, TypeError, ValueError) on a malformed record. The hot
        path of a report: kept flat on purpose."""
        self.records += 1
        error = record.get("error")
        if error is not None:
            if type(error) is not dict or "code" not in error:
                raise RecordError(f"error is {_shown(error)}, not an object with a code")
            self.errors[str(error["code"])] += 1
            return
        answers = record["answers"]
        if type(answers) is not dict:
            raise RecordError(f"answers is {_shown(answers)}, not an object of answers by key")
        self.answered += 1
        model = record.get("model")
        if model is not None and type(model) is not str:
            raise RecordError(f"model is {_shown(model)}, not a model name")
        self.models[model] += 1
        if not record.get("calibrated"):
            self.uncalibrated += 1
        usage = record.get("usage")
        if usage:
            n_in = usage.get("input_tokens") if type(usage) is dict else None
            n_out = usage.get("output_tokens") if type(usage) is dict else None
            if (
                type(n_in) is int
                and type(n_out) is int
                and n_in >= 0
                and n_out >= 0
                and usage.get("cost") is None
            ):
                self.input_tokens += n_in
                self.output_tokens += n_out
            else:
                self._add_usage(usage)
        labelled = False
        plan = self._plan
        kept = self.kept
        row = self._rows.get(sid)
        for key, answer in answers.items():
            if type(answer) is not dict:
                raise RecordError(f"answer {key!r} is {_shown(answer)}, not an object")
            step = plan.get(key)
            if step is None:
                st = self._question(key, answer)
                column = self.labels.column(key) if self.labels is not None else None
                step = plan[key] = (st, st.add, st.type, column or 0)
            st, st_add, qtype, column = step
            if answer["type"] != qtype:
                raise RecordError(
                    f"answer {key!r} is {_shown(answer['type'])} here but {qtype} in earlier "
                    "records"
                )
            label = row[column] if row is not None and column else None
            if label:
                labelled = True
            else:
                label = None
            try:
                st_add(answer, label)
            except LabelError as e:
                assert self.labels is not None
                raise ReportInputError(f"{self.labels.where(sid)}: {e}") from None
            except KeyError as e:
                raise RecordError(f"answer {key!r} has no {e}") from None
            except (RecordError, TypeError, ValueError) as e:
                raise RecordError(f"answer {key!r}: {e}") from None
            if kept is not None:
                kept.setdefault(key, {})[sid] = (st.category(answer), st.probabilities(answer))
        if labelled:
            self.labelled += 1
            if kept is not None:
                self.label_ids_seen.add(sid)

    def _add_usage(self, usage: Any) -> None:
        if type(usage) is not dict:
            raise RecordError(f"usage is {_shown(usage)}, not an object")
        for name in ("input_tokens", "output_tokens"):
            n = usage.get(name)
            if n is None:
                continue
            if type(n) is not int or n < 0:
                raise RecordError(f"usage.{name} is {_shown(n)}, not a token count")
            if name == "input_tokens":
                self.input_tokens += n
            else:
                self.output_tokens += n
        cost = usage.get("cost")
        if cost is not None:
            if type(cost) not in (float, int) or not 0 <= cost < math.inf:
                raise RecordError(f"usage.cost is {_shown(cost)}, not a cost")
            self.cost += cost
            self.cost_reported += 1

    def detach(self) -> None:
        """Drop what only counting needs (the labels, the per-key plan) before this is sent to
        another process: a counted chunk travels without the labels file."""
        self.labels = None
        self._rows = {}
        self._plan = {}

    def merge(self, other: RunStats) -> None:
        """Add the counts of ``other``, the next chunk of the same run. Raises
        :class:`RecordError` when a question's type differs between the two (the caller reads
        the run in one piece to name the line)."""
        self.records += other.records
        self.answered += other.answered
        self.labelled += other.labelled
        self.errors.update(other.errors)
        self.models.update(other.models)
        self.uncalibrated += other.uncalibrated
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost += other.cost
        self.cost_reported += other.cost_reported
        self._plan = {}
        for key, st in other.questions.items():
            mine = self.questions.get(key)
            if mine is None:
                self.questions[key] = st
            elif mine.type != st.type:
                raise RecordError(f"answer {key!r} is {st.type} in one chunk, {mine.type} before")
            else:
                mine.merge(st)
        if self.kept is not None and other.kept is not None:
            for key, by_id in other.kept.items():
                self.kept.setdefault(key, {}).update(by_id)
        self.label_ids_seen |= other.label_ids_seen

    def summary(self) -> dict[str, Any]:
        """The run's line in the report's ``runs`` list."""
        return {
            "path": self.path,
            "records": self.records,
            "answered": self.answered,
            "labelled": self.labelled,
            "errors": dict(sorted(self.errors.items())),
            "models": {str(m): n for m, n in self.models.most_common()},
            "uncalibrated_records": self.uncalibrated,
            "usage": {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cost": self.cost if self.cost_reported else None,
                "cost_reported": self.cost_reported,
            },
        }

    def questions_json(self, target_precision: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, st in self.questions.items():
            block = st.to_json(self.errors)
            if target_precision is not None and isinstance(st, NoulStats) and st.labelled:
                block["metrics"]["threshold"] = st.threshold(target_precision)
            out[key] = block
        return out


def record_id(record: Any) -> str:
    """A record's id as text (batch counts ``7`` and ``"7"`` as one id)."""
    if type(record) is not dict:
        raise RecordError(f"a record is a JSON object, not {_shown(record)}")
    rid = record["id"]
    if type(rid) is str:
        return rid
    if type(rid) is int:
        return str(rid)
    raise RecordError(f"id is {_shown(rid)}, not a string or an integer")
