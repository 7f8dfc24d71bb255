"""The HTML report's charts, measured on the layout matplotlib gives them (issue 31 item 16: "the
ECE note overlaps bars and count labels, before/after score labels are all cut to '0 the
custo…', and some heatmap cells are white text on a pale background").

Every figure the page would hold is captured as the report draws it (``charts._svg``), laid
out by Agg, and checked: no text runs past the figure's edge, no two upright texts overlap, no
text covers a bar, the labels of one axis are distinct, and every count in a heatmap cell
contrasts with the cell's fill at least 4.5:1 (WCAG AA). The browser test
(tests/report/test_report_browser.py) looks at the same page in Chromium where it is installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib", reason="platform: matplotlib (the html extra) is not installed")

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb
from matplotlib.image import AxesImage
from matplotlib.text import Text

from paths import TESTS
from toolnexus.report import charts
from toolnexus.report.build import build_report
from toolnexus.report.html import report_html

INPUTS = TESTS / "golden" / "report-inputs"
LONG_LEVEL = "the customer is working normally and is waiting on an answer"


def _long_inputs(tmp: Path) -> tuple[str, str, str]:
    """The golden runs with support-triage's long level labels and a long option and key."""
    out = []
    for name in ("run.jsonl", "after.jsonl", "labels.csv"):
        text = (INPUTS / name).read_text(encoding="utf-8")
        for short, long in (("nothing", f"{LONG_LEVEL} (none)"), ("some of it", LONG_LEVEL),
                            ("all of it", f"{LONG_LEVEL} (all)"),
                            ("technical", "technical-support-escalation-team")):  # fmt: skip
            text = text.replace(short, f'"{long}"' if name.endswith(".csv") else long)
        (tmp / name).write_text(text.replace("desk", "which_desk_should_own_this_ticket"))
        out.append(str(tmp / name))
    return out[0], out[1], out[2]


def _figures(
    monkeypatch: pytest.MonkeyPatch, run: str, after: str, labels: str
) -> list[tuple[str, Any]]:
    """Every figure of the two-run page, as drawn for it."""
    drawn: list[Any] = []
    monkeypatch.setattr(charts, "_svg", lambda fig: drawn.append(fig) or "<svg></svg>")
    report_html(build_report([run, after], labels_path=labels))
    named = []
    for fig in drawn:
        FigureCanvasAgg(fig).draw()
        title = fig._suptitle or fig.axes[0]._left_title
        named.append((title.get_text().split("\n")[0], fig))
    return named


def _texts(fig: Any) -> list[Text]:
    """The texts the figure shows: tick labels of ticks in view only."""
    tick_labels, shown = set(), []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks():
                for label in (tick.label1, tick.label2):
                    tick_labels.add(id(label))
                    loc = tick.get_loc()
                    if (
                        label.get_visible()
                        and label.get_text()
                        and loc is not None
                        and (lo - 1e-9 <= loc <= hi + 1e-9)
                    ):
                        shown.append(label)
    shown += [
        t for t in fig.findobj(Text)
        if id(t) not in tick_labels and t.get_visible() and t.get_text().strip()
    ]  # fmt: skip
    return shown


def _box(t: Text, fig: Any) -> Any:
    return t.get_window_extent(fig.canvas.get_renderer()).padded(-0.5)


def _geometry_problems(name: str, fig: Any) -> list[str]:
    problems = []
    texts = _texts(fig)
    page = fig.bbox.padded(1)
    boxes = [(t, _box(t, fig)) for t in texts]
    for t, b in boxes:
        if not (page.contains(b.x0, b.y0) and page.contains(b.x1, b.y1)):
            problems.append(f"{name}: {t.get_text()!r} runs past the figure's edge")
    upright = [(t, b) for t, b in boxes if not t.get_rotation()]
    for i, (t, b) in enumerate(upright):
        for u, c in upright[i + 1 :]:
            if b.overlaps(c):
                problems.append(f"{name}: {t.get_text()!r} overlaps {u.get_text()!r}")
    for ax in fig.axes:
        bars = [p.get_window_extent().padded(-0.5) for p in ax.patches if p.get_height()]
        for t, b in boxes:
            if any(b.overlaps(bar) for bar in bars if bar.width > 0 and bar.height > 0):
                problems.append(f"{name}: {t.get_text()!r} covers a bar")
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t.get_text() for t in texts if t in axis.get_ticklabels()]
            if len(set(labels)) != len(labels):
                problems.append(f"{name}: the labels of one axis repeat: {labels}")
    return problems


def _luminance(rgb: Any) -> float:
    """WCAG 2.1 relative luminance (written here apart from the code under test)."""
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: Any, b: Any) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _contrast_problems(name: str, fig: Any) -> list[str]:
    problems = []
    for ax in fig.axes:
        images = [i for i in ax.get_images() if isinstance(i, AxesImage)]
        if not images:
            continue
        image = images[0]
        matrix = image.get_array()
        for t in ax.texts:
            x, y = t.get_position()
            fill = image.cmap(image.norm(matrix[round(y)][round(x)]))
            ratio = _contrast(fill, to_rgb(t.get_color()))
            if ratio < 4.5:
                problems.append(f"{name}: the count at ({x}, {y}) contrasts {ratio:.2f}:1")
    return problems


def test_no_chart_label_overlaps_and_every_heatmap_count_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The two-run page of the golden runs given support-triage's long level labels, a long
    option name and a long question key."""
    figures = _figures(monkeypatch, *_long_inputs(tmp_path))
    assert len(figures) == 11
    problems = []
    for name, fig in figures:
        problems += _geometry_problems(name, fig) + _contrast_problems(name, fig)
    assert problems == []
    # the before/after levels keep enough of their labels to tell them apart when read
    ax = dict(figures)["impact: before and after"].axes[0]
    levels = [t.get_text() for t in [*ax.get_xticklabels(), *ax.get_yticklabels()]]
    assert sum("the customer is working" in text for text in levels) == 3, levels


@pytest.mark.parametrize("grey", [pytest.param(v, id=f"grey-{v}") for v in range(0, 256, 15)])
def test_the_count_colour_reaches_aa_on_any_fill(grey: int) -> None:
    """Black or white, whichever contrasts more: one of them reaches 4.5:1 on every fill (the
    dark grey used before reaches only 3.99:1 on the worst)."""
    fill = (grey / 255,) * 3
    assert _contrast(fill, to_rgb(charts.text_color_on(fill))) >= 4.5
