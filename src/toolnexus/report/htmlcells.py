"""The HTML report's cells: numbers as the page writes them (``–`` for a missing one), a table
of escaped cell HTML with its columns of numbers right-aligned, a chart's ``<figure>``. Below
``html.py`` and ``labelledhtml.py``, so neither imports the other for them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any


def _num(value: Any, digits: int = 3) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "–"
    return f"{value:.{digits}f}"


def _pct(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "–"
    return f"{value * 100:.1f}%"


_NUMBER = re.compile(r"^[+\-–]?[\d.,]*\d%?( \([\d.]+%\))?$|^–$")


def _table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table from already-escaped cell HTML; columns of numbers are right-aligned."""
    body = [list(r) for r in rows]
    numeric = [
        all(_NUMBER.match(r[i]) for r in body) and any(r[i] != "–" for r in body)
        for i in range(len(head))
    ]
    cls = [' class="n"' if n else "" for n in numeric]
    out = ["<table><thead><tr>"]
    out += [f"<th{c}>{h}</th>" for h, c in zip(head, cls, strict=True)]
    out.append("</tr></thead><tbody>")
    for row in body:
        out.append(
            "<tr>" + "".join(f"<td{c}>{v}</td>" for v, c in zip(row, cls, strict=True)) + "</tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def _chart(svg: str, caption: str) -> str:
    return f'<figure class="chart" aria-label="{escape(caption)}">{svg}</figure>'


def _signed(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "–"
    return f"{value:+.3f}"
