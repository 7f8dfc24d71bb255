"""One report from one or two runs and an optional labels file: the typed :class:`Report`
that every output format renders (``report.schema.json`` describes its JSON)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import islice
from typing import TYPE_CHECKING

from ..metrics import DEFAULT_DEFINITIONS, MetricDefinitions
from .aggregation import RunStats
from .compare import compare_runs
from .finish import question_reports
from .labels import Labels, merge_labels, read_labels
from .model import Comparison, Report
from .reader import read_run
from .selective import selective_reports

if TYPE_CHECKING:
    from ..core import Policy, Question
    from .sweep import GateSweep

__all__ = [
    "build_report",
]


def build_report(
    runs: list[str],
    *,
    labels_path: str | Sequence[str] | None = None,
    id_field: str = "id",
    target_precision: float | None = None,
    jobs: int | None = None,
    intervals: bool | None = None,
    fit_calibration: str | None = None,
    sweep_gates: tuple[Mapping[str, Policy], Mapping[str, Question]] | None = None,
    floors: Sequence[int] | None = None,
    selective: bool = False,
    target_risk: float | None = None,
    gates_file: str = "--gates",
    definitions: MetricDefinitions = DEFAULT_DEFINITIONS,
) -> Report:
    """Read ``runs`` (one or two files) and, with ``labels_path``, join labels by id; ``jobs``
    processes count a long run's chunks (default: one per CPU, at most 8); ``intervals``: every ECE
    with its bootstrap interval and noise floor (issue 24; numpy; ``None``: for a question of at
    most ``AUTO_INTERVALS_MAX`` labelled answers); ``fit_calibration``: fit a
    recalibration map per labelled key of the first run and write them to that file;
    ``sweep_gates``: the gates of ``gates_file`` (a path, for messages), checked against the
    judged run first (:func:`check_gates_file`); ``definitions``: which ECE, log floor, noise
    floor and temperature each figure is, and whether the pooled block is computed (issue 47)."""
    labels = read_all_labels(labels_path, id_field) if labels_path else None
    two = len(runs) == 2
    warnings: list[str] = []
    first = read_run(runs[0], labels, snapshot=two, jobs=jobs, warnings=warnings)
    questions = question_reports(first, target_precision, intervals, jobs, definitions)
    summaries = [first.summary()]
    comparison: Comparison | None = None
    stats = [first]
    if two:
        second = read_run(runs[1], labels, against=first.snapshots, jobs=jobs, warnings=warnings)
        stats.append(second)
        summaries.append(second.summary())
        assert first.snapshots is not None and second.deltas is not None
        comparison = compare_runs(
            first.snapshots,
            second.deltas,
            questions,
            question_reports(second, target_precision, intervals, jobs, definitions),
            (first.path, second.path),
        )
        first.snapshots = second.deltas = None  # the comparison holds what it needs
    if sweep_gates is not None:
        warnings += check_gates_file(gates_file, *sweep_gates, stats[-1])
    fitted = None
    if fit_calibration is not None:
        from .fitting import fit_calibration as fit

        fitted, skipped = fit(stats[0], fit_calibration)
        warnings += skipped
    from .judged import judge_section

    gates, paired = judge_section(runs, labels, stats[-1].gates)
    problem = None
    if labels is not None:
        warnings += labels.notes
        outcome_columns = [*(gates or ()), *(sweep_gates[0] if sweep_gates else ())]
        problem = _check_labels(labels, stats, id_field, warnings, outcome_columns)
    sweeps = _sweeps(runs[-1], sweep_gates, labels, floors, warnings)
    pooled = None
    if definitions.pool and stats[-1].labelled:
        from .accumulators import AUTO_INTERVALS_MAX
        from .extras import pooled_metrics

        pooled = pooled_metrics(
            stats[-1].questions.values(),
            definitions,
            stats[-1].labelled <= AUTO_INTERVALS_MAX if intervals is None else intervals,
        )
    return Report(
        records=first.records,
        labelled=first.labelled,
        runs=tuple(summaries),
        questions=questions,
        comparison=comparison,
        questions_run=first.path,
        warnings=tuple(warnings),
        calibration_fit=fitted,
        labels_problem=problem,
        gates=gates,
        paired=paired,
        sweeps=sweeps,
        selective=(
            selective_reports(runs[0], labels, target_risk)
            if labels is not None and (selective or target_risk is not None)
            else None
        ),
        questions_sha256=tuple(sorted(d for d in first.digests if isinstance(d, str))),
        definitions=definitions,
        pooled=pooled,
    )


def check_gates_file(
    path: str, policies: Mapping[str, Policy], questions: Mapping[str, Question], run: RunStats
) -> list[str]:
    """``report RUN --gates QUESTIONS.yaml`` judges ``run`` against another file's gates only
    knowingly (issue 42 item 3): a rule naming a question no record of the run answers is
    refused, one line naming the gate (as an unknown gate is refused), before anything is
    swept; a file whose question-set digest is not the run's is one warning with both."""
    from ..core import questions_sha256
    from .inputs import ReportInputError

    answered = run.questions
    for name, policy in policies.items():
        for i, rule in enumerate(policy.rules):
            if rule.question not in answered:
                have = ", ".join(answered) or "none"
                raise ReportInputError(
                    f"{path}: gate {name!r}: rule {i} reads question {rule.question!r}, which no "
                    f"record of {run.path} answers (its questions: {have}); give --gates the "
                    "question file the run answered"
                )
    digest = questions_sha256(questions)
    ran = sorted(d for d in run.digests if isinstance(d, str))
    if ran and digest not in ran:
        return [
            f"{path}: question-set digest {digest} is not the run's ({', '.join(ran)}): the "
            f"gates are judged against {run.path}'s answers to another question set"
        ]
    return []


