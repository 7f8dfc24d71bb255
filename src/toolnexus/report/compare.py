"""Two runs side by side (before and after an edit), per question, over the ids both answered.

- ``changed``: ids whose answer changed: the choice option, the score level, the noul band.
- ``mean_abs_delta_p``: the mean distance between the two answers' distributions, as total
  variation ``0.5 * sum_k |p2_k - p1_k|`` (for a noul that is ``|p2 - p1|``; an option absent
  from one side counts 0).
- ``metric_deltas``: after minus before, for each scalar metric both runs have (labelled).
- ``top_changed``: the 10 ids whose distribution moved most (ties by id).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from typing import Any

from .aggregation import RunStats

__all__ = ["SCALAR_METRICS", "TOP_CHANGED", "compare_runs", "total_variation"]

#: The metrics a comparison subtracts (the nested ones, confusion and bands, are not scalars).
SCALAR_METRICS = (
    "accuracy",
    "brier",
    "log_loss",
    "auroc",
    "ece",
    "macro_f1",
    "within_one",
    "mae",
)
TOP_CHANGED = 10


def total_variation(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """``0.5 * sum_k |a_k - b_k|`` over the union of options; a single-probability noul map
    ``{"yes": p}`` gives ``|a - b|``."""
    if len(a) == 1 and a.keys() == b.keys():
        ((k, p),) = a.items()
        return abs(b[k] - p)
    keys = a.keys() | b.keys()
    return 0.5 * sum(abs(b.get(k, 0.0) - a.get(k, 0.0)) for k in keys)


def _deltas(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, float] | None:
    if not before or not after:
        return None
    out = {}
    for name in SCALAR_METRICS:
        x, y = before.get(name), after.get(name)
        if isinstance(x, int | float) and isinstance(y, int | float):
            out[name] = y - x
    return out


def compare_runs(
    before: RunStats,
    after: RunStats,
    before_questions: Mapping[str, Any],
    after_questions: Mapping[str, Any],
) -> dict[str, Any]:
    """The ``comparison`` object of a two-run report (both runs read with ``keep=True``)."""
    assert before.kept is not None and after.kept is not None
    keys = list(before_questions) + [k for k in after_questions if k not in before_questions]
    questions: dict[str, Any] = {}
    for key in keys:
        a = before.kept.get(key, {})
        b = after.kept.get(key, {})
        small, large = (a, b) if len(a) <= len(b) else (b, a)
        common = [sid for sid in small if sid in large]
        changed = 0
        total = 0.0
        moved: list[tuple[float, str, Any, Any]] = []
        for sid in common:
            cat_a, p_a = a[sid]
            cat_b, p_b = b[sid]
            d = total_variation(p_a, p_b)
            total += d
            if cat_a != cat_b:
                changed += 1
            if d > 0 or cat_a != cat_b:
                moved.append((d, sid, cat_a, cat_b))
        top = heapq.nsmallest(TOP_CHANGED, moved, key=lambda m: (-m[0], m[1]))
        n = len(common)
        qa, qb = before_questions.get(key), after_questions.get(key)
        questions[key] = {
            "type": (qa or qb or {}).get("type"),
            "compared": n,
            "only_before": len(a) - n,
            "only_after": len(b) - n,
            "changed": changed,
            "changed_share": changed / n if n else None,
            "mean_abs_delta_p": total / n if n else None,
            "metric_deltas": _deltas((qa or {}).get("metrics", {}), (qb or {}).get("metrics", {})),
            "top_changed": [
                {"id": sid, "before": ca, "after": cb, "delta_p": d} for d, sid, ca, cb in top
            ],
        }
    return {
        "before": before.path,
        "after": after.path,
        "questions": questions,
        "after_questions": dict(after_questions),
    }
