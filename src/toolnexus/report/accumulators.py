"""Streaming statistics over one question's answers: what every type counts, and the noul
accumulator. A record's answer is counted and dropped; only counters and the (probability,
label) pairs that AUROC and the threshold search need are kept.

Every accumulator can ``merge`` the same accumulator of a later chunk of the run
(:mod:`.reader` counts chunks side by side). A field that ``toolnexus batch`` never writes is a
:class:`RecordError`, checked on the hot path with cheap type and range tests. Choice and score
live in :mod:`.ranked`.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from .metrics import EPS, N_BINS, Reliability, auroc, threshold_for_precision

__all__ = [
    "BANDS",
    "LabelError",
    "NoulStats",
    "OtherStats",
    "QuestionStats",
    "RecordError",
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
        """The answer itself and its flags: every type counts these."""
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

    # The hot path of a report: one call per answer, so bins and counters are inlined here.
    def add(self, answer: Mapping[str, Any], label: str | None) -> None:
        self._count_common(answer)
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
