"""A report table's cells: numbers as the table renderer writes them (``-`` for a missing one)
and the :class:`~.grid.Grid` each table of ``report.py`` and ``labelled.py`` is drawn in. Below
both, so neither imports the other for them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .grid import Grid


def _pct(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return f"{value * 100:.0f}%"


def _num(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return f"{value:.{digits}f}"


def _signed(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return f"{value:+.3f}"


def _table(
    *columns: str,
    right: Sequence[str] = (),
    keep: Sequence[str] = (),
) -> Grid:
    """A table whose ``right`` columns (numbers) and ``keep`` columns keep their width on a
    narrow terminal; only its text labels and bar give way (:mod:`.grid`)."""
    return Grid(columns, frozenset(right), frozenset(keep))
