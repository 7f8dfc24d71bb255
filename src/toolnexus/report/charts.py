"""The report's charts as inline SVG, drawn by matplotlib.

Why matplotlib (an optional extra, ``toolnexus-classifier[html]``): it draws every chart the
report needs, a confusion-matrix heatmap included, without a browser and without JavaScript;
pygal has no heatmap and its SVG expects a script from elsewhere for tooltips, and leather has
neither heatmaps nor annotations. Its weight is paid only here: this module is imported by the
HTML path of ``toolnexus report`` alone, never at start-up.

No pyplot: each chart is a bare ``Figure`` saved as SVG, so no global state, no GUI backend.
Text stays text (``svg.fonttype: none``), which keeps each chart small and searchable; ids are
salted per chart so several SVGs can live in one HTML document.
"""

from __future__ import annotations

import io
import re
from typing import Any

from ..core import ReportError, registry
from .model import (
    ChoiceDistribution,
    Confusion,
    NoulDistribution,
    QuestionReport,
    ScoreDistribution,
)

__all__ = [
    "MissingChartLibrary",
    "comparison_chart",
    "comparison_figure",
    "confusion_figure",
    "confusion_heatmap",
    "contrast",
    "distribution_chart",
    "distribution_figure",
    "option_reliability",
    "recalibration_diagram",
    "reliability_diagram",
    "reliability_figure",
    "text_color_on",
]

BLUE = "#3b6ea8"
ORANGE = "#d9822b"
GREY = "#8a8a8a"
_counter = 0


class MissingChartLibrary(ReportError):
    """matplotlib is not installed (it is the optional ``html`` extra)."""


def _figure(width: float, height: float) -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingChartLibrary(
            "--format html draws its charts with matplotlib, which is not installed: "
            "pip install 'toolnexus-classifier[html]'"
        ) from None
    return Figure(figsize=(width, height), layout="constrained")


def _svg(fig: Any) -> str:
    """The figure as one ``<svg>`` element (no XML prolog, no DOCTYPE)."""
    import matplotlib

    global _counter
    _counter += 1
    with matplotlib.rc_context(
        {"svg.fonttype": "none", "svg.hashsalt": f"toolnexus-chart-{_counter}"}
    ):
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :].strip()
    # The RDF metadata block names vocabularies by URL; nothing in a report needs it.
    return re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.DOTALL)


def _style(ax: Any) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.tick_params(labelsize=8)


def _integer_ticks(axis: Any) -> None:
    """Counts are whole numbers: no 0.25 of an answer on an axis."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def _short(name: str, limit: int = 18) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _short_all(names: list[str], limit: int) -> list[str]:
    """Each name cut to ``limit`` characters; where two cut names would read the same, both keep
    their ends instead (``technical-s…-escalation``), so no two labels of a chart are one."""
    out = [_short(n, limit) for n in names]
    if len(set(out)) == len(out):
        return out
    head = (limit - 1) // 2
    return [
        n if len(n) <= limit else n[:head] + "…" + n[len(n) - (limit - 1 - head) :] for n in names
    ]


#: Points per character of the titles' 9-point font, a little over DejaVu Sans's mean advance.
_TITLE_CHAR_PT = 5.8


def _title(fig: Any, key: str, rest: str, note: str = "") -> None:
    """The chart's title across the figure's top, its question key cut to fit the figure's
    width (a long key ran past the edge), and ``note`` on a second line."""
    room = int(fig.get_figwidth() * 72 / _TITLE_CHAR_PT) - 1
    text = _short(key, max(room - len(rest), 8)) + rest
    if note:
        text += "\n" + note
    fig.suptitle(text, x=0.01, ha="left", fontsize=9)


#: WCAG 2.1 AA: text against its background at least this contrast ratio.
MIN_CONTRAST = 4.5


def _luminance(rgb: Any) -> float:
    """WCAG relative luminance of an sRGB colour (components 0..1)."""

    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(float(c)) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: Any, b: Any) -> float:
    """The WCAG contrast ratio of two sRGB colours (1 to 21)."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def text_color_on(fill: Any) -> str:
    """Black or white, whichever contrasts more with ``fill``: one of the two always reaches
    4.5:1 (the worst fill, of luminance 0.18, gives black 4.58:1), where a dark grey does not."""
    return "#000000" if contrast(fill, (0, 0, 0)) >= contrast(fill, (1, 1, 1)) else "#ffffff"


