"""``--fail-on`` for a report: conditions over the judged run, so CI can gate a question-set
change on a labelled sample (``"ece>0.1,near-uniform>0.05,errors>0"``).

A condition is ``[KEY.]NAME OP NUMBER`` with OP one of ``> >= < <=``. Without ``KEY`` it holds
when ANY question meets it. NAME is a scalar metric (``accuracy``, ``brier``, ``log_loss``,
``auroc``, ``ece``, ``macro_f1``, ``within_one``, ``mae``), a flag share (``near-uniform``,
``uncertain``, ``uncalibrated``), a count (``errors``, ``invalid``) or, with two runs,
``changed`` (the share of ids whose answer changed). The judged run is the last one given.
A condition that no question can be measured on (``ece`` without labels) is a usage error,
never a silent pass. A condition met names, per question, the value and, for a flag, a count or
``changed``, how many answers that is and the first ids (issue 17: "``--fail-on met:
near-uniform`` gives no count and no ids").
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .accumulators import FIRST_IDS
from .model import SCALAR_METRICS, QuestionComparison, QuestionReport, Report, RunSummary
from .runs import ReportInputError

__all__ = ["NAMES", "Condition", "evaluate", "parse_conditions"]

_FLAG_NAMES = ("near-uniform", "uncertain", "uncalibrated")
NAMES = (*SCALAR_METRICS, *_FLAG_NAMES, "errors", "invalid", "changed")
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
}


@dataclass(frozen=True)
class Condition:
    text: str
    key: str | None
    name: str
    op: str
    value: float

    def holds(self, measured: float) -> bool:
        return _OPS[self.op](measured, self.value)


def _parse_one(text: str) -> Condition:
    for op in _OPS:  # two-character operators first
        left, sep, right = text.partition(op)
        if sep:
            break
    else:
        raise ReportInputError(
            f"--fail-on: {text!r} is not NAME>NUMBER (operators > >= < <=; names: "
            f"{', '.join(NAMES)})"
        )
    left = left.strip()
    key: str | None = None
    name = left
    if name not in NAMES and "." in left:
        key, _, name = left.rpartition(".")
    if name not in NAMES:
        raise ReportInputError(
            f"--fail-on: unknown name {name!r} in {text!r} (names: {', '.join(NAMES)})"
        )
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

    def text(self, key: str) -> str:
        """``desk 0.15 [6 of 40 answers; first ids t0, t3]``: the value as before, then what
        the answers behind it are."""
        detail = [self.count] if self.count else []
        if self.ids:
            detail.append(f"{self.ids_are} {', '.join(self.ids)}")
        return f"{key} {self.value:.4g}" + (f" [{'; '.join(detail)}]" if detail else "")


def _measure(
    name: str, q: QuestionReport, compared: QuestionComparison | None, run: RunSummary
) -> _Measured | None:
    if name in SCALAR_METRICS:
        value = q.metrics.scalar(name) if q.metrics is not None else None
        return _Measured(value) if value is not None else None
    if name in _FLAG_NAMES:
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


def evaluate(conditions: list[Condition], report: Report) -> list[str]:
    """The conditions met, each as ``text (key value [count; first ids ...], ...)``. Raises
    ReportInputError for a condition that nothing in the report can measure."""
    comparison = report.comparison
    judged = report.judged
    run = report.runs[-1]
    met: list[str] = []
    for c in conditions:
        keys = [c.key] if c.key is not None else list(judged)
        if c.key is not None and c.key not in judged:
            raise ReportInputError(f"--fail-on {c.text}: no question {c.key!r} in the run")
        hits: list[str] = []
        measured = 0
        for key in keys:
            compared = comparison.questions.get(key) if comparison else None
            m = _measure(c.name, judged[key], compared, run)
            if m is None:
                continue
            measured += 1
            if c.holds(m.value):
                hits.append(m.text(key))
        if not measured:
            why = (
                "it needs two runs"
                if c.name == "changed"
                else "it needs --labels"
                if c.name in SCALAR_METRICS
                else "no question measures it"
            )
            raise ReportInputError(f"--fail-on {c.text}: nothing to measure it on ({why})")
        if hits:
            met.append(f"{c.text} ({', '.join(hits)})")
    return met
