"""``toolnexus report RUN [RUN2]``: how a run's answers are distributed and, against labels,
how accurate and how well calibrated they are.

The statistics live in ``toolnexus.report`` (no typer, no rich); this command parses options,
builds the report object and hands it to the one renderer. Only ``--format html`` imports the
chart library, inside the renderer.

Exit codes: 0 ok; 1 a ``--fail-on`` condition met; 2 usage or input error.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from .errors import EXIT_CONDITION, CliError, one_line
from .render.formats import ReportFormat

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


def report_command(
    runs: Annotated[
        list[str],
        typer.Argument(
            help="Records written by `toolnexus batch` (JSONL, JSON or CSV); a second RUN is "
            "compared with the first (before, after).",
            metavar="RUN [RUN2]",
            show_default=False,
        ),
    ],
    labels: Annotated[
        str | None,
        typer.Option(
            "--labels",
            help="JSONL or CSV: an id column and one column per question key (noul true/false, "
            "choice option, score level index or label); an empty cell is unlabelled.",
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
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help="Exit 1 when a condition holds for any question of the (last) run, e.g. "
            '"ece>0.1,near-uniform>0.05,errors>0". Names: the scalar metrics, near-uniform, '
            "uncertain, uncalibrated (shares), errors, invalid (counts), changed (two runs); "
            "KEY.NAME limits one to a question.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Distributions, flags and (with --labels) accuracy and calibration of a batch run; with
    RUN2, what changed between the two.

    Exit codes: 0 ok; 1 a --fail-on condition met; 2 usage or input error.
    """
    from ..report.build import build_report
    from ..report.charts import MissingChartLibrary
    from ..report.conditions import evaluate, parse_conditions
    from ..report.runs import ReportInputError
    from .render import ReportResult, default_format, render

    if not 1 <= len(runs) <= 2:
        raise CliError(f"report takes one run, or two to compare (before, after); got {len(runs)}")
    if target_precision is not None and not 0.0 < target_precision <= 1.0:
        raise CliError(f"--target-precision takes a precision in (0, 1], got {target_precision}")
    if jobs is not None and not 1 <= jobs <= MAX_JOBS:
        raise CliError(f"--jobs takes 1..{MAX_JOBS} processes, got {jobs}")
    if target_precision is not None and labels is None:
        raise CliError("--target-precision needs --labels: precision is measured on labels")
    try:
        conditions = parse_conditions(fail_on)
        report = build_report(
            list(runs),
            labels_path=labels,
            id_field=id_field,
            target_precision=target_precision,
            jobs=jobs,
        )
        met = evaluate(conditions, report)
    except ReportInputError as e:
        raise CliError(str(e)) from None
    for warning in report.warnings:
        sys.stderr.write(f"toolnexus: warning: {one_line(warning)}\n")
    chosen = fmt or _format_for(output) or default_format()
    result = ReportResult(report)
    try:
        if output is None:
            render(result, chosen)
        else:
            with open(output, "w", encoding="utf-8", newline="\n") as f:
                render(result, chosen, f)
    except OSError as e:
        # The same words as the error boundary's for every other command: stdout by name.
        target = output if output is not None else "stdout"
        raise CliError(f"{target}: cannot write: {e.strerror or type(e).__name__}") from None
    except MissingChartLibrary as e:
        raise CliError(str(e)) from None
    if met:
        sys.stderr.write(f"toolnexus: --fail-on met: {one_line('; '.join(met))}\n")
        raise typer.Exit(EXIT_CONDITION)
