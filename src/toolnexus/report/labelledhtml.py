"""The HTML report's against-labels section of one question: its metrics, bands and threshold,
the ECE's interval and floor, the wire's metrics of a recalibrated run, the threshold table,
per-option calibration and coverage, and its charts (reliability, recalibration, per option,
confusion). Kept apart from ``html.py`` so neither passes ~400 lines."""

from __future__ import annotations

from html import escape
from typing import Any

from .htmlcells import _chart, _num, _pct, _table
from .model import ChoiceMetrics, NoulMetrics, PooledMetrics, QuestionReport

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
