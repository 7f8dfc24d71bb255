"""The table form of a ``toolnexus report``: Rich tables plus small in-terminal charts.

Charts are bars of block characters on a terminal and of ``#`` when piped or under
``NO_COLOR``, so the words and numbers read the same everywhere; the renderer in ``render.py``
calls this, nothing else prints a report. The against-labels section's tables and lines are
``labelled.py``'s (re-exported here), the gate sections ``judged.py``'s, the cells both share
``cells.py``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core import printable, registry
from ...metrics import DEFAULT_DEFINITIONS, MetricDefinitions
from ...report import (
    CalibrationFit,
    ChoiceDistribution,
    ChoiceMetrics,
    Comparison,
    Confusion,
    EceUncertainty,
    NearUniformSplit,
    NoulDistribution,
    NoulMetrics,
    PooledMetrics,
    QuestionMetrics,
    QuestionReport,
    Report,
    RunSummary,
    ScoreDistribution,
    map_text,
)
from .grid import Bar, _num, _pct, _signed, _table

__all__ = [
    "RELIABILITY_BAR",
    "ece_text",
    "pooled_line",
    "print_report",
]

# The table renderer's against-labels section of a report: each type's metrics table, the
# reliability chart, the ece line, a noul question's bands and thresholds, a choice question's
# per-option lines and coverage, the confusion matrix. Kept apart from ``report.py`` so neither
# passes ~400 lines.


#: The bar column's header in the reliability table: what the bar draws (issue 31 item 15).
RELIABILITY_BAR = "accuracy bar"


#: The scalar metrics of each type, in the table's column order.
_METRIC_COLUMNS = {
    "noul": ("accuracy", "brier", "log_loss", "auroc", "ece"),
    "choice": ("accuracy", "brier", "log_loss", "ece", "macro_f1"),
    "score": ("accuracy", "within_one", "mae", "brier", "rps", "ece"),
}


def _metric_columns(qtype: str, d: MetricDefinitions) -> tuple[str, ...]:
    """A type's columns: ``nll`` beside ``log_loss`` at a ``--log-floor`` (without one they
    are equal), and the refit ``temperature`` with ``--fit-temperature`` (issue 47)."""
    columns = _METRIC_COLUMNS[qtype]
    if d.log_floor is not None:
        at = columns.index("log_loss") + 1 if "log_loss" in columns else len(columns)
        columns = (*columns[:at], "nll", *columns[at:])
    if d.fit_temperature:
        columns = (*columns, "T")
    return columns


def _metrics_tables(
    questions: Mapping[str, QuestionReport], d: MetricDefinitions = DEFAULT_DEFINITIONS
) -> list[Any]:
    """One table per question type (each type has its own metrics)."""
    out = []
    for qtype in _METRIC_COLUMNS:
        columns = _metric_columns(qtype, d)
        rows = [
            (k, q.metrics)
            for k, q in questions.items()
            if q.type == qtype and q.labelled and q.metrics is not None
        ]
        if not rows:
            continue
        table = _table(qtype, "labelled", *columns, right=("labelled", *columns))
        for key, m in rows:
            table.add_row(key, str(questions[key].labelled), *(_num(_value(m, c)) for c in columns))
        out.append(table)
    return out


def _value(m: QuestionMetrics, name: str) -> float | None:
    return m.scalar(name) if name != "T" else m.temperature


def pooled_line(p: PooledMetrics) -> str:
    """``--pool``: the one row over every labelled answer."""
    u = p.ece_uncertainty
    floor = "" if u is None else f", {_floor_text(u)}"
    shown = "" if p.temperature is None else f", temperature {_num(p.temperature)}"
    left_out = f"; {p.invalid} invalid left out" if p.invalid else ""
    return (
        f"all questions pooled: {p.labelled} labelled, accuracy {_num(p.accuracy)}, nll "
        f"{_num(p.nll)}, ece (top) {_num(p.ece)}{floor}{shown}{left_out}"
    )


def _floor_text(u: EceUncertainty) -> str:
    return (
        f"floor p95 {_num(u.floor_p95)} (mean {_num(u.floor_mean)}, median "
        f"{_num(u.floor_median)}, {u.floor_draws} draws)"
    )


def _bin_text(lo: float, hi: float) -> str:
    if round(lo, 1) == lo and round(hi, 1) == hi:
        return f"{lo:.1f}-{hi:.1f}"
    return f"{lo:.3f}-{hi:.3f}"


def _reliability_chart(
    q: QuestionReport, plain: bool, d: MetricDefinitions = DEFAULT_DEFINITIONS
) -> Any:
    # what the bins hold (issue 47: --ece-of top bins a noul's max(p, 1 - p))
    what = "p" if registry.answers_probability(q.type) and d.of(q.type) == "yes" else "top-1 p"
    table = _table(
        what,
        "n",
        "confidence",
        "accuracy",
        "gap",
        RELIABILITY_BAR,
        right=("n", "confidence", "accuracy", "gap"),
    )
    for b in q.reliability:
        if not b.n or b.accuracy is None or b.confidence is None:
            continue
        acc, conf = b.accuracy, b.confidence
        table.add_row(
            _bin_text(b.lo, b.hi),
            str(b.n),
            _num(conf, 2),
            _num(acc, 2),
            _signed(acc - conf),
            Bar(acc, plain),
        )
    return table


def ece_text(m: QuestionMetrics) -> str:
    """``ece 0.041 (0.020-0.070), floor p95 0.045: indistinguishable from calibrated`` (issue
    24), or the bare ``ece 0.041`` without the intervals."""
    ece = m.scalar("ece")
    u = m.ece_uncertainty
    if u is None or ece is None:
        return f"ece {_num(ece)}"
    verdict = "above the floor" if u.above_floor else "indistinguishable from calibrated"
    return f"ece {_num(ece)} ({_num(u.low)}-{_num(u.high)}), {_floor_text(u)}: {verdict}"


def _choice_details(key: str, m: ChoiceMetrics) -> list[str]:
    lines = []
    for o in m.per_option or ():
        if o.skipped:
            lines.append(f"{key}: option {o.option}: one-vs-rest left out ({o.skipped})")
        else:
            lines.append(f"{key}: option {o.option}: one-vs-rest ece {_num(o.ece)} over "
                         f"{o.labelled} labelled {o.option}")  # fmt: skip
    return lines


def _coverage_table(m: ChoiceMetrics) -> Any:
    """Accuracy against coverage at every other floor of the 0.05 grid (the JSON has all)."""
    table = _table("confidence >=", "answered", "coverage", "accuracy",
                   right=("confidence >=", "answered", "coverage", "accuracy"))  # fmt: skip
    for i, p in enumerate(m.accuracy_coverage or ()):
        if i % 2 == 0:
            table.add_row(f"{p.floor:.2f}", str(p.answered), _pct(p.coverage), _num(p.accuracy, 2))
    return table


def _noul_details(key: str, m: NoulMetrics) -> list[str]:
    bands = m.bands
    lines = [
        f"{key}: band {name}: {b.n} answers, precision {_num(b.precision, 2)}, "
        f"recall {_num(b.recall, 2)}"
        for name, b in (("yes", bands.yes), ("no", bands.no))
    ]
    lines.append(f"{key}: band uncertain: {_pct(bands.uncertain.share)} of labelled answers")
    t = m.threshold
    if t is not None:
        if t.threshold is None:
            lines.append(
                f"{key}: no yes-threshold reaches precision {t.target_precision:g} on these labels"
            )
        else:
            lines.append(
                f"{key}: precision >= {t.target_precision:g} from p >= {t.threshold:g} "
                f"(precision {_num(t.precision, 2)}, recall {_num(t.recall, 2)}, "
                f"{t.yes} yes)"
            )
    pair = m.thresholds
    if pair is not None and pair.yes is not None:
        lines.append(
            f"{key}: thresholds yes >= {pair.yes:g} (precision {_num(pair.yes_precision, 2)}), "
            f"no <= {pair.no:g} (precision {_num(pair.no_precision, 2)})"
        )
    return lines


def _confusion_table(confusion: Confusion) -> Any:
    names = confusion.labels
    table = _table("label \\ answer", *names, right=tuple(names))
    for name, row in zip(names, confusion.matrix, strict=True):
        table.add_row(name, *(str(v) for v in row))
    return table


def _split_line(key: str, split: NearUniformSplit) -> str:
    nu, other = split.near_uniform, split.not_near_uniform
    return (
        f"{key}: accuracy {_num(nu.accuracy, 2)} on {nu.n} near-uniform answers, "
        f"{_num(other.accuracy, 2)} on {other.n} others"
    )


def _recalibrated_line(key: str, q: QuestionReport) -> str:
    """What a recalibrated run measured, with the wire's metrics beside it."""
    r = q.recalibrated
    assert r is not None
    w = r.wire_metrics
    wire = (
        f"; the wire's own: {ece_text(w)}, brier {_num(w.scalar('brier'))}, "
        f"log_loss {_num(w.scalar('log_loss'))}"
        if w is not None
        else ""
    )
    return f"{key}: {r.answers} answers recalibrated, measured as such{wire}"


