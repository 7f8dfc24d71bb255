"""``--fail-on`` for a report: conditions over the judged run, so CI can gate a question-set
change on a labelled sample (``"ece>0.1,near-uniform>0.05,errors>0"``).

A condition is ``[KEY.]NAME OP NUMBER`` with OP one of ``> >= < <=`` (the grammar of
``toolnexus.core.comparisons``, which ``filter --where`` reads too), or ``[KEY.]ece>floor``:
the ECE above its noise floor's 95th percentile (issue 24: measured with the report's
intervals, so not with ``--no-intervals``). Without ``KEY`` it holds
when ANY question meets it. NAME is a scalar metric (``accuracy``, ``brier``, ``log_loss``,
``nll``, ``auroc``, ``ece``, ``macro_f1``, ``within_one``, ``mae``, ``rps``; ``nll`` and ``ece``
as the report's definitions, issue 47, define them), a flag share (``near-uniform``,
``uncertain``, ``uncalibrated``), a count (``errors``, ``invalid``) or, with two runs,
``changed`` (the share of ids whose answer changed). The judged run is the last one given.
A gate of the question file is a KEY too (issue 35): ``escalated`` (the share of records it
escalated) and ``accuracy`` (against a labels column named after it); with two runs and labels,
any question or gate measures ``fixes`` and ``breaks`` (counts) and ``mcnemar_p``.
A condition that no question can be measured on (``ece`` without labels) is a usage error,
never a silent pass. A condition met names, per question, the value and, for a flag, a count or
``changed``, how many answers that is and the first ids (issue 17: "``--fail-on met:
near-uniform`` gives no count and no ids").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import OPERATORS
from .accumulators import FIRST_IDS, REPORT_FLAGS
from .inputs import ReportInputError
from .model import SCALAR_METRICS, QuestionComparison, QuestionReport, Report, RunSummary

__all__ = ["JUDGED_NAMES", "NAMES", "Condition", "check", "evaluate", "parse_conditions"]

#: ``ece>floor``: the right-hand side naming the noise floor's 95th percentile
FLOOR = "floor"
#: What a gate or a paired comparison measures (``report.judged``), beside the questions' names.
JUDGED_NAMES = ("escalated", "fixes", "breaks", "mcnemar_p")
NAMES = (*SCALAR_METRICS, *REPORT_FLAGS, "errors", "invalid", "changed", *JUDGED_NAMES)
#: the grammar's order comparisons (``==`` and ``!=`` mean nothing on a measured share)
_OPS: dict[str, Callable[[Any, Any], bool]] = {op: OPERATORS[op] for op in (">=", "<=", ">", "<")}


@dataclass(frozen=True)
class Condition:
    text: str
    key: str | None
    name: str
    op: str
    value: float
    #: ``ece>floor``: the ECE above its noise floor's p95 (``value`` is unused)
    floor: bool = False

    def holds(self, measured: float) -> bool:
        return _OPS[self.op](measured, self.value)


def _parse_one(text: str) -> Condition:
    # The grammar's tokenizer (``toolnexus.core.comparisons``, shared with ``filter --where``), then
    # this command's own operators and names.
    from ..core import ConfigError, parse_comparison

    try:
        parsed = parse_comparison(text)
    except ConfigError:
        parsed = None
    if parsed is None or parsed.op.text not in _OPS:
        raise ReportInputError(
            f"--fail-on: {text!r} is not NAME>NUMBER (operators > >= < <=; names: "
            f"{', '.join(NAMES)})"
        )
    left, op, right = parsed.left.text, parsed.op.text, parsed.right.text
    key: str | None = None
    name = left
    if name not in NAMES and "." in left:
        key, _, name = left.rpartition(".")
    if name not in NAMES:
        raise ReportInputError(
            f"--fail-on: unknown name {name!r} in {text!r} (names: {', '.join(NAMES)})"
        )
    if right.strip() == FLOOR:
        if name != "ece" or op != ">":
            raise ReportInputError(
                f"--fail-on: {text!r}: only ece>floor compares with the noise floor"
            )
        return Condition(text.strip(), key, name, op, 0.0, floor=True)
    try:
        value = float(right)
    except ValueError:
        raise ReportInputError(f"--fail-on: {text!r}: {right.strip()!r} is not a number") from None
    return Condition(text.strip(), key, name, op, value)


def parse_conditions(text: str | None) -> list[Condition]:
    """``"ece>0.1,near-uniform>0.05"`` -> conditions (empty for None or blank)."""
    if not text:
        return []
    return [_parse_one(part) for part in text.split(",") if part.strip()]


@dataclass(frozen=True)
class _Measured:
    """A condition's value on one question, and the answers behind it (none for a metric)."""

    value: float
    count: str = ""
    ids: Sequence[str] = ()
    ids_are: str = "first ids"
    #: ``ece>floor``: whether the ECE is above the floor (decides instead of the value)
    above: bool | None = None

    def text(self, key: str) -> str:
        """``desk 0.15 [6 of 40 answers; first ids t0, t3]``: the value as before, then what
        the answers behind it are."""
        detail = [self.count] if self.count else []
        if self.ids:
            detail.append(f"{self.ids_are} {', '.join(self.ids)}")
        return f"{key} {self.value:.4g}" + (f" [{'; '.join(detail)}]" if detail else "")


