"""``--fail-on`` for a report: conditions over the judged run, so CI can gate a question-set
change on a labelled sample (``"ece>0.1,near-uniform>0.05,errors>0"``).

A condition is ``[KEY.]NAME OP NUMBER`` with OP one of ``> >= < <=``. Without ``KEY`` it holds
when ANY question meets it. NAME is a scalar metric (``accuracy``, ``brier``, ``log_loss``,
``auroc``, ``ece``, ``macro_f1``, ``within_one``, ``mae``), a flag share (``near-uniform``,
``uncertain``, ``uncalibrated``), a count (``errors``, ``invalid``) or, with two runs,
``changed`` (the share of ids whose answer changed). The judged run is the last one given.
A condition that no question can be measured on (``ece`` without labels) is a usage error,
never a silent pass.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .compare import SCALAR_METRICS
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


def _measure(name: str, block: Mapping[str, Any], compared: Mapping[str, Any] | None) -> Any:
    if name in SCALAR_METRICS:
        return block.get("metrics", {}).get(name)
    if name in _FLAG_NAMES:
        return block["flags"][name]["share"]
    if name == "errors":
        return sum(block["errors"].values())
    if name == "invalid":
        return block["invalid"]
    return compared.get("changed_share") if compared is not None else None


def evaluate(conditions: list[Condition], report: Mapping[str, Any]) -> list[str]:
    """The conditions met, each as ``text (key value, ...)``. Raises ReportInputError for a
    condition that nothing in the report can measure."""
    comparison = report.get("comparison")
    judged = comparison["after_questions"] if comparison else report["questions"]
    met: list[str] = []
    for c in conditions:
        keys = [c.key] if c.key is not None else list(judged)
        if c.key is not None and c.key not in judged:
            raise ReportInputError(f"--fail-on {c.text}: no question {c.key!r} in the run")
        hits: list[str] = []
        measured = 0
        for key in keys:
            compared = comparison["questions"].get(key) if comparison else None
            value = _measure(c.name, judged[key], compared)
            if not isinstance(value, int | float):
                continue
            measured += 1
            if c.holds(value):
                hits.append(f"{key} {value:.4g}")
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
