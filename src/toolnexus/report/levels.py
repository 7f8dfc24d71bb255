"""The score accumulator: a point on an ordered rubric (seed 003: level, label, levels), over
:class:`~.ranked.RankedStats`'s probability per level, top-1 pick and confusion matrix. Per labelled
answer it also keeps the labelled level, the level picked and the expected score: what
accuracy, within-one, MAE and the RPS are computed over.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from typing import Any

from ..core import SCORE_CONFIDENCE_FORMULAS, level_label, score_confidence_fits
from ..metrics import (
    DEFAULT_DEFINITIONS,
    MetricDefinitions,
    accuracy_score,
    in_order_sum,
    mean_absolute_error,
    within_one,
)
from .accumulators import _LEVEL_KEYS, _mean, _share
from .extras import rps_in_level_order
from .fieldchecks import (
    LabelError,
    RecordError,
    _confidence,
    _probabilities,
    _shown,
)
from .model import Count, LevelCount, ScoreDistribution, ScoreMetrics
from .ranked import RankedStats

__all__ = ["ScoreStats"]


class ScoreStats(RankedStats):
    type = "score"

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.legend: dict[str, str] = {}
        #: every answer's expected score, in file order (see ``confidences``)
        self.scores = array("d")
        # per labelled answer: the labelled level, the level picked, the expected score
        self.y_level = array("b")
        self.level_pick = array("b")
        self.y_score = array("d")
        self._label_cache: dict[str, int] = {}
        self._legend_pending = False
        #: answers with a confidence, and how many of them fit each known score confidence
        #: formula (``consistency.SCORE_CONFIDENCE_FORMULAS``, issue 33)
        self.fitted = 0
        self.fits = [0] * len(SCORE_CONFIDENCE_FORMULAS)

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

    def add(self, answer: Mapping[str, Any], label: str | None, sid: str = "") -> None:
        rec = answer.get("recalibrated")
        if rec is not None:
            answer = self._recalibrated(answer, rec, label, sid)
        self.count(
            answer["probabilities"],
            answer["level"],
            answer.get("legend"),
            answer["score"],
            answer.get("confidence"),
            answer.get("flags"),
            label,
            sid,
        )

    def count(
        self,
        probs: Any,
        level: Any,
        legend: Any,
        score: Any,
        confidence: Any,
        flags: Any,
        label: str | None,
        sid: str,
    ) -> None:
        """One answer given by its fields (what :meth:`add` reads from an answer object, and
        a Parquet run's columns hold)."""
        self.n += 1
        if flags:
            self._count_flags(flags, sid)
        _probabilities(probs)
        if type(level) is not int or not 0 <= level < len(_LEVEL_KEYS):
            raise RecordError(f"level is {_shown(level)}, not a level index 0..9")
        picked = _LEVEL_KEYS[level]
        if len(probs) != self._scanned or picked not in self.options:
            self._see_options(probs)
        if self._legend_pending:
            legend = legend or {}
            for k in self.options:
                # seed 003: a label is always a string from the question's levels, so a
                # structured level ({label, description}) is shown and matched by its label
                self.legend.setdefault(k, level_label(legend.get(k, k)))
            self._legend_pending = False
        if type(score) is not float or not 0.0 <= score <= 9.0:
            score = _score_value(score)
        self.counts[picked] += 1
        self.scores.append(score)
        if type(confidence) is not float or not 0.0 <= confidence <= 1.0:
            confidence = _confidence(confidence)
        if confidence is not None:
            self.confidences.append(confidence)
            ordered = [probs[k] for k in sorted(probs, key=lambda k: (len(k), k))]
            self.fit(score_confidence_fits(ordered, confidence))
        if label is None:
            return
        y = self._label_cache.get(label)
        if y is None:
            y = self._level_of(label)
        if flags and "invalid" in flags:
            self.labelled_invalid += 1
            return
        self._score(probs, picked, _LEVEL_KEYS[y])
        self.y_level.append(y)
        self.level_pick.append(level)
        self.y_score.append(score)

    def fit(self, fits: tuple[bool, ...], answers: int = 1) -> None:
        """Count ``answers`` answers whose confidence fits each formula as ``fits`` says."""
        self.fitted += answers
        for i, fit in enumerate(fits):
            self.fits[i] += answers * fit

    def merge(self, other: Any) -> None:
        super().merge(other)
        self.fitted += other.fitted
        self.fits = [a + b for a, b in zip(self.fits, other.fits, strict=True)]
        for k, v in other.legend.items():
            self.legend.setdefault(k, v)
        self.scores.extend(other.scores)
        self.y_level.extend(other.y_level)
        self.level_pick.extend(other.level_pick)
        self.y_score.extend(other.y_score)

    def category(self, answer: Mapping[str, Any]) -> Any:
        return answer["level"]

    def _levels(self) -> list[str]:
        return sorted(set(self.options) | set(self.counts), key=lambda k: (len(k), k))

    def distribution(self) -> ScoreDistribution:
        return ScoreDistribution(
            {
                k: LevelCount(self.legend.get(k, k), self.counts[k], _share(self.counts[k], self.n))
                for k in self._levels()
            },
            _mean(in_order_sum(self.scores), self.n),
            {
                name: Count(n, _share(n, self.fitted))
                for name, n in zip(SCORE_CONFIDENCE_FORMULAS, self.fits, strict=True)
            },
        )

    def metrics(
        self,
        target_precision: float | None = None,
        intervals: bool = True,
        definitions: MetricDefinitions = DEFAULT_DEFINITIONS,
    ) -> ScoreMetrics:
        figures, floored, refit = self._defined(definitions, intervals)
        loss = self._log_loss()
        top = max((int(k) for k in self.options), default=-1)
        columns = [self.classes.get(str(k), -1) for k in range(top + 1)]
        return ScoreMetrics(
            accuracy=accuracy_score(self.y_level, self.level_pick),
            within_one=within_one(self.y_level, self.level_pick),
            mae=mean_absolute_error(self.y_level, self.y_score),
            brier=self._brier(),
            log_loss=loss,
            nll=loss if definitions.log_floor is None else floored,
            ece=self._ece() if figures is None else figures.ece,
            confusion=self._confusion(self._levels()),
            rps=rps_in_level_order(
                self.y_level, self._finish().rows, columns, self._finish().rows.width
            ),
            ece_uncertainty=self._ece_uncertainty(figures, definitions) if intervals else None,
            temperature=refit,
        )


def _score_value(score: Any) -> float:
    if type(score) is int and 0 <= score <= 9:
        return float(score)
    raise RecordError(f"score is {_shown(score)}, not an expected level in [0, 9]")
