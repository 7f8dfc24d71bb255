"""The report's tables, fitted to the terminal before Rich draws them.

Rich shrinks every column of a table that is too wide, numbers included: at 80 columns a score
histogram with a long level label lost its ``n`` and ``share`` (issue 31 item 15), and a sweep's
cells read ``1/12…`` (issue 43 item 10). A :class:`Grid` keeps its rows as plain cells and, when
drawn, takes the width a table lacks from its labels only: its bar (redrawn shorter, never cut,
which would read as a smaller value), its text columns widest first (wrapped at their spaces,
never below their longest word), then the headers of its columns of numbers (wrapped, down to
their numbers' width). Nothing is cut: a number, an outcome name or a key is shown whole. When
even that does not fit, the grid is stacked: one block per row, one ``header: cell`` line per
column, which any width can show (a pipe is 80 columns wide).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BAR_WIDTH",
    "Bar",
    "Grid",
    "bar_text",
]

BAR_WIDTH = 24


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

    def widths(self, max_width: int) -> list[int] | None:
        """Each column's width (0: left out) so that the table fits ``max_width`` without
        cutting a word or a number; None when it cannot (then the grid is stacked)."""
        from rich.cells import cell_len

        bar = self._bar_column()
        natural = []
        floors = []
        for i, head in enumerate(self.headers):
            cells = [r[i] for r in self.rows if not isinstance(r[i], Bar)]
            natural.append(
                max([cell_len(head), *(BAR_WIDTH if isinstance(r[i], Bar) else cell_len(r[i])
                                       for r in self.rows)])
            )  # fmt: skip
            whole = head in self.right or head in self.keep
            # A text cell wraps at its spaces; a number's cell never wraps; a header wraps.
            floors.append(max([1, *(_longest_word(c) for c in (head, *cells) if c)]))
            if whole:
                floors[i] = max([floors[i], *(cell_len(c) for c in cells)])
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
        self._shrink(widths, text, [min(natural[i], floors[i]) for i in text], excess)
        if bar is not None and excess() > 0:
            widths[bar] = max(widths[bar] - excess(), BAR_MIN)
        # A number column's header is a label too: wrapped to its numbers' width, never below.
        numbers = [i for i, h in enumerate(self.headers) if h in self.right or h in self.keep]
        self._shrink(widths, numbers, [floors[i] for i in numbers], excess)
        if bar is not None and excess() > 0:
            widths[bar] = 0
        return widths if excess() <= 0 else None

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
        """The Rich table of this grid at ``max_width`` (or, when no table fits, its rows
        stacked: see :meth:`stacked`)."""
        from rich import box
        from rich.table import Table

        widths = self.widths(max_width)
        if widths is None:
            return self.stacked(max_width)
        natural = self.widths(10**6)
        assert natural is not None
        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        shown = [i for i, w in enumerate(widths) if w]
        for i in shown:
            head = self.headers[i]
            cut = widths[i] < natural[i]
            table.add_column(
                head,
                justify="right" if head in self.right else "left",
                no_wrap=not cut,
                width=widths[i] if cut else None,
                overflow="fold",
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

    def stacked(self, max_width: int) -> Any:
        """Each row as a block of ``header: cell`` lines (the first column's flush left, the
        others indented), blocks apart by a blank line: what a terminal too narrow for the
        table shows, every cell whole (a line wraps at spaces)."""
        from rich.console import Group
        from rich.text import Text

        lines: list[Any] = []
        for n, row in enumerate(self.rows):
            if n:
                lines.append(Text(""))
            for i, (head, cell) in enumerate(zip(self.headers, row, strict=True)):
                label = ("  " if i else "") + (f"{head}: " if head else "")
                if isinstance(cell, Bar):
                    width = min(BAR_WIDTH, max_width - len(label))
                    if width < BAR_MIN:
                        continue
                    cell = bar_text(cell.fraction, cell.plain, width)
                lines.append(Text(f"{label}{cell}"))
        return Group(*lines)

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        yield self.table(options.max_width)


def _longest_word(text: str) -> int:
    from rich.cells import cell_len

    return max((cell_len(word) for word in text.split()), default=0)


# A report table's cells: numbers as the table renderer writes them (``-`` for a missing one)
# and the :class:`~.grid.Grid` each table of ``report.py`` and ``labelled.py`` is drawn in. Below
# both, so neither imports the other for them.


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