def _counts(mapping: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in mapping.items()) or "none"


def _answers_text(q: QuestionReport) -> str:
    d = q.distribution
    if isinstance(d, NoulDistribution):
        return " · ".join(f"{b} {_pct(v.share)}" for b, v in d.bands.items())
    if isinstance(d, ChoiceDistribution):
        top = sorted(d.options.items(), key=lambda kv: -kv[1].n)[:3]
        more = len(d.options) - len(top)
        text = " · ".join(f"{o} {_pct(v.share)}" for o, v in top)
        return text + (f" · +{more} more" if more > 0 else "")
    if isinstance(d, ScoreDistribution):
        return f"mean score {_num(d.mean_score, 2)} · {_fits_text(d)}"
    return "(not modelled)"


def _fits_text(d: ScoreDistribution) -> str:
    """Which known score confidence formulas the answers fit (issue 33), best first."""
    fits = sorted(((v.share or 0.0, k) for k, v in d.confidence_fits.items() if v.n), reverse=True)
    if not fits:
        return "confidence fits no known formula"
    return "confidence fits " + ", ".join(f"{k} {_pct(share)}" for share, k in fits)


def _run_header(run: RunSummary, label: str) -> str:
    usage = run.usage
    cost = "not reported" if usage.cost is None else f"${usage.cost:.4f}"
    errors = sum(run.errors.values())
    lines = [
        f"{label} {run.path}: {run.records} records, {run.answered} answered, "
        f"{errors} errors" + (f" ({_counts(run.errors)})" if errors else ""),
        f"  models {_counts(run.models)}; labelled {run.labelled}",
        f"  tokens {usage.input_tokens} in / {usage.output_tokens} out; cost {cost}",
    ]
    if run.cached_records:
        cached = run.cached_usage
        lines.append(
            f"  {run.cached_records} cached records ({cached.input_tokens} in / "
            f"{cached.output_tokens} out, not spent)"
        )
    if run.uncalibrated_records:
        lines.append(f"  uncalibrated: {run.uncalibrated_records} records")
    for sha, n in (run.recalibrated_by or {}).items():
        lines.append(f"  recalibrated: {n} records by the calibration file sha256 {sha[:12]}")
    return "\n".join(lines)


