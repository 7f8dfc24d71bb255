"""The HTML report's gate, paired-comparison and sweep sections (issue 35): plain tables, no
chart, so no label can overlap another. Kept apart from ``html.py`` (near 400 lines)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from .model import Report

__all__ = ["judged_html"]


def _table(head: Sequence[str], rows: Iterable[Sequence[str]], numeric: Sequence[int]) -> str:
    """A table of text cells (escaped here); the ``numeric`` columns are right-aligned."""
    cls = [' class="n"' if i in numeric else "" for i in range(len(head))]
    out = ["<table><thead><tr>"]
    out += [f"<th{c}>{escape(h)}</th>" for h, c in zip(head, cls, strict=True)]
    out.append("</tr></thead><tbody>")
    for row in rows:
        cells = zip(row, cls, strict=True)
        out.append("<tr>" + "".join(f"<td{c}>{escape(v)}</td>" for v, c in cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def judged_html(report: Report) -> str:
    """The sections, or ``""`` when the report has none of them."""
    parts: list[str] = []
    rows: list[tuple[str, ...]]
    head: tuple[str, ...]
    if report.gates:
        parts.append('<h2>Gates <span class="muted">(escalated: declined to decide)</span></h2>')
        rows = [
            (
                name,
                str(g.n),
                ", ".join(f"{a} {n}" for a, n in g.actions.items()),
                f"{g.escalated} ({_share(g.escalated_share)})",
                f"{g.agreed}/{g.labelled} ({_share(g.accuracy)})" if g.labelled else "–",
            )
            for name, g in report.gates.items()
        ]
        parts.append(_table(("gate", "records", "actions", "escalated", "agreed"), rows, (1,)))
    if report.paired:
        parts.append('<h2>Paired against labels <span class="muted">(first run, then second)'
                     "</span></h2>")  # fmt: skip
        head = ("key", "compared", "fixes", "breaks", "both right", "both wrong", "McNemar p")
        rows = [
            (k, str(p.compared), str(p.fixes), str(p.breaks), str(p.both_right),
             str(p.both_wrong), f"{p.mcnemar_p:.4g}")
            for k, p in report.paired.items()
        ]  # fmt: skip
        parts.append(_table(head, rows, range(1, 7)))
    for name, sweep in (report.sweeps or {}).items():
        parts.append(
            f'<h2>Sweep of gate {escape(name)} <span class="muted">({escape(sweep.cut_points)};'
            f" let through: {escape(sweep.default)})</span></h2>"
        )
        keys = list(sweep.rows[0].questions) if sweep.rows else []
        head = (
            "floor",
            "outcome",
            "n",
            "let through",
            "held",
            *(f"{k} dir/conf/alone" for k in keys),
        )
        rows = [
            (f"{r.floor:.2f}", r.outcome, str(r.n), str(r.let_through), str(r.held),
             *(f"{c.direction}/{c.confidence}/{c.alone}" for c in r.questions.values()))
            for r in sweep.rows
        ]  # fmt: skip
        parts.append(_table(head, rows, (0, 2, 3, 4)))
    return "\n".join(parts)
