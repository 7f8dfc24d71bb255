"""The table renderer's against-labels section of a report: each type's metrics table, the
reliability chart, the ece line, a noul question's bands and thresholds, a choice question's
per-option lines and coverage, the confusion matrix. Kept apart from ``report.py`` so neither
passes ~400 lines."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...metrics.definitions import DEFAULT_DEFINITIONS, MetricDefinitions
from ...qtypes import registry
from ...report.model import (
    ChoiceMetrics,
    Confusion,
    EceUncertainty,
    NearUniformSplit,
    NoulMetrics,
    PooledMetrics,
    QuestionMetrics,
    QuestionReport,
)
from .cells import _num, _pct, _signed, _table
from .grid import Bar

__all__ = ["RELIABILITY_BAR", "ece_text", "pooled_line"]

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
