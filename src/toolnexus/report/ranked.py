"""The choice accumulator, and what choice and score share (``RankedStats``; the score
accumulator is :mod:`.levels`): a probability per option, a top-1 pick, a confusion matrix over
the options in first-seen order (see :mod:`.accumulators` for what every type counts).

Per labelled answer they keep the arrays the metrics are computed over: the label and the pick
as class indices, the pick's probability and the probability row over the classes (in
first-seen order; a row is as long as the class list was when it was counted).
"""

from __future__ import annotations

import operator
from array import array
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any, NamedTuple

from ..metrics import (
    DEFAULT_DEFINITIONS,
    MetricDefinitions,
    ProbabilityRows,
    Reliability,
    ReliabilityBin,
    accuracy_score,
    column,
    confusion_matrix,
    macro_f1_from_confusion,
    multiclass_brier_score,
    multiclass_log_loss,
    padded,
    reliability,
)
from .accumulators import QuestionStats, _share
from .extras import (
    Defined,
    LabelledArrays,
    choice_coverage,
    ece_uncertainty,
    option_calibration,
)
from .fieldchecks import (
    LabelError,
    RecordError,
    _confidence,
    _probabilities,
    _shown,
)
from .figures import EceUncertainty
from .model import (
    AccuracySplit,
    ChoiceDistribution,
    ChoiceMetrics,
    Confusion,
    Count,
    NearUniformSplit,
)

__all__ = ["ChoiceStats", "RankedStats"]


