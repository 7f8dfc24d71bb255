"""One question's answers of a Parquet row group counted as whole columns (pyarrow compute
and C-level passes), leaving each accumulator in the state its ``count`` per row leaves it.

Only the plain shape is counted here: every row answers the question, every value is of the
run schema's type and in range (checked on the Arrow arrays first), a choice or score row
names the same options in the same order as every other, and each labelled row's pick and
label are among them. Anything else returns False before the accumulator is touched (but for
what the first row's ``count`` does to a score's options before reading a label, which the
row path does alike), and the caller counts the column row by row with ``count``. A test
holds both ways to the same digits.
"""

from __future__ import annotations

import bisect
import operator
from collections import Counter
from collections.abc import Callable
from itertools import pairwise, repeat
from typing import Any

from ..core import registry
from ..metrics import N_BINS
from ..records import column_values
from .accumulators import (
    _BAND_INDEX,
    _LEVEL_KEYS,
    _TRUTH,
    BANDS,
    FIRST_IDS,
    NoulStats,
    QuestionStats,
)
from .fieldchecks import LabelError
from .levels import ScoreStats
from .ranked import ChoiceStats, RankedStats

__all__ = ["count_column", "map_dicts"]


def count_column(
    st: QuestionStats,
    kind: str,
    fields: dict[str, Any],
    valid: list[bool] | None,
    labels: list[str | None],
    ids: list[str],
) -> bool:
    """Count the column into ``st``; False (``st`` untouched) when it is not plain."""
    if valid is not None:
        return False
    # A column of the question's own type (its REPORT slot's accumulator is ``st``'s class)
    # is read by that accumulator's column counter; a subclass, another type's column or a
    # type without a counter is counted row by row.
    count = _COUNTERS.get(type(st))
    if count is None or registry.attached(kind, registry.REPORT) is not type(st):
        return False
    # A labelled answer flagged invalid is left out of the probability metrics and counted
    # (issue 47): its label is read as the row path reads it, then the row counts unlabelled.
    left_out = _invalid_labelled(fields.get("flags"), labels)
    if left_out:
        if not _READABLE[type(st)](st, fields, [labels[i] for i in left_out]):
            return False  # the row path words the label it cannot read
        labels = [None if i in left_out else label for i, label in enumerate(labels)]
    if not count(st, fields, labels, ids):
        return False
    st.labelled_invalid += len(left_out)
    return True


def _invalid_labelled(flags: Any, labels: list[str | None]) -> set[int]:
    """The labelled rows whose flags name ``invalid``."""
    if flags is None or not len(flags):
        return set()
    import pyarrow as pa
    import pyarrow.compute as pc

    if not pa.types.is_list(flags.type) or flags.null_count:
        return set()
    inner = pc.list_flatten(flags)
    if not len(inner) or not pc.any(pc.equal(inner, "invalid")).as_py():
        return set()
    rows = flags.to_pylist()
    return {i for i, r in enumerate(rows) if labels[i] is not None and "invalid" in r}


# Whether the row path reads each of ``labels`` without a LabelError, per accumulator.


def _noul_readable(st: QuestionStats, fields: dict[str, Any], labels: list[Any]) -> bool:
    return all(_TRUTH.get(str(label).lower()) is not None for label in labels)


def _choice_readable(st: QuestionStats, fields: dict[str, Any], labels: list[Any]) -> bool:
    uniform = _uniform(fields["probabilities"])
    names = set(uniform[0]) if uniform else set()
    options = getattr(st, "options", {})
    return all(label in options or label in names for label in labels)


def _score_readable(st: QuestionStats, fields: dict[str, Any], labels: list[Any]) -> bool:
    assert isinstance(st, ScoreStats)  # _READABLE is keyed by the accumulator's class
    try:
        for label in labels:
            st._level_of(label)
    except LabelError:
        return False
    return True


