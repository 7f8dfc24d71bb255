"""The HTML report's gate, paired-comparison and sweep sections (issue 35): plain tables, no
chart, so no label can overlap another. Kept apart from ``html.py``: these tables are plain
(their own ``_table``), where the page's right-align columns of numbers."""

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


def risk_chart(key: str, points: Sequence[tuple[float, float]]) -> str:
    """Risk (y) against coverage (x) as an inline SVG: the curve, its points, two axes with their
    names and end ticks, placed apart so that no label overlaps another."""
    left, top, width, height = 48, 12, 300, 160
    top_risk = max([0.1, *(r for _, r in points)])
    top_risk = min(1.0, -(-top_risk * 10 // 1) / 10)  # up to the next tenth
    xy = [(left + c * width, top + height - (r / top_risk) * height) for c, r in points]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
    bottom = top + height
    marks = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="#1f77b4"/>' for x, y in xy)
    return (
        f'<figure class="chart" aria-label="{escape(key)}: risk against coverage">'
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {left + width + 20} {bottom + 40}"'
        f' width="{left + width + 20}" height="{bottom + 40}" font-size="11">'
        f'<line x1="{left}" y1="{bottom}" x2="{left + width}" y2="{bottom}" stroke="#444"/>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#444"/>'
        f'<polyline points="{path}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>{marks}'
        f'<text x="{left}" y="{bottom + 14}" text-anchor="middle">0</text>'
        f'<text x="{left + width}" y="{bottom + 14}" text-anchor="middle">1</text>'
        f'<text x="{left + width / 2}" y="{bottom + 30}" text-anchor="middle">coverage</text>'
        f'<text x="{left - 6}" y="{top + 4}" text-anchor="end">{top_risk:g}</text>'
        f'<text x="{left - 6}" y="{bottom}" text-anchor="end">0</text>'
        f'<text x="12" y="{top + height / 2}" text-anchor="middle" '
        f'transform="rotate(-90 12 {top + height / 2})">risk</text>'
        "</svg></figure>"
    )


def judged_html(report: Report) -> str:
    """The sections, or ``""`` when the report has none of them."""
    parts: list[str] = []
    rows: list[tuple[str, ...]]
    head: tuple[str, ...]
    if report.selective:
        parts.append(
            '<h2>Selective prediction <span class="muted">(answering only above a confidence '
            "floor)</span></h2>"
        )
        rows = [
            (
                k,
                str(sel.n),
                "–" if sel.aurc is None else f"{sel.aurc:.4f}",
                _share(sel.coverage_at_target),
                "–" if sel.floor_at_target is None else f"{sel.floor_at_target:g}",
            )
            for k, sel in report.selective.items()
        ]
        parts.append(
            _table(("key", "n", "AURC", "coverage at target risk", "floor"), rows, (1, 2, 3, 4))
        )
        for k, sel in report.selective.items():
            points = [(p.coverage, p.risk) for p in sel.curve if p.risk is not None]
            if points:
                parts.append(f"<h3>{escape(k)}: risk against coverage</h3>")
                parts.append(risk_chart(k, points))
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
        head = ("floor", "outcome", "n", "let through", "held", "escalated", "agreed",
                *(f"{k} dir/conf/alone" for k in keys),
                *(f"{k} published dir/conf/alone" for k in keys))  # fmt: skip
        rows = [
            (f"{r.floor:.2f}", r.outcome, str(r.n), str(r.let_through), str(r.held),
             str(r.escalated), str(r.agreed),
             *(f"{c.direction}/{c.confidence}/{c.alone}" for c in r.questions.values()),
             *(f"{c.published_direction}/{c.published_confidence}/{c.published_alone}"
               for c in r.questions.values()))
            for r in sweep.rows
        ]  # fmt: skip
        parts.append(_table(head, rows, (0, 2, 3, 4, 5, 6)))
        points = [(p.coverage, p.risk) for p in sweep.curve if p.risk is not None]
        if points:
            aurc = "" if sweep.aurc is None else f" (AURC {sweep.aurc:.4f})"
            parts.append(f"<h3>gate {escape(name)}: risk against coverage, by floor{aurc}</h3>")
            parts.append(risk_chart(f"gate {name}", points))
    return "\n".join(parts)