class RankedStats(QuestionStats):
    """Shared by choice and score: a probability per option, a top-1 pick, a confusion matrix
    over the options in first-seen order."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.options: dict[str, None] = {}
        self._scanned = -1
        self.counts: Counter[str] = Counter()
        #: every class met (an option, or a pick outside its own probabilities) -> its index
        self.classes: dict[str, int] = {}
        self._row_names: tuple[str, ...] = ()
        self._row_direct = False
        # per labelled answer: label and pick (class indices), the pick's probability, and
        # the probability row (row i is y_prob_values[y_prob_ends[i - 1]:y_prob_ends[i]])
        self.y_true = array("l")
        self.y_pred = array("l")
        self.p_pick = array("d")
        self.y_prob_values = array("d")
        self.y_prob_ends = array("q")
        self._labelled_cache: tuple[int, _Labelled] | None = None

    def _see_options(self, probs: Mapping[str, float]) -> None:
        """Add options first seen in ``probs`` (callers skip this while the record has as
        many options as the last one scanned and the pick is known)."""
        for k in probs:
            if k not in self.options:
                self.options[k] = None
        self._scanned = len(probs)

    def _class(self, name: str) -> int:
        index = self.classes.get(name)
        if index is None:
            index = self.classes[name] = len(self.classes)
        return index

    def merge(self, other: Any) -> None:
        super().merge(other)
        for k in other.options:
            self.options.setdefault(k)
        self._scanned = -1
        self.counts.update(other.counts)
        remap = [self._class(name) for name in other.classes]
        base = len(self.y_prob_values)
        if remap == list(range(len(remap))):  # the same classes in the same order
            self.y_true.extend(other.y_true)
            self.y_pred.extend(other.y_pred)
            self.y_prob_values.extend(other.y_prob_values)
            self.y_prob_ends.extend(map(operator.add, other.y_prob_ends, repeat(base)))
        else:
            self.y_true.extend(remap[i] for i in other.y_true)
            self.y_pred.extend(remap[i] for i in other.y_pred)
            for row in ProbabilityRows(other.y_prob_values, other.y_prob_ends):
                moved = [0.0] * (max(remap[: len(row)], default=-1) + 1)
                for i, p in enumerate(row):
                    moved[remap[i]] = p
                self.y_prob_values.extend(moved)
                self.y_prob_ends.append(len(self.y_prob_values))
        self.p_pick.extend(other.p_pick)
        self._row_names = ()

    def _score(self, probs: Mapping[str, float], picked: str, truth: str) -> None:
        """Keep one labelled answer."""
        self.labelled += 1
        names = tuple(probs)
        if names != self._row_names:
            for name in names:
                self._class(name)
            self._row_names = names
            self._row_direct = names == tuple(self.classes)[: len(names)]
        values = self.y_prob_values
        classes = self.classes
        if self._row_direct:
            values.extend(probs.values())
        else:
            values.extend([probs.get(c, 0.0) for c in classes])
        self.y_prob_ends.append(len(values))
        pick = classes.get(picked)
        if pick is None:
            pick = self._class(picked)
        self.y_pred.append(pick)
        true = classes.get(truth)
        self.y_true.append(self._class(truth) if true is None else true)
        self.p_pick.append(probs.get(picked, 0.0))

    def probabilities(self, answer: Mapping[str, Any]) -> Mapping[str, float]:
        probs: Mapping[str, float] = answer["probabilities"]
        return probs

    def _finish(self) -> _Labelled:
        """The labelled arrays in the form the metrics take, built once per count."""
        if self._labelled_cache is None or self._labelled_cache[0] != self.labelled:
            rows = ProbabilityRows(self.y_prob_values, self.y_prob_ends)
            import numpy as np  # a labelled finish: the metrics take numpy

            correct = np.array(self.y_true) == np.array(self.y_pred)
            bins = reliability(correct, self.p_pick)
            self._labelled_cache = (self.labelled, _Labelled(rows, correct, bins))
        return self._labelled_cache[1]

    def _label_indices(self, labels: Sequence[str]) -> list[int]:
        """Class indices of ``labels``; a label no answer met gets an index nothing has."""
        return [self.classes.get(name, -1 - i) for i, name in enumerate(labels)]

    def _confusion(self, labels: list[str]) -> Confusion:
        matrix = confusion_matrix(self.y_true, self.y_pred, self._label_indices(labels))
        return Confusion(tuple(labels), matrix)

    def _ece(self) -> float | None:
        return self._reliability().ece()

    def _reliability(self) -> Reliability:
        return self._finish().bins

    def _ece_uncertainty(
        self, figures: Defined | None, d: MetricDefinitions
    ) -> EceUncertainty | None:
        """The top-1 ECE's interval and floor: correctness against the pick's probability
        (or the definitions' own, ``figures``)."""
        if figures is not None:
            return figures.ece_uncertainty
        return ece_uncertainty(self._finish().correct, self.p_pick, d)

    def labelled_arrays(self) -> LabelledArrays:
        import numpy as np

        finish = self._finish()
        return LabelledArrays(
            np.asarray(finish.correct, dtype=np.float64),
            np.array(self.p_pick, dtype=np.float64),
            padded(finish.rows, len(self.classes)),
            np.array(self.y_true, dtype=np.intp),
            [self.classes[o] for o in self.options if o in self.classes],
        )

    def _brier(self) -> float | None:
        return multiclass_brier_score(self.y_true, self._finish().rows)

    def _log_loss(self) -> float | None:
        return multiclass_log_loss(self.y_true, self._finish().rows)

    def reliability(
        self, definitions: MetricDefinitions = DEFAULT_DEFINITIONS
    ) -> tuple[ReliabilityBin, ...]:
        if definitions.historic(self.type):
            return self._reliability().bins()
        return self.figures(definitions, False).reliability


class _Labelled(NamedTuple):
    rows: ProbabilityRows
    #: per labelled answer, whether its pick is its label (a numpy bool array)
    correct: Sequence[bool]
    bins: Reliability


class ChoiceStats(RankedStats):
    type = "choice"

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.near_uniform = array("b")  # per labelled answer

    def add(self, answer: Mapping[str, Any], label: str | None, sid: str = "") -> None:
        rec = answer.get("recalibrated")
        if rec is not None:
            answer = self._recalibrated(answer, rec, label, sid)
        self.count(
            answer["choice"],
            answer["probabilities"],
            answer.get("confidence"),
            answer.get("near_uniform"),
            answer.get("flags"),
            label,
            sid,
        )

    def count(
        self,
        choice: Any,
        probs: Any,
        confidence: Any,
        near_uniform: Any,
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
        if len(probs) != self._scanned or choice not in self.options:
            if type(choice) is not str:
                raise RecordError(f"choice is {_shown(choice)}, not an option name")
            self._see_options(probs)
        self.counts[choice] += 1
        if type(confidence) is not float or not 0.0 <= confidence <= 1.0:
            confidence = _confidence(confidence)
        if confidence is not None:
            self.confidences.append(confidence)
        if label is None:
            return
        if label not in self.options:
            self._see_options(probs)
            if label not in self.options:
                raise LabelError(
                    f"question {self.key!r}: {label!r} is not one of its options "
                    f"({', '.join(self.options)})"
                )
        if flags and "invalid" in flags:
            self.labelled_invalid += 1
            return
        self._score(probs, choice, label)
        self.near_uniform.append(bool(near_uniform))

    def merge(self, other: Any) -> None:
        super().merge(other)
        self.near_uniform.extend(other.near_uniform)

    def category(self, answer: Mapping[str, Any]) -> Any:
        return answer["choice"]

    def distribution(self) -> ChoiceDistribution:
        names = list(self.options) + [c for c in self.counts if c not in self.options]
        return ChoiceDistribution(
            {o: Count(self.counts[o], _share(self.counts[o], self.n)) for o in names}
        )

    def _split(self, near_uniform: bool) -> AccuracySplit:
        """Accuracy over the labelled answers that were (or were not) near-uniform."""
        import numpy as np

        mask = np.array(self.near_uniform, dtype=bool)
        if not near_uniform:
            mask = ~mask
        y_true = np.array(self.y_true)[mask]
        return AccuracySplit(len(y_true), accuracy_score(y_true, np.array(self.y_pred)[mask]))

    def metrics(
        self,
        target_precision: float | None = None,
        intervals: bool = True,
        definitions: MetricDefinitions = DEFAULT_DEFINITIONS,
    ) -> ChoiceMetrics:
        figures, floored, refit = self._defined(definitions, intervals)
        loss = self._log_loss()
        options = list(self.options)
        confusion = self._confusion(options)
        finish = self._finish()
        rows = finish.rows
        # an option offered only in unlabelled answers has no class: it reads 0 everywhere
        index = {o: self.classes.get(o, -1) for o in options}
        columns = {o: column(rows, index[o]) for o in options}
        return ChoiceMetrics(
            accuracy=accuracy_score(self.y_true, self.y_pred),
            brier=self._brier(),
            log_loss=loss,
            nll=loss if definitions.log_floor is None else floored,
            ece=self._ece() if figures is None else figures.ece,
            macro_f1=macro_f1_from_confusion(confusion.matrix),
            confusion=confusion,
            accuracy_by_near_uniform=NearUniformSplit(self._split(True), self._split(False)),
            ece_uncertainty=self._ece_uncertainty(figures, definitions) if intervals else None,
            per_option=option_calibration(self.y_true, columns, index),
            accuracy_coverage=choice_coverage(finish.correct, self.p_pick),
            temperature=refit,
        )