def distribution_chart(key: str, q: QuestionReport) -> str:
    """Noul: the 10-bin histogram of p. Choice: share per option. Score: share per level."""
    return _svg(distribution_figure(key, q))


def distribution_figure(key: str, q: QuestionReport) -> Any:
    """The figure of :func:`distribution_chart` (its layout is what the tests measure)."""
    d = q.distribution
    fig = _figure(6.0, 2.6)
    ax = fig.add_subplot()
    _style(ax)
    if isinstance(d, NoulDistribution):
        hist = d.histogram
        ax.bar(
            [b.lo for b in hist],
            [b.n for b in hist],
            width=0.1,
            align="edge",
            color=BLUE,
            edgecolor="white",
        )
        ax.set_xlim(0, 1)
        ax.set_xlabel("p (noul)", fontsize=8)
        ax.set_ylabel("answers", fontsize=8)
        _integer_ticks(ax.yaxis)
    else:
        items: list[tuple[str, int]] = []
        if isinstance(d, ChoiceDistribution):
            items = [(o, v.n) for o, v in d.options.items()]
        elif isinstance(d, ScoreDistribution):
            items = [(f"{k} {v.label}", v.n) for k, v in d.levels.items()]
        names = _short_all([name for name, _ in items], 26)[::-1]
        counts = [n for _, n in items][::-1]
        ax.barh(range(len(items)), counts, color=BLUE)
        ax.set_yticks(range(len(items)), names)
        ax.set_xlabel("answers", fontsize=8)
        _integer_ticks(ax.xaxis)
        fig.set_size_inches(6.0, max(1.6, 0.3 * len(items) + 0.8))
    _title(fig, key, ": answers")
    return fig


def reliability_diagram(key: str, q: QuestionReport) -> str:
    """Accuracy per confidence bin against the diagonal of perfect calibration, with the bin's
    mean confidence marked and its count written above the bar."""
    return _svg(reliability_figure(key, q))


def reliability_figure(key: str, q: QuestionReport) -> Any:
    """The figure of :func:`reliability_diagram`. The ECE note and the legend sit outside the
    axes (issue 31 item 16: inside, the note covered the high bins' bars and counts)."""
    fig = _figure(4.2, 4.2)
    ax = fig.add_subplot()
    _style(ax)
    ax.plot([0, 1], [0, 1], linestyle="--", color=GREY, linewidth=1, label="perfectly calibrated")
    full = [b for b in q.reliability if b.n]
    ax.bar(
        [b.lo for b in full],
        [b.accuracy for b in full],
        width=0.1,
        align="edge",
        color=BLUE,
        edgecolor="white",
        label="share labelled yes" if registry.answers_probability(q.type) else "accuracy",
    )
    ax.scatter(
        [b.confidence for b in full],
        [b.confidence for b in full],
        color=ORANGE,
        s=14,
        zorder=3,
        label="mean p in the bin",
    )
    # Each bin's count in one row across the top band (1.03-1.1), above every bar and marker:
    # above its bar, a count sat on the orange mean-p marker wherever accuracy met confidence
    # (4.3:1 in Chromium, issue 31 item 16).
    for b in full:
        ax.text(b.lo + 0.05, 1.065, str(b.n), ha="center", va="center", fontsize=7, color="#333333")
    ax.set_xlim(-0.02, 1.02)  # a mean p of exactly 0 or 1 stays visible
    ax.set_ylim(0, 1.1)
    what = "p" if registry.answers_probability(q.type) else "top-1 probability"
    ax.set_xlabel(what, fontsize=8)
    ax.set_ylabel("observed", fontsize=8)
    m = q.metrics
    ece = m.scalar("ece") if m is not None else None
    rest = ": reliability" + (f" (ECE {ece:.3f})" if ece is not None else "")
    u = m.ece_uncertainty if m is not None else None
    note = ""
    if u is not None and ece is not None:
        # issue 24: the interval and the noise floor on the diagram itself, under its title
        verdict = "above the floor" if u.above_floor else "indistinguishable from calibrated"
        note = f"{u.low:.3f}–{u.high:.3f}, floor p95 {u.floor_p95:.3f}: {verdict}"
    _title(fig, key, rest, note)
    fig.legend(fontsize=7, loc="outside lower center", ncols=2, frameon=False)
    return fig


