"""The report as ONE self-contained HTML file: inline CSS, inline SVG charts, no script and no
link to anything elsewhere, so it opens offline and can be attached to a review.

Sections: the runs; per question its answers (table and distribution chart); against labels the
metrics, a reliability diagram and, for choice and score, the confusion matrix as a heatmap;
with two runs the comparison (table, before/after chart, the ids that changed most). Every chart
is one ``<figure class="chart">`` holding one ``<svg>``. The cells every section shares come
first, then a question's against-labels section, then the page; the gate sections are
``judgedhtml.py``'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from .model import (
    ChoiceDistribution,
    ChoiceMetrics,
    Comparison,
    NoulDistribution,
    NoulMetrics,
    PooledMetrics,
    QuestionReport,
    Report,
    RunSummary,
    ScoreDistribution,
)

__all__ = [
    "report_html",
]

# The HTML report's cells: numbers as the page writes them (``–`` for a missing one), a table
# of escaped cell HTML with its columns of numbers right-aligned, a chart's ``<figure>``.


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


# The HTML report's against-labels section of one question: its metrics, bands and threshold,
# the ECE's interval and floor, the wire's metrics of a recalibrated run, the threshold table,
# per-option calibration and coverage, and its charts (reliability, recalibration, per option,
# confusion).


_METRICS = {
    "noul": ("accuracy", "brier", "log_loss", "auroc", "ece"),
    "choice": ("accuracy", "brier", "log_loss", "ece", "macro_f1"),
    "score": ("accuracy", "within_one", "mae", "brier", "rps", "ece"),
}


def _metrics(key: str, q: QuestionReport, charts: Any) -> str:
    m = q.metrics
    assert m is not None, "called for labelled questions only"
    names = _METRICS.get(q.type, ())
    if "log_loss" in names:  # issue 47: nll beside log_loss (equal without --log-floor)
        at = names.index("log_loss") + 1
        names = (*names[:at], "nll", *names[at:])
    cells = [_num(m.scalar(n)) for n in names]
    if m.temperature is not None:
        names, cells = (*names, "temperature"), [*cells, _num(m.temperature)]
    parts = [
        f"<h3>{escape(key)}: against {q.labelled} labels</h3>",
        _table(list(names), [cells]),
    ]
    if q.labelled_invalid:
        parts.append(f"<p>{q.labelled_invalid} labelled invalid answers left out of the "
                     "metrics.</p>")  # fmt: skip
    if isinstance(m, NoulMetrics):
        bands = m.bands
        rows = [
            [name, str(b.n), _num(b.precision, 2), _num(b.recall, 2)]
            for name, b in (("yes", bands.yes), ("no", bands.no))
        ]
        parts.append(_table(["band", "answers", "precision", "recall"], rows))
        parts.append(f"<p>uncertain band: {_pct(bands.uncertain.share)} of labelled answers</p>")
        t = m.threshold
        if t is not None:
            if t.threshold is None:
                parts.append(
                    f"<p>No yes-threshold reaches precision {t.target_precision:g} on these "
                    "labels.</p>"
                )
            else:
                parts.append(
                    f"<p>Precision ≥ {t.target_precision:g} from p ≥ {t.threshold:g}: "
                    f"precision {_num(t.precision, 2)}, recall {_num(t.recall, 2)} "
                    f"({t.yes} yes).</p>"
                )
    if isinstance(m, ChoiceMetrics):
        split = m.accuracy_by_near_uniform
        parts.append(
            _table(
                ["answers", "n", "accuracy"],
                [
                    [
                        "near-uniform",
                        str(split.near_uniform.n),
                        _num(split.near_uniform.accuracy, 2),
                    ],
                    [
                        "not near-uniform",
                        str(split.not_near_uniform.n),
                        _num(split.not_near_uniform.accuracy, 2),
                    ],
                ],
            )
        )
    parts += _calibration_parts(q)
    figures = [_chart(charts.reliability_diagram(key, q), f"{key}: reliability diagram")]
    if q.recalibrated is not None:
        figures.append(_chart(charts.recalibration_diagram(key, q), f"{key}: recalibration"))
    if isinstance(m, ChoiceMetrics) and any(o.skipped is None for o in m.per_option or ()):
        figures.append(_chart(charts.option_reliability(key, m.per_option), f"{key}: per option"))
    if not isinstance(m, NoulMetrics):
        figures.append(_chart(charts.confusion_heatmap(key, m.confusion), f"{key}: confusion"))
    bins = _table(
        ["bin", "n", "mean p", "accuracy"],
        [
            [f"{b.lo:.3g}–{b.hi:.3g}", str(b.n), _num(b.confidence, 2), _num(b.accuracy, 2)]
            for b in q.reliability
            if b.n
        ],
    )
    parts.append(f'<div class="charts">{"".join(figures)}</div>')
    parts.append(f"<details><summary>reliability bins</summary>{bins}</details>")
    return "".join(parts)


def pooled_html(p: PooledMetrics) -> str:
    """``--pool``: the one row over every labelled answer of every question (issue 47)."""
    names = ["labelled", "accuracy", "nll", "ece (top)"]
    cells = [str(p.labelled), _num(p.accuracy), _num(p.nll), _num(p.ece)]
    u = p.ece_uncertainty
    if u is not None:
        names += ["floor mean", "floor median", "floor p95"]
        cells += [_num(u.floor_mean), _num(u.floor_median), _num(u.floor_p95)]
    if p.temperature is not None:
        names, cells = [*names, "temperature"], [*cells, _num(p.temperature)]
    if p.invalid:
        names, cells = [*names, "invalid left out"], [*cells, str(p.invalid)]
    return "<h3>All questions pooled</h3>" + _table(names, [cells])


def _calibration_parts(q: QuestionReport) -> list[str]:
    """Issue 24's figures: the ECE's interval and floor, the wire's metrics of a recalibrated
    run, the noul threshold table and pair, choice's per-option ECE and coverage."""
    m = q.metrics
    assert m is not None
    parts = []
    u, ece = m.ece_uncertainty, m.scalar("ece")
    if u is not None and ece is not None:
        verdict = "above the floor" if u.above_floor else "indistinguishable from calibrated"
        parts.append(
            f"<p>ECE {_num(ece)} ({_num(u.low)}–{_num(u.high)}, 95% bootstrap), floor p95 "
            f"{_num(u.floor_p95)} (mean {_num(u.floor_mean)}, median {_num(u.floor_median)}, "
            f"{u.floor_draws} draws): {verdict}.</p>"
        )
    r = q.recalibrated
    if r is not None:
        names = _METRICS.get(q.type, ())
        rows = [["recalibrated", *(_num(m.scalar(n)) for n in names)]]
        if r.wire_metrics is not None:
            rows.append(["wire", *(_num(r.wire_metrics.scalar(n)) for n in names)])
        parts.append(f"<p>{r.answers} answers recalibrated (--calibration); measured as such, "
                     "the wire's beside them:</p>")  # fmt: skip
        parts.append(_table(["probabilities", *names], rows))
    if isinstance(m, NoulMetrics):
        pair = m.thresholds
        if pair is not None and pair.yes is not None:
            parts.append(
                f"<p>Thresholds for precision ≥ {pair.target_precision:g}: yes ≥ {pair.yes:g} "
                f"(precision {_num(pair.yes_precision, 2)}), no ≤ {pair.no:g} (precision "
                f"{_num(pair.no_precision, 2)}).</p>"
            )
        if m.threshold_table:
            rows = [[f"{t.cut:.2f}", _num(t.precision, 2), _num(t.recall, 2), _pct(t.coverage),
                     f"{(100 - round(t.cut * 100)) / 100:.2f}", _num(t.no_precision, 2),
                     _num(t.no_recall, 2), _pct(t.no_coverage)]
                    for t in m.threshold_table]  # fmt: skip
            table = _table(["yes when p ≥", "precision", "recall", "coverage", "no when p ≤",
                            "precision", "recall", "coverage"], rows)  # fmt: skip
            parts.append(f"<details><summary>threshold table</summary>{table}</details>")
    if isinstance(m, ChoiceMetrics):
        if m.per_option:
            rows = [[escape(o.option), str(o.labelled), _num(o.ece),
                     escape(o.skipped) if o.skipped else ""] for o in m.per_option]  # fmt: skip
            parts.append(_table(["option (one vs rest)", "labelled", "ece", "left out"], rows))
        if m.accuracy_coverage:
            rows = [[f"{p.floor:.2f}", str(p.answered), _pct(p.coverage), _num(p.accuracy, 2)]
                    for p in m.accuracy_coverage]  # fmt: skip
            table = _table(["confidence ≥", "answered", "coverage", "accuracy"], rows)
            parts.append(f"<details><summary>accuracy against coverage</summary>{table}</details>")
    return parts


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;
max-width:1100px;padding:0 1rem;color:#1d1d1f;line-height:1.4}
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2.2rem;
border-bottom:1px solid #ddd;padding-bottom:.2rem}h3{font-size:1rem;margin:1.4rem 0 .4rem}
table{border-collapse:collapse;margin:.4rem 0 1rem;font-size:.85rem}
th,td{padding:.2rem .6rem;border-bottom:1px solid #eee;text-align:left}
th.n,td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f5f5f7}
.charts{display:flex;flex-wrap:wrap;gap:1rem;align-items:flex-start}
figure.chart{margin:0}figure.chart svg{max-width:100%;height:auto}
.flag{color:#a15c00;font-weight:600}.muted{color:#777}.run{margin:.2rem 0}
code{background:#f5f5f7;padding:0 .25rem;border-radius:3px}
"""


def _runs(report: Report) -> str:
    rows = []
    for run in report.runs:
        usage = run.usage
        cost = "not reported" if usage.cost is None else f"${usage.cost:.4f}"
        errors = ", ".join(f"{escape(k)} {v}" for k, v in run.errors.items()) or "0"
        models = ", ".join(f"{escape(k)} ({v})" for k, v in run.models.items()) or "–"
        rows.append(
            [
                f"<code>{escape(run.path)}</code>",
                str(run.records),
                str(run.answered),
                errors,
                str(run.labelled),
                models,
                f"{usage.input_tokens} in / {usage.output_tokens} out" + _cached(run),
                cost,
            ]
        )
    head = ["run", "records", "answered", "errors", "labelled", "models", "tokens", "cost"]
    return _table(head, rows)


def _cached(run: RunSummary) -> str:
    """Cached answers apart from what the run spent (issue 17)."""
    if not run.cached_records:
        return ""
    cached = run.cached_usage
    return (
        f"; {run.cached_records} cached records ({cached.input_tokens} in / "
        f"{cached.output_tokens} out, not spent)"
    )


def _flags(q: QuestionReport) -> str:
    words = [
        f'<span class="flag">{escape(name)}</span> {_pct(v.share)}'
        for name, v in q.flags.items()
        if v.n
    ]
    if q.invalid:
        words.append(f'<span class="flag">invalid</span> {q.invalid}')
    return ", ".join(words) or '<span class="muted">none</span>'


def _overview(questions: Mapping[str, QuestionReport]) -> str:
    rows = [
        [
            escape(key),
            escape(q.type),
            str(q.n),
            str(sum(q.errors.values())),
            _num(q.mean_confidence, 2),
            str(q.labelled),
            _flags(q),
        ]
        for key, q in questions.items()
    ]
    return _table(
        ["question", "type", "answered", "errors", "mean conf", "labelled", "flagged"], rows
    )


def _distribution_table(q: QuestionReport) -> str:
    d = q.distribution
    if isinstance(d, NoulDistribution):
        rows = [[f"{b.lo:.1f}–{b.hi:.1f}", str(b.n)] for b in d.histogram]
        bands = _table(
            ["band", "answers", "share"],
            [[escape(b), str(v.n), _pct(v.share)] for b, v in d.bands.items()],
        )
        return _table(["p", "answers"], rows) + bands
    if isinstance(d, ChoiceDistribution):
        return _table(
            ["option", "answers", "share"],
            [[escape(o), str(v.n), _pct(v.share)] for o, v in d.options.items()],
        )
    if isinstance(d, ScoreDistribution):
        table = _table(
            ["level", "label", "answers", "share"],
            [[escape(k), escape(v.label), str(v.n), _pct(v.share)] for k, v in d.levels.items()],
        )
        fits = ", ".join(
            f"{escape(k)} {_pct(v.share)}" for k, v in d.confidence_fits.items() if v.n
        )
        fitted = f"; confidence fits {fits}" if fits else "; confidence fits no known formula"
        return table + f"<p>mean score {_num(d.mean_score, 2)}{fitted}</p>"
    return '<p class="muted">a type the library does not model: counted only</p>'


def _fit(report: Report) -> str:
    fit = report.calibration_fit
    if fit is None:
        return ""
    p = fit.provenance
    rows = []
    for key, m in fit.questions.items():
        before, after = m.before or {}, m.after or {}
        cells = [f"{_num(before.get(n))} → {_num(after.get(n))}" if m.kind else "–"
                 for n in ("ece", "brier", "log_loss")]  # fmt: skip
        rows.append([escape(key), escape(m.type), str(m.labelled),
                     escape(m.kind or f"skipped: {m.skipped}"), *cells])  # fmt: skip
    note = f"<p>{escape(fit.provenance_note)}</p>" if fit.provenance_note else ""
    return (
        f'<h2>Calibration maps <span class="muted">(fitted on run '
        f"{escape(report.runs[0].path)})</span></h2><p>Written to <code>{escape(fit.path)}"
        f"</code> (sha256 "
        f"<code>{escape(fit.sha256[:12])}</code>) for model {escape(str(p['model']))}, style "
        f"{escape(str(p['style']))}, pack size {p['pack_size']}; cross-validated.</p>{note}"
        + _table(["question", "type", "labelled", "map", "ece", "brier", "log_loss"], rows)
    )


def _comparison(comparison: Comparison, before: Mapping[str, QuestionReport], charts: Any) -> str:
    after = comparison.after_questions
    parts = [
        '<h2>Before and after <span class="muted">(both runs)</span></h2>',
        f"<p>before <code>{escape(comparison.before)}</code>, after "
        f"<code>{escape(comparison.after)}</code></p>",
    ]
    rows = []
    for key, c in comparison.questions.items():
        deltas = c.metric_deltas or {}
        rows.append(
            [
                escape(key),
                str(c.compared),
                f"{c.changed} ({_pct(c.changed_share)})",
                _num(c.mean_abs_delta_p),
                *(_signed(deltas.get(n)) for n in ("accuracy", "brier", "ece")),
            ]
        )
    parts.append(
        _table(
            ["question", "compared", "changed", "mean |Δp|", "Δ accuracy", "Δ brier", "Δ ece"],
            rows,
        )
    )
    for key, c in comparison.questions.items():
        parts.append(f"<h3>{escape(key)}</h3>")
        svg = charts.comparison_chart(key, before.get(key), after.get(key))
        parts.append(f'<div class="charts">{_chart(svg, f"{key}: before and after")}</div>')
        if c.top_changed:
            parts.append(
                _table(
                    ["id that changed most", "before", "after", "|Δp|"],
                    [
                        [
                            escape(str(t.id)),
                            escape(str(t.before)),
                            escape(str(t.after)),
                            _num(t.delta_p),
                        ]
                        for t in c.top_changed
                    ],
                )
            )
    return "".join(parts)


def report_html(report: Report) -> str:
    """The whole page. Raises ``charts.MissingChartLibrary`` without matplotlib."""
    from . import charts

    questions = report.questions
    named = report.section_run()
    title = "toolnexus report"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{title}</title><style>{_CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        f'<p class="muted">{report.records} records, {report.labelled} labelled</p>',
        "<h2>Runs</h2>",
        _runs(report),
        f'<h2>Questions <span class="muted">({escape(named)})</span></h2>',
        _overview(questions),
    ]
    for key, q in questions.items():
        parts.append(f'<h3>{escape(key)} <span class="muted">({escape(q.type)})</span></h3>')
        chart = ""
        if q.type in _METRICS:
            chart = _chart(charts.distribution_chart(key, q), f"{key}: answers")
        parts.append(f'<div class="charts">{chart}<div>{_distribution_table(q)}</div></div>')
    labelled = [(k, q) for k, q in questions.items() if q.labelled]
    if labelled:
        parts.append(f'<h2>Against labels <span class="muted">({escape(named)})</span></h2>')
        parts.append(f'<p class="muted">{escape(report.definitions.describe())}</p>')
        if report.pooled is not None:
            parts.append(pooled_html(report.pooled))
        for key, q in labelled:
            parts.append(_metrics(key, q, charts))
    parts.append(_fit(report))
    if report.gates or report.paired or report.sweeps or report.selective:
        from .judgedhtml import judged_html

        parts.append(judged_html(report))
    if report.comparison:
        parts.append(_comparison(report.comparison, questions, charts))
    parts.append("</body></html>\n")
    return "\n".join(parts)