def _flags_text(q: QuestionReport) -> str:
    """Flags as words with their share, only those that occur (``uncertain 67%``)."""
    words = [f"{name} {_pct(v.share)}" for name, v in q.flags.items() if v.n]
    if q.invalid:
        words.append(f"invalid {q.invalid}")
    return ", ".join(words) or "-"


def _questions_table(questions: Mapping[str, QuestionReport]) -> Any:
    table = _table(
        "question", "type", "n", "errors", "conf", "flagged", right=("n", "errors", "conf")
    )
    for key, q in questions.items():
        table.add_row(
            key,
            q.type,
            str(q.n),
            str(sum(q.errors.values())),
            _num(q.mean_confidence, 2),
            _flags_text(q),
        )
    return table


def _distribution_rows(q: QuestionReport) -> list[tuple[str, int, Any]]:
    d = q.distribution
    if isinstance(d, NoulDistribution):
        n = q.n
        return [(f"{b.lo:.1f}-{b.hi:.1f}", b.n, b.n / n if n else 0.0) for b in d.histogram]
    if isinstance(d, ChoiceDistribution):
        return [(o, v.n, v.share) for o, v in d.options.items()]
    if isinstance(d, ScoreDistribution):
        return [(f"{k} {v.label}", v.n, v.share) for k, v in d.levels.items()]
    return []


def _distribution_chart(key: str, q: QuestionReport, plain: bool) -> Any:
    rows = _distribution_rows(q)
    what = {"noul": "p", "choice": "option", "score": "level"}.get(q.type, "answer")
    table = _table(what, "n", "share", "", right=("n", "share"))
    peak = max((share or 0.0 for _, _, share in rows), default=0.0) or 1.0
    for name, n, share in rows:
        table.add_row(name, str(n), _pct(share), Bar((share or 0.0) / peak, plain))
    return table


def _fit_table(fit: CalibrationFit) -> Any:
    """``--fit-calibration``: each key's map and its cross-validated metrics before -> after."""
    table = _table("question", "type", "labelled", "map", "ece", "brier", "log_loss",
                   right=("labelled",), keep=("ece", "brier", "log_loss"))  # fmt: skip
    for key, m in fit.questions.items():
        if m.kind is None:
            table.add_row(key, m.type, str(m.labelled), "skipped", "-", "-", "-")
            continue
        before, after = m.before or {}, m.after or {}
        table.add_row(key, m.type, str(m.labelled), m.kind, *(
            f"{_num(before.get(n))} -> {_num(after.get(n))}" for n in ("ece", "brier", "log_loss")
        ))  # fmt: skip
    return table