def _reliability_points(ax: Any, bins: Any, color: str, label: str, marker: str = "o") -> None:
    full = [b for b in bins if b.n and b.confidence is not None and b.accuracy is not None]
    ax.plot([b.confidence for b in full], [b.accuracy for b in full], marker=marker,
            color=color, linewidth=1, markersize=4, label=label)  # fmt: skip


def recalibration_diagram(key: str, q: QuestionReport) -> str:
    """A recalibrated run: the wire's reliability and the recalibrated one, before and after
    the map, against the diagonal."""
    r = q.recalibrated
    assert r is not None, "called for recalibrated questions only"
    fig = _figure(4.2, 3.6)
    ax = fig.add_subplot()
    _style(ax)
    ax.plot([0, 1], [0, 1], linestyle="--", color=GREY, linewidth=1, label="perfectly calibrated")
    wire_ece = r.wire_metrics.scalar("ece") if r.wire_metrics is not None else None
    ece = q.metrics.scalar("ece") if q.metrics is not None else None
    _reliability_points(ax, r.wire_reliability, GREY,
                        "wire (before)" + (f", ECE {wire_ece:.3f}" if wire_ece is not None
                                           else ""), "s")  # fmt: skip
    _reliability_points(ax, q.reliability, BLUE,
                        "recalibrated (after)" + (f", ECE {ece:.3f}" if ece is not None
                                                  else ""))  # fmt: skip
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("mean p in the bin", fontsize=8)
    ax.set_ylabel("observed", fontsize=8)
    _title(fig, key, ": before and after recalibration")
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    return _svg(fig)


def option_reliability(key: str, options: Any) -> str:
    """Choice, one vs rest: per option shown (>= 30 labels), the share labelled with it per
    bin of its probability."""
    fig = _figure(4.2, 3.6)
    ax = fig.add_subplot()
    _style(ax)
    ax.plot([0, 1], [0, 1], linestyle="--", color=GREY, linewidth=1, label="perfectly calibrated")
    palette = (BLUE, ORANGE, "#4c956c", "#8e5ea2", "#c44e52", "#55a8b5")
    for i, o in enumerate(x for x in options if x.skipped is None):
        ece = f" (ECE {o.ece:.3f})" if o.ece is not None else ""
        _reliability_points(ax, o.reliability, palette[i % len(palette)],
                            _short(o.option, 16) + ece)  # fmt: skip
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("P(option)", fontsize=8)
    ax.set_ylabel("share labelled with it", fontsize=8)
    _title(fig, key, ": one-vs-rest reliability")
    ax.legend(fontsize=7, loc="upper left", frameon=False)
    return _svg(fig)


def confusion_heatmap(key: str, confusion: Confusion) -> str:
    """Rows are labels, columns answers; each cell's count written in it."""
    return _svg(confusion_figure(key, confusion))