def map_dicts(array: Any) -> list[Any]:
    """A map column as one dict per row (None for a null row). A run's rows almost always
    name the same keys in the same order: their dicts are then made in C from one key list
    (and a row group whose values repeat too, a legend, shares one dict: nothing mutates it)."""
    offsets = array.offsets.to_pylist()
    keys, items = column_values(array.keys), column_values(array.items)
    n = len(array)
    start, width = offsets[0], (offsets[1] - offsets[0]) if n else 0
    rows: list[Any]
    uniform = offsets == list(range(start, start + width * n + 1, width)) if width else False
    if uniform and keys[start : start + width * n] == keys[start : start + width] * n:
        names = keys[start : start + width]
        values = items[start : start + width * n]
        if values == values[:width] * n:
            rows = [dict(zip(names, values[:width], strict=True))] * n
        else:
            rows = list(
                map(dict, map(zip, repeat(names), zip(*[iter(values)] * width, strict=True)))
            )
    else:
        rows = [dict(zip(keys[a:b], items[a:b], strict=True)) for a, b in pairwise(offsets)]
    if array.null_count:
        valid = array.is_valid().to_pylist()
        rows = [r if v else None for r, v in zip(rows, valid, strict=True)]
    return rows


def _within(array: Any, low: float, high: float, *, nulls: bool = False) -> bool:
    """Every value of a float64 (or integer) array is in ``[low, high]``, none NaN, and
    (unless ``nulls``) none null."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if array.null_count and (not nulls or array.null_count == len(array)):
        return nulls and array.null_count == len(array)
    if pa.types.is_floating(array.type):
        if array.type != pa.float64() or pc.any(pc.is_nan(array)).as_py():
            return False
    elif not pa.types.is_integer(array.type):
        return False
    bounds = pc.min_max(array).as_py()
    return bool(low <= bounds["min"] and bounds["max"] <= high)


def _flags(st: QuestionStats, array: Any, ids: list[str]) -> None:
    """A flags column counted as the accumulator's flag counter counts it row after row: each
    flag's count (first met first), the ids of its first FIRST_IDS rows, every ``invalid``."""
    offsets = array.offsets.to_pylist()
    start, end = offsets[0], offsets[-1]
    if end == start:
        return
    inner = column_values(array.values.slice(start, end - start))
    counts = st.flags
    for flag, n in Counter(inner).items():
        before = counts[flag]
        counts[flag] = before + n
        if before < FIRST_IDS:
            first = st.flag_ids.setdefault(flag, [])
            at = -1
            for _ in range(min(FIRST_IDS - before, n)):
                at = inner.index(flag, at + 1)
                first.append(ids[bisect.bisect_right(offsets, start + at) - 1])
    st.invalid += inner.count("invalid")


def _flags_plain(array: Any) -> bool:
    """A list of flag names per row, none of them null."""
    import pyarrow as pa

    kind = array.type
    return bool(
        pa.types.is_list(kind)
        and pa.types.is_string(kind.value_type)
        and array.values.null_count == 0
    )


def _noul(st: NoulStats, f: dict[str, Any], labels: list[str | None], ids: list[str]) -> bool:
    if not (_within(f["noul"], 0.0, 1.0) and _flags_plain(f["flags"])):
        return False
    bands = column_values(f["band"])
    if not set(map(type, bands)) <= {str, type(None)}:
        return False
    truth: dict[str | None, int] = {}
    for label in set(labels):
        y = _TRUTH.get(label) if label is not None else 0
        if y is None:
            return False  # a label the noul truth table lacks: the row path words it
        truth[label] = y
    ps = f["noul"].to_pylist()
    st.n += len(ps)
    _flags(st, f["flags"], ids)
    keys = list(map(int, map(operator.mul, ps, repeat(N_BINS))))
    for b, n in Counter(keys).items():
        st.hist[min(b, N_BINS - 1)] += n  # p = 1.0 is in the last bin
    other = len(BANDS)
    index = [other if b is None else _BAND_INDEX.get(b, other) for b in bands]
    for b, n in Counter(index).items():
        st.band_n[b] += n
    rows = [i for i, label in enumerate(labels) if label is not None]
    if rows:
        ys = [truth[labels[i]] for i in rows]
        st.labelled += len(rows)
        st.y_prob.extend([ps[i] for i in rows])
        st.y_true.extend(ys)
        for cell, n in Counter(index[i] * 2 + y for i, y in zip(rows, ys, strict=True)).items():
            st.band_truth[cell] += n
    return True