def _measure(
    c: Condition, q: QuestionReport, compared: QuestionComparison | None, run: RunSummary
) -> _Measured | None:
    name = c.name
    if c.floor:
        m = q.metrics
        u = getattr(m, "ece_uncertainty", None) if m is not None else None
        ece = m.scalar("ece") if m is not None else None
        if u is None or ece is None:
            return None
        return _Measured(ece, f"floor p95 {u.floor_p95:.4g}", above=u.above_floor)
    if name in SCALAR_METRICS:
        value = q.metrics.scalar(name) if q.metrics is not None else None
        return _Measured(value) if value is not None else None
    if name in REPORT_FLAGS:
        flag = q.flags[name]
        if flag.share is None:
            return None
        return _Measured(flag.share, f"{flag.n} of {q.n} answers", flag.ids)
    if name == "errors":
        return _Measured(sum(q.errors.values()), ids=run.error_ids)
    if name == "invalid":
        return _Measured(q.invalid, ids=q.invalid_ids)
    if compared is None or compared.changed_share is None:
        return None
    return _Measured(
        compared.changed_share,
        f"{compared.changed} of {compared.compared} ids",
        [t.id for t in compared.top_changed if t.before != t.after][:FIRST_IDS],
        "most moved ids",
    )


def _measure_judged(c: Condition, key: str, report: Report) -> _Measured | None:
    """A gate's or a paired comparison's value for ``c`` (None: not measured here)."""
    gate = (report.gates or {}).get(key)
    paired = (report.paired or {}).get(key)
    if c.name == "escalated" and gate is not None and gate.escalated_share is not None:
        return _Measured(
            gate.escalated_share, f"{gate.escalated} of {gate.n} records", gate.escalated_ids
        )
    if c.name == "accuracy" and gate is not None and gate.accuracy is not None:
        return _Measured(gate.accuracy, f"{gate.agreed} of {gate.labelled} labelled records")
    if paired is not None and c.name in ("fixes", "breaks"):
        ids = paired.fix_ids if c.name == "fixes" else paired.break_ids
        return _Measured(getattr(paired, c.name), f"of {paired.compared} labelled ids", ids)
    if paired is not None and c.name == "mcnemar_p":
        return _Measured(
            paired.mcnemar_p, f"{paired.fixes} fixes, {paired.breaks} breaks of {paired.compared}"
        )
    return None


def check(conditions: list[Condition], report: Report) -> list[tuple[Condition, str | None]]:
    """Each condition with what met it (``text (key value ...)``), or None when it holds
    nowhere: one entry per condition, in order (``--junit`` writes one test case each).
    Raises ReportInputError for a condition that nothing in the report can measure."""
    comparison = report.comparison
    judged = report.judged
    run = report.runs[-1]
    extra = [k for k in (*(report.gates or {}), *(report.paired or {})) if k not in judged]
    out: list[tuple[Condition, str | None]] = []
    for c in conditions:
        keys = [c.key] if c.key is not None else [*judged, *dict.fromkeys(extra)]
        if c.key is not None and c.key not in judged and c.key not in extra:
            raise ReportInputError(f"--fail-on {c.text}: no question or gate {c.key!r} in the run")
        hits: list[str] = []
        measured = 0
        for key in keys:
            m = None
            if key in judged and c.name not in JUDGED_NAMES:
                compared = comparison.questions.get(key) if comparison else None
                m = _measure(c, judged[key], compared, run)
            if m is None:
                m = _measure_judged(c, key, report)
            if m is None:
                continue
            measured += 1
            if m.above if m.above is not None else c.holds(m.value):
                hits.append(m.text(key))
        if not measured:
            needs_labels = c.floor or c.name in SCALAR_METRICS
            why = (
                report.labels_problem
                if needs_labels and report.labels_problem
                else (
                    "it needs --labels and the intervals (--intervals past 20,000 labels; not "
                    "--no-intervals)"
                    if c.floor
                    else "it needs two runs"
                    if c.name == "changed"
                    else "it needs --labels"
                    if c.name in SCALAR_METRICS
                    else "it needs two runs and --labels"
                    if c.name in ("fixes", "breaks", "mcnemar_p")
                    else "no gate in the run: a question file with gates:"
                    if c.name == "escalated"
                    else "no question measures it"
                )
            )
            raise ReportInputError(f"--fail-on {c.text}: nothing to measure it on ({why})")
        out.append((c, f"{c.text} ({', '.join(hits)})" if hits else None))
    return out


def evaluate(conditions: list[Condition], report: Report) -> list[str]:
    """The conditions met, each as ``text (key value [count; first ids ...], ...)``. Raises
    ReportInputError for a condition that nothing in the report can measure."""
    return [met for _, met in check(conditions, report) if met is not None]
