"""Each question's report over a counted run, the questions side by side in forked processes
(:mod:`.pool`): past the counting, a long labelled run spends its time in the metrics, one
question at a time, and the questions do not depend on one another. A question's report is
computed by the same code over the same arrays wherever it runs, so the digits do not depend
on ``jobs``."""

from __future__ import annotations

from ..metrics import DEFAULT_DEFINITIONS, MetricDefinitions
from .aggregation import RunStats
from .model import QuestionReport
from .pool import in_order

__all__ = ["PARALLEL_LABELLED_MIN", "question_reports"]

#: Questions are finished side by side once the run holds this many labelled answers in all:
#: below it, starting processes costs more than the metrics (bench/report.py).
PARALLEL_LABELLED_MIN = 20_000


def question_reports(
    stats: RunStats,
    target_precision: float | None = None,
    intervals: bool | None = None,
    jobs: int | None = None,
    definitions: MetricDefinitions = DEFAULT_DEFINITIONS,
) -> dict[str, QuestionReport]:
    """:meth:`RunStats.question_reports`, in up to ``jobs`` processes for a long labelled
    run."""
    keys = list(stats.questions)
    if sum(st.labelled for st in stats.questions.values()) < PARALLEL_LABELLED_MIN:
        jobs = 1
    args = (stats, target_precision, intervals, definitions)
    reports = in_order(_report, keys, jobs, args)
    return dict(zip(keys, reports, strict=True))


def _report(
    args: tuple[RunStats, float | None, bool | None, MetricDefinitions], key: str
) -> QuestionReport:
    stats, target_precision, intervals, definitions = args
    return stats.question_report(key, target_precision, intervals, definitions)