def _uniform(array: Any) -> tuple[tuple[str, ...], list[float]] | None:
    """A probability map column whose rows all name the same options in the same order: the
    options and the values, row after row; else None."""
    import pyarrow as pa

    n = len(array)
    if not n or array.null_count or not pa.types.is_string(array.type.key_type):
        return None
    offsets = array.offsets.to_pylist()
    start, width = offsets[0], offsets[1] - offsets[0]
    if not width or offsets != list(range(start, start + width * n + 1, width)):
        return None
    items = array.items.slice(start, width * n)
    if not _within(items, 0.0, 1.0):
        return None
    keys = column_values(array.keys.slice(start, width * n))
    names = tuple(keys[:width])
    if keys != list(names) * n or len(set(names)) != width:
        return None
    return names, items.to_pylist()


def _labelled_plan(
    st: RankedStats, names: tuple[str, ...], picks: list[str], truths: list[str | None]
) -> list[int] | None:
    """The labelled rows, when each one's pick and truth are among ``names`` and the rows
    keep their probabilities in class order (as ``_score`` keeps them directly); else None."""
    rows = [i for i, t in enumerate(truths) if t is not None]
    known = set(names)
    if any(picks[i] not in known or truths[i] not in known for i in rows):
        return None
    if rows:
        classes = list(st.classes) + [c for c in names if c not in st.classes]
        if list(names) != classes[: len(names)]:
            return None
    return rows


def _keep_labelled(
    st: RankedStats, names: tuple[str, ...], values: list[float], rows: list[int], picks: list[str],
    truths: list[Any],
) -> None:  # fmt: skip
    """What ``_score`` keeps of each labelled row, row after row."""
    if not rows:
        return
    st.labelled += len(rows)
    for name in names:
        st._class(name)
    st._row_names, st._row_direct = names, True
    width = len(names)
    kept = st.y_prob_values
    base = len(kept)
    if len(rows) * width == len(values):
        kept.extend(values)
    else:
        for i in rows:
            kept.extend(values[i * width : (i + 1) * width])
    st.y_prob_ends.extend(range(base + width, base + width * len(rows) + 1, width))
    position = {name: k for k, name in enumerate(names)}
    st.y_pred.extend([st.classes[picks[i]] for i in rows])
    st.y_true.extend([st.classes[truths[i]] for i in rows])
    st.p_pick.extend([values[i * width + position[picks[i]]] for i in rows])


def _confidences(st: RankedStats, array: Any) -> bool:
    return _within(array, 0.0, 1.0, nulls=True)


def _choice(st: ChoiceStats, f: dict[str, Any], labels: list[str | None], ids: list[str]) -> bool:
    import pyarrow as pa

    uniform = _uniform(f["probabilities"])
    if uniform is None or not _confidences(st, f["confidence"]) or not _flags_plain(f["flags"]):
        return False
    if not pa.types.is_boolean(f["near_uniform"].type):
        return False
    names, values = uniform
    choices = column_values(f["choice"])
    if set(map(type, choices)) != {str}:
        return False
    options = set(st.options) | set(names)
    if any(label not in options for label in labels if label is not None):
        return False
    rows = _labelled_plan(st, names, choices, labels)
    if rows is None:
        return False
    st.n += len(choices)
    _flags(st, f["flags"], ids)
    for name in names:
        st.options.setdefault(name)
    st._scanned = len(names)
    st.counts.update(choices)
    st.confidences.extend([c for c in f["confidence"].to_pylist() if c is not None])
    _keep_labelled(st, names, values, rows, choices, labels)
    near = f["near_uniform"].to_pylist()
    st.near_uniform.extend([bool(near[i]) for i in rows])
    return True


