"""The table renderer's gate and paired-comparison sections of a report (issue 35): kept
apart from ``report.py``, whose tables fit the terminal (its own ``_table``), where these are
plain."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...report import GateReport, GateSweep, PairedCount, SelectiveReport
from .grid import _table as _grid

__all__ = ["gates_table", "outcomes_lines", "paired_table", "selective_table", "sweep_table"]


def _table(*columns: str, right: tuple[str, ...] = (), keep: tuple[str, ...] = ()) -> Any:
    """The report's :class:`~.grid.Grid`: on a narrow terminal its labels wrap and its numbers
    and ``keep`` columns stay whole (issue 43 item 10: Rich alone cut ``1/12…``)."""
    return _grid(*columns, right=right, keep=keep)


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def gates_table(gates: Mapping[str, GateReport]) -> Any:
    """One row per gate: records, each action's count, escalations, agreement with labels."""
    table = _table(
        "gate",
        "records",
        "actions",
        "escalated",
        "agreed",
        right=("records", "escalated", "agreed"),
    )
    for name, g in gates.items():
        actions = ", ".join(f"{a} {n}" for a, n in g.actions.items()) or "none"
        agreed = f"{g.agreed}/{g.labelled} {_share(g.accuracy)}" if g.labelled else "-"
        table.add_row(name, str(g.n), actions, f"{g.escalated} {_share(g.escalated_share)}", agreed)
    return table


def outcomes_lines(gates: Mapping[str, GateReport]) -> list[str]:
    """Per gate with outcome labels: what it did with each outcome."""
    lines = []
    for name, g in gates.items():
        for outcome, actions in (g.outcomes or {}).items():
            did = ", ".join(f"{a} {n}" for a, n in actions.items())
            lines.append(f"{name}: labelled {outcome}: {did}")
    return lines


def paired_table(paired: Mapping[str, PairedCount]) -> Any:
    """One row per question or gate: fixes, breaks, both right, both wrong, McNemar's p."""
    cols = ("compared", "fixes", "breaks", "both right", "both wrong", "mcnemar p")
    table = _table("key", *cols, right=cols)
    for key, p in paired.items():
        table.add_row(
            key,
            str(p.compared),
            str(p.fixes),
            str(p.breaks),
            str(p.both_right),
            str(p.both_wrong),
            f"{p.mcnemar_p:.4g}",
        )
    return table


def sweep_table(sweep: GateSweep) -> Any:
    """One row per floor and outcome; per rule question, caught by direction / by confidence /
    alone, today's way and then the published partition's (issue 42 item 8)."""
    keys = list(sweep.rows[0].questions) if sweep.rows else []
    heads = ("floor", "outcome", "n", "let through", "held")
    columns = tuple(f"{k} dir/conf/alone" for k in keys)
    columns += tuple(f"{k} published dir/conf/alone" for k in keys)
    table = _table(
        *heads,
        *columns,
        right=("n", "let through", "held"),
        keep=("floor", "outcome", *columns),
    )
    for r in sweep.rows:
        cells = [f"{c.direction}/{c.confidence}/{c.alone}" for c in r.questions.values()]
        cells += [
            f"{c.published_direction}/{c.published_confidence}/{c.published_alone}"
            for c in r.questions.values()
        ]
        table.add_row(
            f"{r.floor:.2f}", r.outcome, str(r.n), str(r.let_through), str(r.held), *cells
        )
    return table


def selective_table(selective: Mapping[str, SelectiveReport]) -> Any:
    """One row per question: labelled answers, AURC, and the coverage at the target risk."""
    cols = ("n", "aurc", "coverage at target", "floor")
    table = _table("key", *cols, right=cols)
    for key, s in selective.items():
        at = "-" if s.coverage_at_target is None else f"{s.coverage_at_target:.1%}"
        floor = "-" if s.floor_at_target is None else f"{s.floor_at_target:.3g}"
        aurc = "-" if s.aurc is None else f"{s.aurc:.4f}"
        table.add_row(key, str(s.n), aurc, at, floor)
    return table
