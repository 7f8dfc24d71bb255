"""Two runs side by side (before and after an edit), per question, over the ids both answered.

- ``changed``: ids whose answer changed: the choice option, the score level, the noul band.
- ``mean_abs_delta_p``: the mean distance between the two answers' distributions, as total
  variation ``0.5 * sum_k |p2_k - p1_k|`` (for a noul that is ``|p2 - p1|``; an option absent
  from one side counts 0).
- ``metric_deltas``: after minus before, for each scalar metric both runs have (labelled).
- ``top_changed``: the 10 ids whose distribution moved most (ties by id).

Streaming, so two runs of 100,000 records never hold 200,000 records: the first run leaves, per
question, a :class:`Snapshot` (per id its category and its probabilities, the option names
shared between ids, the values in one array); the second run is compared id by id as it is read
(:class:`Delta`) and keeps nothing per id but the current top 10.
"""

from __future__ import annotations

import heapq
import operator
from array import array
from collections.abc import Mapping
from typing import Any

from .model import (
    SCALAR_METRICS,
    ChangedId,
    Comparison,
    QuestionComparison,
    QuestionMetrics,
    QuestionReport,
)

__all__ = ["TOP_CHANGED", "Delta", "Snapshot", "compare_runs", "total_variation"]

TOP_CHANGED = 10
#: Moved ids held before the list is cut back to the top 10 (exact: the top 10 of all ids is
#: the top 10 of the tops).
_PRUNE_AT = 1024


def total_variation(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """``0.5 * sum_k |a_k - b_k|`` over the union of options (``b``'s order, then options only
    ``a`` has); a single-probability noul map ``{"yes": p}`` gives ``|a - b|``."""
    if len(a) == 1 and a.keys() == b.keys():
        ((k, p),) = a.items()
        return abs(b[k] - p)
    terms = [abs(v - a.get(k, 0.0)) for k, v in b.items()]
    terms += [abs(v) for k, v in a.items() if k not in b]
    return 0.5 * sum(terms)


class Snapshot:
    """One question of the first run, as little as a comparison needs: per id, its category
    and its probabilities."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self.categories: list[Any] = []
        self.names: list[tuple[str, ...]] = []  # per row; one tuple per distinct option set
        self.starts = array("q")  # per row: where its values begin
        self.values = array("d")
        self._interned: dict[tuple[str, ...], tuple[str, ...]] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, sid: str, category: Any, probs: Mapping[str, float]) -> None:
        names = tuple(probs)
        self.rows[sid] = len(self.categories)
        self.categories.append(category)
        self.names.append(self._interned.setdefault(names, names))
        self.starts.append(len(self.values))
        self.values.extend(probs.values())

    def distance(self, row: int, probs: Mapping[str, float]) -> float:
        """Total variation between this row and ``probs``, summed in the same order as
        :func:`total_variation`."""
        names = self.names[row]
        start = self.starts[row]
        values = self.values[start : start + len(names)]
        if len(names) == 1 and len(probs) == 1 and names[0] in probs:
            return abs(probs[names[0]] - values[0])
        if tuple(probs) == names:
            total: float = sum(map(abs, map(operator.sub, probs.values(), values)))
            return 0.5 * total
        return total_variation(dict(zip(names, values, strict=True)), probs)

    def merge(self, other: Snapshot) -> None:
        """Append ``other``, the same question over a later chunk."""
        base_row, base_value = len(self.categories), len(self.values)
        for sid, row in other.rows.items():
            self.rows[sid] = row + base_row
        self.categories.extend(other.categories)
        self.names.extend(self._interned.setdefault(n, n) for n in other.names)
        self.starts.extend(start + base_value for start in other.starts)
        self.values.extend(other.values)


def _moved_key(m: tuple[float, str, Any, Any]) -> tuple[float, str]:
    return (-m[0], m[1])


class Delta:
    """One question of the second run against the first run's :class:`Snapshot`, counted as
    the second run is read."""

    def __init__(self, before: Snapshot | None) -> None:
        self.before = before
        self.seen = 0  # ids of the second run answering this question
        self.compared = 0
        self.changed = 0
        self.distance_sum = 0.0
        self.moved: list[tuple[float, str, Any, Any]] = []

    def add(self, sid: str, category: Any, probs: Mapping[str, float]) -> None:
        self.seen += 1
        before = self.before
        row = before.rows.get(sid) if before is not None else None
        if row is None:
            return
        assert before is not None
        self.compared += 1
        was = before.categories[row]
        d = before.distance(row, probs)
        self.distance_sum += d
        if was != category:
            self.changed += 1
        if d > 0 or was != category:
            self.moved.append((d, sid, was, category))
            if len(self.moved) >= _PRUNE_AT:
                self.moved = self.top()

    def top(self) -> list[tuple[float, str, Any, Any]]:
        return heapq.nsmallest(TOP_CHANGED, self.moved, key=_moved_key)

    def merge(self, other: Delta) -> None:
        self.seen += other.seen
        self.compared += other.compared
        self.changed += other.changed
        self.distance_sum += other.distance_sum
        self.moved.extend(other.moved)
        if len(self.moved) >= _PRUNE_AT:
            self.moved = self.top()


def _deltas(
    before: QuestionMetrics | None, after: QuestionMetrics | None
) -> dict[str, float] | None:
    if before is None or after is None:
        return None
    out = {}
    for name in SCALAR_METRICS:
        x, y = before.scalar(name), after.scalar(name)
        if x is not None and y is not None:
            out[name] = y - x
    return out


def compare_runs(
    before: Mapping[str, Snapshot],
    after: Mapping[str, Delta],
    before_questions: Mapping[str, QuestionReport],
    after_questions: Mapping[str, QuestionReport],
    paths: tuple[str, str],
) -> Comparison:
    """The comparison of a two-run report: the first run's snapshots, the second run's deltas
    against them (per question key), each run's question reports."""
    keys = list(before_questions) + [k for k in after_questions if k not in before_questions]
    questions: dict[str, QuestionComparison] = {}
    for key in keys:
        snapshot, delta = before.get(key), after.get(key)
        n = delta.compared if delta is not None else 0
        changed = delta.changed if delta is not None else 0
        top = delta.top() if delta is not None else []
        qa, qb = before_questions.get(key), after_questions.get(key)
        either = qa or qb
        questions[key] = QuestionComparison(
            type=either.type if either is not None else None,
            compared=n,
            only_before=(len(snapshot) if snapshot is not None else 0) - n,
            only_after=(delta.seen if delta is not None else 0) - n,
            changed=changed,
            changed_share=changed / n if n else None,
            mean_abs_delta_p=delta.distance_sum / n if delta is not None and n else None,
            metric_deltas=_deltas(
                qa.metrics if qa is not None else None, qb.metrics if qb is not None else None
            ),
            top_changed=tuple(ChangedId(sid, ca, cb, d) for d, sid, ca, cb in top),
        )
    return Comparison(paths[0], paths[1], questions, dict(after_questions))