def confusion_figure(key: str, confusion: Confusion) -> Any:
    """The figure of :func:`confusion_heatmap`: each count in black or white, whichever
    contrasts more with its cell's fill (issue 31 item 16: WCAG AA, at least 4.5:1)."""
    labels, matrix = confusion.labels, confusion.matrix
    n = len(labels)
    side = min(7.0, 1.6 + 0.5 * n)
    fig = _figure(side + 1.0, side)
    ax = fig.add_subplot()
    low = min((min(row) for row in matrix), default=0)
    peak = max((max(row) for row in matrix), default=0)
    image = ax.imshow(matrix, cmap="Blues", aspect="equal", vmin=low, vmax=max(peak, low + 1))
    names = _short_all(list(labels), 14)
    slanted = n > 3 and max(len(name) for name in names) > 3
    ax.set_xticks(
        range(n), names, rotation=45 if slanted else 0, ha="right" if slanted else "center"
    )
    ax.set_yticks(range(n), names)
    ax.tick_params(labelsize=8)
    ax.set_xlabel("answer", fontsize=8)
    ax.set_ylabel("label", fontsize=8)
    if n <= 30:
        for i, row in enumerate(matrix):
            for j, v in enumerate(row):
                fill = image.cmap(image.norm(v))
                ax.text(j, i, str(v), ha="center", va="center", fontsize=8,
                        color=text_color_on(fill))  # fmt: skip
    from matplotlib.ticker import MaxNLocator

    bar = fig.colorbar(image, ax=ax, shrink=0.8, ticks=MaxNLocator(integer=True))
    bar.ax.tick_params(labelsize=7)
    _title(fig, key, ": confusion")
    return fig


def comparison_chart(key: str, before: QuestionReport | None, after: QuestionReport | None) -> str:
    """The answer distribution of the two runs side by side (shares, so runs of different sizes
    compare)."""
    return _svg(comparison_figure(key, before, after))


def comparison_figure(key: str, before: QuestionReport | None, after: QuestionReport | None) -> Any:
    """The figure of :func:`comparison_chart`: a noul's ten bins as columns; options and levels
    as rows, labelled at a width that keeps them apart (issue 31 item 16: as columns, every
    level of a score with long labels read "0 the custo…")."""
    fig = _figure(6.0, 2.6)
    ax = fig.add_subplot()
    _style(ax)
    names: list[str] = []
    shares: list[dict[str, float]] = []
    columns = True
    for q in (before, after):
        row: dict[str, float] = {}
        d = q.distribution if q is not None else None
        if isinstance(d, NoulDistribution):
            total = sum(b.n for b in d.histogram) or 1
            for b in d.histogram:
                row[f"{b.lo:.1f}–{b.hi:.1f}"] = b.n / total
        elif isinstance(d, ChoiceDistribution):
            row = {o: v.share or 0.0 for o, v in d.options.items()}
            columns = False
        elif isinstance(d, ScoreDistribution):
            row = {f"{k} {v.label}": v.share or 0.0 for k, v in d.levels.items()}
            columns = False
        names += [k for k in row if k not in names]
        shares.append(row)
    width = 0.4
    if columns:
        xs = range(len(names))
        ax.bar([x - width / 2 for x in xs], [shares[0].get(k, 0.0) for k in names], width,
               color=GREY, label="before")  # fmt: skip
        ax.bar([x + width / 2 for x in xs], [shares[1].get(k, 0.0) for k in names], width,
               color=BLUE, label="after")  # fmt: skip
        ax.set_xticks(list(xs), names, fontsize=7)
        ax.set_ylabel("share of answers", fontsize=8)
    else:
        ys = range(len(names))[::-1]  # the first option on top, as the table lists it
        ax.barh([y + width / 2 for y in ys], [shares[0].get(k, 0.0) for k in names], width,
                color=GREY, label="before")  # fmt: skip
        ax.barh([y - width / 2 for y in ys], [shares[1].get(k, 0.0) for k in names], width,
                color=BLUE, label="after")  # fmt: skip
        ax.set_yticks(list(ys), _short_all(names, 30), fontsize=7)
        ax.set_xlabel("share of answers", fontsize=8)
        fig.set_size_inches(6.0, max(1.8, 0.45 * len(names) + 1.0))
    fig.legend(fontsize=7, frameon=False, loc="outside right upper")
    _title(fig, key, ": before and after")
    return fig
