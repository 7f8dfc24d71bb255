"""The report's tables, fitted to the terminal before Rich draws them.

Rich shrinks every column of a table that is too wide, numbers included: at 80 columns a score
histogram with a long level label lost its ``n`` and ``share`` (issue 31 item 15). A
:class:`Grid` keeps its rows as plain cells and, when drawn, takes the width a table lacks from
its labels only: its bar (redrawn shorter, never cut, which would read as a smaller value), its
text columns widest first (cut with an ellipsis), then the headers of its columns of numbers,
down to their numbers' width. The numbers keep their full width; only on a terminal narrower
than the numbers themselves does Rich's own shrinking take over.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BAR_WIDTH", "Bar", "Grid", "bar_text"]

BAR_WIDTH = 24
#: What a text column keeps at least (an ellipsis included) before a number column is touched.
TEXT_MIN = 8
#: A bar gives way to this width before the text labels are cut, and is left out rather than
#: drawn narrower than BAR_MIN.
BAR_ROOMY = 12
BAR_MIN = 6
#: Between two columns of ``box.SIMPLE_HEAD`` without edges: a blank, the divider, a blank.
GAP = 3


def bar_text(fraction: float, plain: bool, width: int = BAR_WIDTH) -> str:
    """``fraction`` of ``width`` as a bar: ``#`` when ``plain``, else eighths of a block."""
    fraction = min(max(fraction, 0.0), 1.0)
    if plain:
        return "#" * round(fraction * width)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    return "█" * full + ("▏▎▍▌▋▊▉"[part - 1] if part else "")


@dataclass(frozen=True)
class Bar:
    """A bar cell: drawn at the width its column is given."""

    fraction: float
    plain: bool


@dataclass
class Grid:
    """A table of string cells (and at most one column of :class:`Bar` cells). ``right``:
    the columns of numbers (right-aligned, never shrunk); ``keep``: other columns never shrunk;
    ``data_headers``: the headers of the ``right`` columns are data (option names), so they may
    be cut, though their numbers are not."""

    headers: Sequence[str]
    right: frozenset[str] = frozenset()
    keep: frozenset[str] = frozenset()
    rows: list[list[Any]] = field(default_factory=list)

    def add_row(self, *cells: Any) -> None:
        self.rows.append(list(cells))

    def _bar_column(self) -> int | None:
        for row in self.rows:
            for i, cell in enumerate(row):
                if isinstance(cell, Bar):
                    return i
        return None

    def widths(self, max_width: int) -> list[int]:
        """Each column's width (0: left out) so that the table fits ``max_width`` when it can
        without touching a number."""
        from rich.cells import cell_len

        bar = self._bar_column()
        natural = []
        for i, head in enumerate(self.headers):
            cells = [BAR_WIDTH if isinstance(r[i], Bar) else cell_len(r[i]) for r in self.rows]
            natural.append(max([cell_len(head), *cells]))
        widths = list(natural)

        def excess() -> int:
            shown = [w for w in widths if w]
            return sum(shown) + GAP * (len(shown) - 1) - max_width

        if excess() <= 0:
            return widths
        if bar is not None:
            widths[bar] = max(natural[bar] - excess(), min(BAR_ROOMY, natural[bar]))
        text = [
            i
            for i, h in enumerate(self.headers)
            if i != bar and h not in self.right and h not in self.keep
        ]
        self._shrink(widths, text, [min(natural[i], TEXT_MIN) for i in text], excess)
        if bar is not None and excess() > 0:
            widths[bar] = max(widths[bar] - excess(), BAR_MIN)
        # A number column's header is a label too: cut to its numbers' width, never below.
        numbers = [i for i, h in enumerate(self.headers) if h in self.right or h in self.keep]
        floors = [max([2, *(cell_len(r[i]) for r in self.rows)]) for i in numbers]
        self._shrink(widths, numbers, floors, excess)
        if bar is not None and excess() > 0:
            widths[bar] = 0
        return widths

    @staticmethod
    def _shrink(widths: list[int], columns: list[int], floors: list[int], excess: Any) -> None:
        """Take one cell at a time from the widest of ``columns`` above its floor."""
        while (over := excess()) > 0:
            room = [(widths[i] - f, i) for i, f in zip(columns, floors, strict=True)]
            spare, widest = max(room, default=(0, -1))
            if spare <= 0:
                return
            widths[widest] -= min(over, 1)

    def table(self, max_width: int) -> Any:
        """The Rich table of this grid at ``max_width``."""
        from rich import box
        from rich.table import Table

        widths = self.widths(max_width)
        natural = self.widths(10**6)
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        shown = [i for i, w in enumerate(widths) if w]
        for i in shown:
            head = self.headers[i]
            cut = widths[i] < natural[i]
            table.add_column(
                head,
                justify="right" if head in self.right else "left",
                no_wrap=True,
                width=widths[i] if cut else None,
                overflow="ellipsis",
            )
        for row in self.rows:
            table.add_row(
                *(
                    bar_text(c.fraction, c.plain, widths[i]) if isinstance(c, Bar) else c
                    for i, c in enumerate(row)
                    if widths[i]
                )
            )
        return table

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        yield self.table(options.max_width)