def _score(st: ScoreStats, f: dict[str, Any], labels: list[str | None], ids: list[str]) -> bool:
    from ..core import level_label

    uniform = _uniform(f["probabilities"])
    if uniform is None or not _confidences(st, f["confidence"]) or not _flags_plain(f["flags"]):
        return False
    if not (_within(f["level"], 0, len(_LEVEL_KEYS) - 1) and _within(f["score"], 0.0, 9.0)):
        return False
    if f["score"].type != f["confidence"].type:  # float64, as the schema writes it
        return False
    names, values = uniform
    if any(name not in st.options for name in names):
        # What the first row's count does before any label is read (and what the row path
        # would do again, to the same effect, should this column go back to it).
        for name in names:
            st.options.setdefault(name)
        legend = map_dicts(f["legend"].slice(0, 1))[0] or {}
        for k in st.options:
            st.legend.setdefault(k, level_label(legend.get(k, k)))
    levels = f["level"].to_pylist()
    picks = [_LEVEL_KEYS[level] for level in levels]
    truth = {label: st._level_of(label) for label in set(labels) if label is not None}
    truths = [None if label is None else _LEVEL_KEYS[truth[label]] for label in labels]
    rows = _labelled_plan(st, names, picks, truths)
    if rows is None:
        return False
    st.n += len(levels)
    _flags(st, f["flags"], ids)
    st._scanned = len(names)
    scores = f["score"].to_pylist()
    st.counts.update(picks)
    st.scores.extend(scores)
    confidences = f["confidence"].to_pylist()
    st.confidences.extend([c for c in confidences if c is not None])
    _score_fits(st, names, values, confidences)
    _keep_labelled(st, names, values, rows, picks, truths)
    st.y_level.extend([truth[labels[i]] for i in rows])  # type: ignore[index]
    st.level_pick.extend([levels[i] for i in rows])
    st.y_score.extend([scores[i] for i in rows])
    return True


def _score_fits(
    st: ScoreStats, names: tuple[str, ...], values: list[float], confidences: list[Any]
) -> None:
    """``consistency.score_confidence_fits`` over a whole column, as the row path counts it
    answer by answer (the same bounds, array-wise)."""
    import numpy as np

    from ..core import ROUNDING, choice_confidence, uniform_spread

    keep = [i for i, c in enumerate(confidences) if c is not None]
    if not keep:
        return
    width = len(names)
    order = sorted(range(width), key=lambda j: (len(names[j]), names[j]))
    p = np.asarray(values, dtype=np.float64).reshape(-1, width)[keep][:, order]
    c = np.asarray([confidences[i] for i in keep], dtype=np.float64)
    top = p.max(axis=1)
    slack = 1e-9
    if width <= 1:
        fit = np.abs(c - 1.0) <= ROUNDING + slack
        fits = [fit, fit, fit]
    else:
        choice = np.array([choice_confidence(t, width) for t in top.tolist()])
        index = np.arange(width)
        distance = np.abs(index[:, None] - index[None, :])  # |i - mode|, one column per mode
        spread = uniform_spread(width)
        by_mode = np.maximum(0.0, 1.0 - (p @ distance) / spread)
        bounds = ROUNDING + ROUNDING * distance.sum(axis=0) / spread + slack
        is_mode = p >= (top - slack)[:, None]
        fits = [
            np.abs(c - top) <= 2 * ROUNDING + slack,
            np.abs(c - choice) <= ROUNDING + ROUNDING / (1.0 - 1.0 / width) + slack,
            (is_mode & (np.abs(c[:, None] - by_mode) <= bounds[None, :])).any(axis=1),
        ]
    st.fitted += len(keep)
    st.fits = [n + int(f.sum()) for n, f in zip(st.fits, fits, strict=True)]


#: Each built-in accumulator's column counter (``count_column``).
_COUNTERS: dict[type, Callable[..., bool]] = {
    NoulStats: _noul,
    ChoiceStats: _choice,
    ScoreStats: _score,
}
_READABLE: dict[type, Callable[[QuestionStats, dict[str, Any], list[Any]], bool]] = {
    NoulStats: _noul_readable,
    ChoiceStats: _choice_readable,
    ScoreStats: _score_readable,
}