def read_all_labels(paths: str | Sequence[str], id_field: str = "id") -> Labels:
    """One labels file, or several merged (``--labels A --labels B``: ``merge_labels``)."""
    if isinstance(paths, str):
        return read_labels(paths, id_field)
    return merge_labels([read_labels(p, id_field) for p in paths])


def _sweeps(
    run: str,
    sweep_gates: tuple[Mapping[str, Policy], Mapping[str, Question]] | None,
    labels: Labels | None,
    floors: Sequence[int] | None,
    warnings: list[str],
) -> dict[str, GateSweep] | None:
    """``--gates FILE``: the file's gates swept over the judged run (issue 35 item 3). Against
    labels, a gate is swept by the outcome column named after it: a gate without one is said
    in one warning, never left out silently (issue 43 item 11)."""
    if sweep_gates is None:
        return None
    from .sweep import DEFAULT_FLOORS, sweep

    policies, questions = sweep_gates
    if labels is not None:
        missing = [name for name in policies if labels.column(name) is None]
        if missing:
            have = ", ".join(repr(k) for k in labels.labelled_keys()) or "none"
            names = ", ".join(repr(n) for n in missing)
            warnings.append(
                f"{labels.path}: no column for --gates {'gate' if len(missing) == 1 else 'gates'} "
                f"{names} (its columns: {have}): not swept; add a column of the outcome each "
                "record should get, named after the gate, or drop --labels to sweep all records"
            )
    return sweep(run, policies, questions, labels, floors or DEFAULT_FLOORS)


def _check_labels(
    labels: Labels,
    stats: list[RunStats],
    id_field: str,
    warnings: list[str],
    gates: list[str] | None = None,
) -> str | None:
    """Warn about label columns that name no question and labelled ids that no run answered;
    return why the last run (the one ``--fail-on`` judges) has no labelled answer, if it has
    none (issue 31 item 9: say what did not match). A column named after a ``gates`` name holds
    the outcome each record should get (issue 35): not a stray column."""
    asked = list(dict.fromkeys(k for s in stats for k in s.questions))
    shown_keys = ", ".join(repr(k) for k in asked) or "none"
    stray = [k for k in labels.labelled_keys() if k not in asked and k not in (gates or ())]
    if stray:
        warnings.append(
            f"{labels.path}: {'column' if len(stray) == 1 else 'columns'} "
            f"{', '.join(repr(k) for k in stray)} {'matches' if len(stray) == 1 else 'match'} "
            f"no question key of the run (its keys: {shown_keys}); ignored"
        )
    used_keys = [k for k in labels.labelled_keys() if k in asked]
    if len(stats) == 2:
        used = (stats[0].label_ids_seen or set()) | (stats[1].label_ids_seen or set())
        unused = sum(1 for i in labels.labelled_ids(used_keys) if i not in used)
    else:  # ids are unique in a read run, so a count is enough (no set of 100k ids)
        unused = sum(1 for _ in labels.labelled_ids(used_keys)) - stats[0].labelled
    if unused:
        warnings.append(f"{labels.path}: {unused} labelled ids have no answered record")
    last = stats[-1]
    if last.labelled:
        return None
    if not used_keys:
        return (
            f"--labels {labels.path}: no label column matches a question key of the run "
            f"(its keys: {shown_keys})"
        )
    first = ", ".join(repr(i) for i in islice(labels.labelled_ids(used_keys), 3))
    return (
        f"--labels {labels.path} matched no id of {last.path} (its {id_field!r} column holds "
        f"ids such as {first})"
    )