def _comparison(comparison: Comparison) -> list[Any]:
    out: list[Any] = [f"before {comparison.before}  after {comparison.after}"]
    table = _table(
        "question",
        "compared",
        "changed",
        "mean |dp|",
        "d accuracy",
        "d brier",
        "d ece",
        right=("compared", "changed", "mean |dp|", "d accuracy", "d brier", "d ece"),
    )
    for key, c in comparison.questions.items():
        deltas = c.metric_deltas or {}
        table.add_row(
            key,
            str(c.compared),
            f"{c.changed} ({_pct(c.changed_share)})",
            _num(c.mean_abs_delta_p),
            _signed(deltas.get("accuracy")),
            _signed(deltas.get("brier")),
            _signed(deltas.get("ece")),
        )
    out.append(table)
    for key, c in comparison.questions.items():
        if not c.top_changed:
            continue
        top = _table("id", "before", "after", "|dp|", right=("|dp|",))
        out.append(f"{key}: changed most")
        for t in c.top_changed:
            top.add_row(str(t.id), str(t.before), str(t.after), _num(t.delta_p))
        out.append(top)
    return out


def print_report(report: Report, console: Any, *, plain: bool) -> None:
    """Every section of the report, in reading order; its text shown, never obeyed by the
    terminal (:func:`toolnexus.core.safetext.printable`)."""
    from rich.text import Text

    report = map_text(report, printable)

    def heading(text: str) -> None:
        console.print()
        console.print(Text(text, style="bold"))

    for i, run in enumerate(report.runs):
        label = "run" if len(report.runs) == 1 else ("before" if i == 0 else "after")
        console.print(Text(_run_header(run, label)))
    questions = report.questions
    named = report.section_run()
    heading(f"questions ({named})")
    console.print(_questions_table(questions))
    for key, q in questions.items():
        if _distribution_rows(q):
            heading(f"{key} ({q.type}): {_answers_text(q)}")
            console.print(_distribution_chart(key, q, plain))
    if any(q.labelled for q in questions.values()):
        heading(f"against labels ({named})")
        console.print(Text(report.definitions.describe()))
        for table in _metrics_tables(questions, report.definitions):
            console.print(table)
        if report.pooled is not None:
            console.print(Text(pooled_line(report.pooled)))
        for key, q in questions.items():
            m = q.metrics
            if not q.labelled or m is None:
                continue
            heading(f"{key}: reliability ({ece_text(m)})")
            console.print(_reliability_chart(q, plain, report.definitions))
            if q.labelled_invalid:
                console.print(Text(f"{key}: {q.labelled_invalid} labelled invalid answers left "
                                   "out of the metrics"))  # fmt: skip
            if q.recalibrated is not None:
                console.print(Text(_recalibrated_line(key, q)))
            if isinstance(m, NoulMetrics):
                for line in _noul_details(key, m):
                    console.print(Text(line))
            else:
                heading(f"{key}: confusion (rows: label, columns: answer)")
                console.print(_confusion_table(m.confusion))
            if isinstance(m, ChoiceMetrics):
                console.print(Text(_split_line(key, m.accuracy_by_near_uniform)))
                for line in _choice_details(key, m):
                    console.print(Text(line))
                if m.accuracy_coverage:
                    heading(f"{key}: accuracy against coverage (top-1 confidence floor)")
                    console.print(_coverage_table(m))
    fit = report.calibration_fit
    if fit is not None:
        p = fit.provenance
        heading(
            f"calibration maps of {report.runs[0].path} written to {fit.path} (sha256 "
            f"{fit.sha256[:12]}; model "
            f"{p['model']}, style {p['style']}, pack size {p['pack_size']}; cross-validated)"
        )
        if fit.provenance_note:
            console.print(Text(fit.provenance_note))
        console.print(_fit_table(fit))
    if report.gates or report.paired or report.sweeps or report.selective:
        from .judged import gates_table, outcomes_lines, paired_table, selective_table, sweep_table

        if report.selective:
            target = next(iter(report.selective.values())).target_risk
            said = f"; coverage at risk <= {target:g}" if target is not None else ""
            heading(f"selective prediction (answering above a confidence floor{said})")
            console.print(selective_table(report.selective))

        for name, sweep in (report.sweeps or {}).items():
            heading(
                f"sweep of gate {name} ({sweep.cut_points}; let through: {sweep.default}; per "
                "question: caught by direction/by confidence/alone, today's and then the published "
                "partition's)"
            )
            console.print(sweep_table(sweep))
            if sweep.aurc is not None:
                console.print(
                    Text(f"gate {name}: AURC {sweep.aurc:.4f} (risk over coverage, by floor)")
                )

        if report.gates:
            heading("gates (the question file's policies; escalated: declined to decide)")
            console.print(gates_table(report.gates))
            for line in outcomes_lines(report.gates):
                console.print(Text(line))
        if report.paired:
            heading("paired against labels (first run, then second)")
            console.print(paired_table(report.paired))
    comparison = report.comparison
    if comparison:
        heading("comparison")
        for part in _comparison(comparison):
            if isinstance(part, str):
                heading(part)
            else:
                console.print(part)
