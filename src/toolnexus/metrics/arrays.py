"""How the report's metrics read the arrays the accumulators keep: in numpy, with the exact bits
of the plain loops they replace. Pure: no I/O.

Over a long labelled run the metrics are the report's finish, so the per-record work runs in
numpy (a core dependency, imported only when a labelled metric is computed: an unlabelled
report never loads it), and only with operations that give the loop's bits: elementwise
arithmetic, ``bincount`` (which adds its weights in index order) and ``add.accumulate`` (each
partial sum from the one before), never numpy's pairwise ``sum`` or its own ``log``; and never a
float total through Python's ``sum``, which compensates from 3.12 on.

:class:`ProbabilityRows` holds the multi-class rows over one array; rows of one width are one
2-D array to the metrics (:func:`uniform_rows`), any others take the metrics' generic path, which
adds the same terms in the same order (``tests/report/test_report_metrics_numpy.py`` holds the paths
bit-equal).
"""

from __future__ import annotations

import math
import operator
from array import array
from collections.abc import Hashable, Iterable, Iterator, Sequence, Sized
from functools import reduce
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Floats = npt.NDArray[np.float64]

__all__ = [
    "SUM_BLOCK",
    "ProbabilityRows",
    "column",
    "floats",
    "in_order_sum",
    "integers",
    "logs",
    "numeric",
    "same_length",
    "sum_in_order",
    "uniform_rows",
]


#: Terms added per ``add.accumulate`` call: the running total is carried into the next block,
#: so a sum of any length holds one block of partial sums in memory.
SUM_BLOCK = 1 << 16


def in_order_sum(values: Iterable[float]) -> float:
    """``0.0 + v0 + v1 + ...``, added one by one in order (``sum`` of floats may compensate)."""
    return reduce(operator.add, values, 0.0)


def floats(values: Any) -> Floats:
    """A float64 copy of ``values`` (a copy, never a view: an ``array`` still being appended to
    must stay resizable)."""
    import numpy as np

    return np.array(values, dtype=np.float64)


def sum_in_order(terms: Floats) -> float:
    """:func:`in_order_sum` of a float64 array: ``0.0 + t0 + t1 + ...`` one by one, as
    ``total += t`` does (``terms`` is the caller's own temporary: each block's first term takes
    the carried total)."""
    import numpy as np

    total = 0.0
    for start in range(0, len(terms), SUM_BLOCK):
        block = terms[start : start + SUM_BLOCK]
        block[0] = total + block[0]
        total = float(np.add.accumulate(block)[-1])
    return total


def same_length(y_true: Sized, y_prob: Sized, what: str = "probabilities") -> int:
    n = len(y_true)
    if len(y_prob) != n:
        raise ValueError(f"{n} labels for {len(y_prob)} {what}")
    return n


def uniform_rows(y_prob: Any, y_true: Sequence[int]) -> tuple[Floats, Any] | None:
    """``y_prob`` as one (records, width) array and the labels as indices, when its rows are of
    one width (``values`` and ``width``, as :class:`ProbabilityRows` has) and every
    label falls inside a row; ``None`` for the generic path."""
    import numpy as np

    width = getattr(y_prob, "width", 0)
    values = getattr(y_prob, "values", None)
    if not width or values is None or not len(y_true):
        return None
    labels = np.array(y_true, dtype=np.intp)
    if labels.min() < 0 or labels.max() >= width:
        return None
    return floats(values).reshape(-1, width), labels


def logs(values: Floats) -> Floats:
    """``math.log`` of each value (the C library's, as the loop took it: numpy's own ``log`` may
    round a last bit differently)."""
    import numpy as np

    return np.fromiter(map(math.log, values.tolist()), np.float64, len(values))


def numeric(values: Sequence[Hashable]) -> bool:
    """An ``array`` of numbers or a numpy array of numbers or bools (never strings: numpy would
    compare "1" and 1 as equal after a cast)."""
    if isinstance(values, array):
        return values.typecode != "u"
    kind = getattr(getattr(values, "dtype", None), "kind", None)
    return kind is not None and kind in "biuf"


def integers(values: Sequence[Hashable]) -> bool:
    return isinstance(values, array) and values.typecode in "bBhHiIlLqQ"


class ProbabilityRows(Sequence[Sequence[float]]):
    """The probability rows of the labelled answers, over one array of values and the end of
    each row: what the multi-class metrics take as ``y_prob``, without a tuple per record in
    memory. Rows of one width (every record offered the same options) iterate in C."""

    def __init__(self, values: array[float], ends: array[int]) -> None:
        self.values, self.ends = values, ends
        width = ends[0] if ends else 0
        self.width = width if width and _steps_of(ends, width, len(values)) else 0

    def __len__(self) -> int:
        return len(self.ends)

    @overload
    def __getitem__(self, i: int) -> Sequence[float]: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Sequence[float]]: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        start = self.ends[i - 1] if i > 0 else 0
        return self.values[start : self.ends[i]]

    def __iter__(self) -> Iterator[Sequence[float]]:
        if self.width:
            return zip(*[iter(self.values)] * self.width, strict=True)
        return map(self.__getitem__, range(len(self)))


def _steps_of(ends: array[int], width: int, total: int) -> bool:
    """Whether ``ends`` is ``width, 2 * width, ..., total``: every row ``width`` long."""
    if len(ends) * width != total:
        return False
    import numpy as np  # labelled rows only: the metrics take numpy next

    return bool(np.all(np.diff(np.array(ends, dtype=np.int64)) == width))


def column(rows: ProbabilityRows, k: int) -> Sequence[float]:
    """Each row's probability of class ``k`` (0 where a row lacks it); rows of one width are
    sliced from the values array directly (a stride, not a call per row)."""
    if rows.width and 0 <= k < rows.width:
        return rows.values[k :: rows.width]
    return [_p_at(r, k) for r in rows]


def _p_at(row: Sequence[float], k: int) -> float:
    return row[k] if 0 <= k < len(row) else 0.0
