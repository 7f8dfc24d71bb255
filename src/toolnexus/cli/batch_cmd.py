"""``toolnexus batch QUESTIONS INPUT...``: one question set over many states, streamed.

The command parses its options and hands them to ``batch_run.run_batch`` (imported inside the
command, so registering ``batch`` costs only typer). Records go to ``--output`` or stdout;
progress, warnings and the one-line summary go to stderr. Exit codes and error record codes
are described in ``batch_run``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from ..defaults import DEFAULT_BATCH_CONCURRENCY
from .cache_cmd import CacheDirOpt
from .errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, CliError
from .options import (
    BackendSettings,
    FailOnOpt,
    ThresholdsOpt,
    backend_options,
)
from .render.formats import BatchFormat


@backend_options
def batch_command(
    questions: Annotated[
        Path,
        typer.Argument(help="Question-set YAML file.", metavar="QUESTIONS", show_default=False),
    ],
    inputs: Annotated[
        list[str],
        typer.Argument(
            help="JSONL file (one state per line), CSV file, directory or glob of state files "
            "(the suffixes eval reads; .png/.jpg files are image states), or - for JSONL on "
            "stdin.",
            metavar="INPUT...",
            show_default=False,
        ),
    ],
    id_field: Annotated[
        str | None,
        typer.Option("--id-field", help="JSONL key / CSV column holding each state's id."),
    ] = None,
    state_field: Annotated[
        str | None,
        typer.Option("--state-field", help="JSONL key / CSV column holding the state."),
    ] = None,
    image_field: Annotated[
        str | None,
        typer.Option(
            "--image-field",
            help="JSONL key / CSV column holding an image path (relative to the input file); "
            "the image joins the state, or is the state when it is also --state-field.",
        ),
    ] = None,
    recursive: Annotated[
        bool,
        typer.Option("--recursive", help="A directory INPUT: its subfolders' files too."),
    ] = False,
    concurrency: Annotated[
        int, typer.Option("--concurrency", help="Requests in flight at most.")
    ] = DEFAULT_BATCH_CONCURRENCY,
    rate: Annotated[
        float | None, typer.Option("--rate", help="At most R requests per minute.")
    ] = None,
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="Write records to FILE (default stdout)."),
    ] = None,
    fmt: Annotated[BatchFormat, typer.Option("--format", help="Record format.")] = "jsonl",
    ordered: Annotated[
        bool, typer.Option("--ordered", help="Write records in input order (bounded buffer).")
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="Skip ids already recorded in --output.")
    ] = False,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="Start --output over; the old file stays until this run finishes.",
        ),
    ] = False,
    retry_errors: Annotated[
        bool,
        typer.Option("--retry-errors", help="Re-run the ids whose record in --output is an error."),
    ] = False,
    shard: Annotated[
        str | None,
        typer.Option("--shard", help="I/N: only the ids whose sha256 falls in shard I of N."),
    ] = None,
    progress: Annotated[
        bool | None,
        typer.Option(
            "--progress/--no-progress",
            help="A live bar on stderr (default: when stderr is a terminal that the records "
            "are not written to).",
            show_default=False,
        ),
    ] = None,
    fail_on: FailOnOpt = None,
    thresholds: ThresholdsOpt = None,
    use_cache: Annotated[
        bool, typer.Option("--cache", help="Reuse and store decisions in the SQLite cache.")
    ] = False,
    cache_dir: CacheDirOpt = None,
    *,
    backend_values: Mapping[str, Any],
) -> None:
    """Evaluate every state of INPUT... against QUESTIONS, one record per state.

    --resume reads --output and skips the ids it holds; --retry-errors re-runs the ids whose
    record there is an error (with --resume too: also the missing ones). The last record of an
    id wins, and a finished run rewrites --output atomically to one record per id.

    Exit codes: 0 ok; 1 a --fail-on condition met; 2 usage or input error; 3 backend failure.
    """
    from .batch_items import InputSpec
    from .batch_run import BatchConfig, run_batch
    from .batch_select import parse_shard
    from .options import parse_fail_on, parse_thresholds

    cfg = BatchConfig(
        inputs=list(inputs),
        spec=InputSpec(
            id_field=id_field,
            state_field=state_field,
            image_field=image_field,
            recursive=recursive,
        ),
        concurrency=concurrency,
        rate=rate,
        output=output,
        fmt=fmt,
        ordered=ordered,
        resume=resume,
        retry_errors=retry_errors,
        overwrite=overwrite,
        shard=parse_shard(shard),
        fail_on=parse_fail_on(fail_on),
        thresholds=parse_thresholds(thresholds),
    )
    settings = BackendSettings(**backend_values)
    cache = None
    if use_cache:
        if settings.style != "systemone":
            raise CliError("--cache serves System One only; drop it with --replay or --llm-model")
        from ..cache import SqliteCache
        from .cache_cmd import cache_path

        cache = SqliteCache(cache_path(cache_dir))
    try:
        summary = run_batch(cfg, questions, settings, cache=cache, show_progress=progress)
    finally:
        if cache is not None:
            cache.close()
    sys.stderr.write(f"toolnexus: {summary.line()}\n")
    if summary.interrupted is not None:
        sys.stderr.write(f"toolnexus: {_resume_hint(output, overwrite)}\n")
        raise typer.Exit(EXIT_INTERRUPTED if summary.interrupted == "SIGINT" else EXIT_TERMINATED)
    if summary.conditions:
        sys.stderr.write(f"toolnexus: {summary.fail_on_line()}\n")
    code = summary.exit_code()
    if code != EXIT_OK:
        raise typer.Exit(code)


def _resume_hint(output: str | None, overwrite: bool) -> str:
    """What to run after an interrupted batch."""
    if overwrite:
        return f"{output} was left as it was; run again with --overwrite to start over"
    if output is None:
        return (
            "the records so far went to stdout; run again with -o FILE, and after an "
            "interruption the same command with --resume continues it"
        )
    return f"to continue, run the same command with --resume (the records so far are in {output})"
