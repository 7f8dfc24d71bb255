"""``toolnexus report RUN [RUN2]``: how a run's answers are distributed and, against labels,
how accurate and how well calibrated they are.

The statistics live in ``toolnexus.report`` (no typer, no rich); this command parses options,
builds the report object and hands it to the one renderer. Only ``--format html`` imports the
chart library, inside the renderer.

Exit codes: 0 ok; 1 a ``--fail-on`` condition met; 2 usage or input error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..core import (
    EXIT_CONDITION,
    one_line,
)
from ..metrics import MetricDefinitions
from .errors import CliError
from .options import options_from
from .render.formats import ReportFormat

if TYPE_CHECKING:
    from ..report import Condition

#: ``--jobs`` at most: more processes than this only add start-up and memory.
MAX_JOBS = 64


def _format_for(output: str | None) -> str | None:
    """``-o report.html`` means html and ``-o report.json`` json; other names get a table."""
    if output is None:
        return None
    lower = output.lower()
    if lower.endswith((".html", ".htm")):
        return "html"
    return "json" if lower.endswith(".json") else "table"


def junit_xml(results: list[tuple[Condition, str | None]]) -> str:
    """JUnit XML with one test case per ``--fail-on`` condition: a failure when it was met (its
    message names where and the first ids), a pass otherwise. What CI systems read."""
    from xml.etree import ElementTree as ET

    failed = sum(1 for _, met in results if met is not None)
    suite = ET.Element(
        "testsuite",
        name="toolnexus report --fail-on",
        tests=str(len(results)),
        failures=str(failed),
        errors="0",
    )
    for condition, met in results:
        case = ET.SubElement(suite, "testcase", classname="toolnexus.report", name=condition.text)
        if met is not None:
            ET.SubElement(case, "failure", message=f"--fail-on met: {met}").text = met
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, "unicode") + "\n"


def _write_junit(path: str, results: list[tuple[Condition, str | None]]) -> None:
    from ..records import whole_file

    with whole_file(path) as f:
        f.write(junit_xml(results))


def definition_flags() -> type:
    """The values class of ``report``'s definition options (issue 47): one option per field
    of :class:`~toolnexus.metrics.definitions.MetricDefinitions`, declared by that field's
    ``metadata["option"]`` (the option table is the definitions class; ``compare`` reuses it)."""
    from dataclasses import field, fields, make_dataclass
    from typing import get_type_hints

    hints = get_type_hints(MetricDefinitions)
    made = []
    for f in fields(MetricDefinitions):
        o = f.metadata["option"]
        option = typer.Option(o.flag, help=o.help, metavar=o.metavar, show_default=False)
        made.append((f.name, Annotated[hints[f.name], option], field(default=f.default)))
    return make_dataclass("DefinitionFlags", made, frozen=True)


@options_from(definition_flags(), "definition_values")
def report_command(
    runs: Annotated[
        list[str],
        typer.Argument(
            help="Records written by `toolnexus batch` (JSONL, JSON, CSV or Parquet); a second "
            "RUN is compared with the first (before, after).",
            metavar="RUN [RUN2]",
            show_default=False,
        ),
    ],
    labels: Annotated[
        list[str] | None,
        typer.Option(
            "--labels",
            help="JSONL, CSV or Parquet: an id column and one column per question key (noul "
            "true/false, choice option, score level index or label) or gate (the action each "
            "record should get); an empty cell is unlabelled, a column named #... a comment. "
            "Repeat it to merge files (a filled --review-out file refines the labels).",
            metavar="FILE",
            show_default=False,
        ),
    ] = None,
    id_field: Annotated[
        str, typer.Option("--id-field", help="The labels file's id column.")
    ] = "id",
    target_precision: Annotated[
        float | None,
        typer.Option(
            "--target-precision",
            help="For each labelled noul: the lowest yes-threshold reaching precision P, and "
            "its recall.",
            metavar="P",
            show_default=False,
        ),
    ] = None,
    target_accuracy: Annotated[
        float | None,
        typer.Option(
            "--target-accuracy",
            help="With --write-thresholds: per labelled question and (with --gates) per gate, "
            "the floor of the largest coverage whose accuracy is at least A, chosen out of "
            "bag. --target-risk R alone does the same for accuracy 1-R, in words of risk.",
            metavar="A",
            show_default=False,
        ),
    ] = None,
    fmt: Annotated[
        ReportFormat | None,
        typer.Option(
            "--format",
            help="table (default on a terminal), json (default otherwise) or html (one "
            "self-contained file).",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="Write to FILE instead of stdout.", metavar="FILE"),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            help="Processes that count a long JSONL run's chunks (default: one per CPU, at "
            "most 8). The numbers do not depend on it.",
            metavar="N",
            show_default=False,
        ),
    ] = None,
    intervals: Annotated[
        bool | None,
        typer.Option(
            "--intervals/--no-intervals",
            help="Every ece with its 95% bootstrap interval and the noise floor a perfectly "
            "calibrated model shows on the same probabilities (fixed seed; numpy). Default: "
            "for questions of at most 20,000 labelled answers.",
            show_default=False,
        ),
    ] = None,
    fit_calibration: Annotated[
        str | None,
        typer.Option(
            "--fit-calibration",
            help="Fit a recalibration map per question key with at least 50 labelled answers "
            "(noul: Platt or isotonic; choice, score: temperature) and write them to FILE, "
            "for eval/batch --calibration FILE.",
            metavar="FILE",
            show_default=False,
        ),
    ] = None,
    write_thresholds: Annotated[
        str | None,
        typer.Option(
            "--write-thresholds",
            help="With --target-precision: write per noul question a consistent pair of "
            "cut-points (no <= yes) to FILE, for eval/batch --thresholds @FILE. Each side is "
            "chosen on 200 bootstrap resamples (seed 0) and measured out of bag (min n 5); a "
            "pair whose out-of-bag precision misses the target is refused and not written. "
            "With --target-accuracy or --target-risk: per question the floor of the largest "
            "coverage reaching it. With --gates: each gate's floor too (gates: NAME: floor).",
            metavar="FILE",
            show_default=False,
        ),
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help="Exit 1 when a condition holds for any question of the (last) run, e.g. "
            '"ece>0.1,near-uniform>0.05,errors>0". Names: the scalar metrics (rps for score), '
            "near-uniform, uncertain, uncalibrated (shares), errors, invalid (counts), "
            "changed (two runs); ece>floor: above the noise floor's p95; KEY.NAME limits one "
            "to a question. A gate is a KEY too: escalated (share), accuracy (against a labels "
            "column named after it); with two runs and --labels: fixes, breaks (counts) and "
            'mcnemar_p, e.g. "merge.breaks>0,merge.mcnemar_p<0.05".',
            show_default=False,
        ),
    ] = None,
    gates: Annotated[
        str | None,
        typer.Option(
            "--gates",
            help="A question file whose gates: to sweep over the run against the labels column "
            "named after each gate (its outcome): per floor and outcome, records let through "
            "and held, and per rule question caught by direction, by confidence and alone.",
            metavar="QUESTIONS.yaml",
            show_default=False,
        ),
    ] = None,
    questions_file: Annotated[
        str | None,
        typer.Option(
            "--questions",
            help="With --write-thresholds: the question file the run answered; FILE records its "
            "digest and each question's wording, so eval/batch --thresholds warn when they "
            "changed (--gates serves when this is absent).",
            metavar="QUESTIONS.yaml",
            show_default=False,
        ),
    ] = None,
    floors: Annotated[
        str | None,
        typer.Option(
            "--floors",
            help="With --gates: the floors, e.g. 0.5,0.8,0.9 or 0.50:0.95:0.05 (the default). A "
            "floor f is thresholds yes=f, no=1-f (or bands high=f, low=1-f), in hundredths.",
            show_default=False,
        ),
    ] = None,
    selective: Annotated[
        bool,
        typer.Option(
            "--selective",
            help="With --labels: per question, risk against coverage when answering only above "
            "a confidence floor (noul: max(p, 1-p)), and its area (AURC).",
        ),
    ] = False,
    target_risk: Annotated[
        float | None,
        typer.Option(
            "--target-risk",
            help="With --labels: the largest coverage whose risk (error rate) is at most R, "
            "and the floor that gives it (implies --selective).",
            metavar="R",
            show_default=False,
        ),
    ] = None,
    review_out: Annotated[
        str | None,
        typer.Option(
            "--review-out",
            help="Write the records to review as a CSV a person can open: those a gate "
            "escalated (or held, with --gates), or with an uncertain, near-uniform or invalid "
            "answer; answers, actions and reasons in #... columns, empty label columns. The "
            "filled file is a --labels file.",
            metavar="FILE",
            show_default=False,
        ),
    ] = None,
    junit: Annotated[
        str | None,
        typer.Option(
            "--junit",
            help="Write JUnit XML to FILE: one test case per --fail-on condition, failed when "
            "it is met.",
            metavar="FILE",
            show_default=False,
        ),
    ] = None,
    *,
    definition_values: Mapping[str, Any],
) -> None:
    """Distributions, flags and (with --labels) accuracy and calibration of a batch run; with
    RUN2, what changed between the two.

    Exit codes: 0 ok; 1 a --fail-on condition met; 2 usage or input error.
    """
    from ..report import build_report, check, parse_conditions, parse_floors
    from .render import ReportResult, default_format, render

    if not 1 <= len(runs) <= 2:
        raise CliError(f"report takes one run, or two to compare (before, after); got {len(runs)}")
    from ..records import check_outputs, whole_file

    # Issue 42 item 1: no output onto a file report reads, nor onto another output, before
    # anything is read.
    check_outputs(
        [("-o", output), ("--fit-calibration", fit_calibration),
         ("--write-thresholds", write_thresholds), ("--review-out", review_out),
         ("--junit", junit)],
        [*(("the run", r) for r in runs), *(("--labels", p) for p in labels or ()),
         ("--gates", gates), ("--questions", questions_file)],
    )  # fmt: skip
    definitions = MetricDefinitions(**definition_values)
    problem = definitions.problem()
    if problem is not None:
        raise CliError(problem)
    if labels is None and (definitions.fit_temperature or definitions.pool):
        raise CliError("--fit-temperature and --pool need --labels: both are measured on labels")
    if target_precision is not None and not 0.0 < target_precision <= 1.0:
        raise CliError(f"--target-precision takes a precision in (0, 1], got {target_precision}")
    if jobs is not None and not 1 <= jobs <= MAX_JOBS:
        raise CliError(f"--jobs takes 1..{MAX_JOBS} processes, got {jobs}")
    if target_precision is not None and labels is None:
        raise CliError("--target-precision needs --labels: precision is measured on labels")
    if target_accuracy is not None and not 0.0 < target_accuracy <= 1.0:
        raise CliError(f"--target-accuracy takes an accuracy in (0, 1], got {target_accuracy}")
    if target_accuracy is not None and labels is None:
        raise CliError("--target-accuracy needs --labels: accuracy is measured on labels")
    if target_accuracy is not None and write_thresholds is None:
        raise CliError(
            "--target-accuracy chooses the floors --write-thresholds FILE writes: give it"
        )
    if target_accuracy is not None and (target_precision, target_risk) != (None, None):
        raise CliError(
            "--write-thresholds writes floors for one target: give --target-accuracy without "
            "--target-precision and --target-risk"
        )
    if write_thresholds is not None and (target_precision, target_accuracy, target_risk) == (
        None, None, None,
    ):  # fmt: skip
        raise CliError(
            "--write-thresholds needs a target: --target-precision P, --target-accuracy A or "
            "--target-risk R (the floors are searched for it)"
        )
    if (selective or target_risk is not None) and labels is None:
        raise CliError("--selective and --target-risk need --labels: risk is measured on labels")
    if target_risk is not None and not 0.0 <= target_risk <= 1.0:
        raise CliError(f"--target-risk takes an error rate in [0, 1], got {target_risk}")
    if questions_file is not None and write_thresholds is None:
        raise CliError(
            "--questions gives --write-thresholds the wording to record: give --write-thresholds"
        )
    if floors is not None and gates is None:
        raise CliError("--floors needs --gates: the floors are those of the file's gates")
    sweep_gates = None
    if gates is not None:
        from ..questionfile import load_question_file

        (_, gate_questions), policies = load_question_file(gates)
        if not policies:
            raise CliError(f"{gates}: no gates: to sweep (add a gates: section)")
        sweep_gates = (policies, gate_questions)
    if junit is not None and not fail_on:
        raise CliError("--junit writes one test case per --fail-on condition: give --fail-on")
    if fit_calibration is not None and labels is None:
        raise CliError("--fit-calibration needs --labels: a map is fitted on labelled answers")
    # A labelled report loads numpy for its metrics: elementwise sums and counts, never a
    # matrix product. OpenBLAS would start a pool of a thread per CPU as numpy loads, and its
    # spinning takes CPU from the workers counting the run (bench/report.py); the process is
    # this command's, and a user's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # A run, labels or chart that cannot be read or drawn raises a ReportError: the one error
    # boundary (``errors.handle_error``) prints its located line and exits 2.
    conditions = parse_conditions(fail_on)
    report = build_report(
        list(runs),
        labels_path=labels,
        id_field=id_field,
        target_precision=target_precision,
        jobs=jobs,
        intervals=intervals,
        fit_calibration=fit_calibration,
        sweep_gates=sweep_gates,
        floors=parse_floors(floors) if sweep_gates is not None else None,
        selective=selective,
        target_risk=target_risk,
        gates_file=gates or "--gates",
        definitions=definitions,
    )
    # The warnings first: a condition nothing can measure is often explained by one of them.
    for warning in report.warnings:
        sys.stderr.write(f"toolnexus: warning: {one_line(warning)}\n")
    if write_thresholds is not None and (
        report.labels_problem is not None or (report.labelled == 0 and sweep_gates is None)
    ):
        # Issue 42 item 2: labels that match nothing fit nothing; a good file is kept.
        why = report.labels_problem or "no record of the run has a label"
        raise CliError(f"--write-thresholds {write_thresholds}: {one_line(why)}; nothing written")
    results = check(conditions, report)
    met = [m for _, m in results if m is not None]
    if junit is not None:
        _write_junit(junit, results)
    if review_out is not None:
        from ..report import write_review

        defaults = {n: p.default for n, p in sweep_gates[0].items()} if sweep_gates else None
        queued = write_review(runs[-1], review_out, defaults)
        sys.stderr.write(f"toolnexus: {review_out}: {queued} records to review\n")
    if write_thresholds is not None:
        from .thresholds_out import write_thresholds as write_file

        # --write-thresholds needs a target, and each target needs --labels
        assert labels is not None
        kind, goal = (
            ("precision", target_precision) if target_precision is not None
            else ("accuracy", target_accuracy) if target_accuracy is not None
            else ("risk", target_risk)
        )  # fmt: skip
        assert goal is not None
        fitted_on = None
        if questions_file is not None:
            from ..questionfile import load_question_file

            fitted_on = (questions_file, load_question_file(questions_file)[0][1])
        elif gates is not None and sweep_gates is not None:
            from ..core import questions_sha256

            # the --gates file's wording only when it is the run's (else it was warned about)
            if report.questions_sha256 == (questions_sha256(sweep_gates[1]),):
                fitted_on = (gates, sweep_gates[1])
        write_file(
            write_thresholds, report, runs[0], labels, id_field, goal, kind=kind,
            gates=sweep_gates, gate_grid=parse_floors(floors), fitted_on=fitted_on,
        )  # fmt: skip
    chosen = fmt or _format_for(output) or default_format()
    result = ReportResult(report)
    try:
        if output is None:
            render(result, chosen)
        else:
            with whole_file(output) as f:
                render(result, chosen, f)
    except OSError as e:
        # The same words as the error boundary's for every other command: stdout by name.
        target = output if output is not None else "stdout"
        raise CliError(f"{target}: cannot write: {e.strerror or type(e).__name__}") from None
    if met:
        sys.stderr.write(f"toolnexus: --fail-on met: {one_line('; '.join(met))}\n")
        raise typer.Exit(EXIT_CONDITION)
