"""``toolnexus batch QUESTIONS INPUT...``: one question set over many states, streamed.

Its options are the fields of ``batch_options.BatchFlags`` (and the backend's of
``options.BackendSettings``); the command builds the library's ``toolnexus.run.RunConfig`` from
them and hands it to ``toolnexus.run.run_batch`` (or ``--dry-run`` to ``toolnexus.run.estimate``;
imported inside the command, so registering ``batch`` costs only typer). What stays here: the
flags, the progress display, the summary line and the exit code; the run's checks (once), its
budget and resend counting, the run itself, its OpenTelemetry span (``--otel``) and the steps
after it (``--review-out``, ``--emit-cases``) are the library's, and their notes print here.
Records go to ``--output`` or stdout; progress, warnings and the one-line summary go to stderr.

Exit codes, worst first: 4 when the run stopped scheduling (5 for a spend cap); 3 when any state
failed at the backend (``backend_*`` codes and ``invalid_decision``); 2 for usage errors and for
states the inputs or the options could not serve (``malformed_input``, ``duplicate_id``,
``invalid_state``, ``replay_miss``, ``config_error``, ...); 1 when a ``--fail-on`` condition
holds for any record; 0 otherwise. SIGINT exits 130 and SIGTERM 143, after fsyncing what was
written. Error record codes and their exit codes come from ``toolnexus/core/failures.py``'s
one table, listed in the README.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from ..core import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    one_line,
)
from .batch_options import BatchFlags
from .errors import CliError
from .options import BackendSettings, backend_options, options_from


@backend_options
@options_from(BatchFlags, "batch_values")
def batch_command(
    questions: Annotated[
        Path,
        typer.Argument(help="Question-set YAML file.", metavar="QUESTIONS", show_default=False),
    ],
    inputs: Annotated[
        list[str],
        typer.Argument(
            help="JSONL file (one state per line), CSV file (.csv; .tsv is tab-separated), Parquet "
            "or Arrow IPC file "
            "(.parquet, .pq, .arrow, .feather, .ipc; the parquet extra) or a directory "
            "of Parquet files, directory or glob of state files (the suffixes eval reads; "
            ".png/.jpg files are image states), or - for JSONL on stdin.",
            metavar="INPUT...",
            show_default=False,
        ),
    ],
    *,
    batch_values: Mapping[str, Any],
    backend_values: Mapping[str, Any],
) -> None:
    """Evaluate every state of INPUT... against QUESTIONS, one record per state.

    --resume reads --output and skips the ids it holds; --retry-errors re-runs the ids whose
    record there is an error (with --resume too: also the missing ones). The last record of an
    id wins, and a finished run rewrites --output atomically to one record per id.

    --dry-run reads everything and sends nothing: the states to send, the requests, the
    estimated tokens and (with --price) the cost. --max-cost / --max-tokens / --max-requests
    stop scheduling before the spend would pass the cap (exit 5); --resume counts what the
    output already spent.

    Exit codes: 0 ok; 1 a --fail-on condition met; 2 usage or input error; 3 backend failure;
    4 the run stopped scheduling (a failure every request would repeat, like a wrong key);
    5 a spend cap reached.
    """
    from .batch_options import BatchConfig

    cfg = BatchConfig(inputs=list(inputs), questions_file=str(questions), **batch_values)
    settings = BackendSettings(**backend_values)
    from ..run import prepare_telemetry

    # --otel's extra and the SDK's OTEL_* settings, before anything else as ever (the run opens
    # its span: run_batch, or the dry run below)
    prepare_telemetry(cfg.otel)
    _batch(cfg, questions, settings)


def _batch(cfg: Any, questions: Path, settings: BackendSettings) -> None:
    """Flags -> one ``RunConfig`` -> ``run_batch`` (or ``run.dry.estimate``) -> display and
    exit code. Every check of the run (``check_config``, ``check_steps``, ``check_case_gates``),
    the budget and its resend counting are the library's, run once (issue 45 item 1)."""
    from dataclasses import replace

    from .backend import price_of

    price = price_of(cfg.price)
    from ..run import require_price

    require_price(cfg.run.caps, price)  # issue 42 item 7: --max-cost needs --price
    _check_files(cfg, settings)
    cache = None
    if cfg.use_cache:
        if settings.style != "systemone":
            raise CliError("--cache serves System One only; drop it with --replay or --llm-model")
        from ..cache import SqliteCache
        from .cache_cmd import cache_path

        cache = SqliteCache(cache_path(cfg.cache_dir))
    try:
        if cfg.dry_run:
            from .backend import check_estimable

            check_estimable(settings)  # before anything, as ever
            from ..run import estimate, run_telemetry

            run = replace(cfg.run, cache=cache, price=price)
            with run_telemetry(cfg.otel):  # the span batch opened around a dry run too
                result = estimate(run, prepare=_joined(cfg, questions, settings))
                sys.stdout.write(result.render(cfg.fmt) + "\n")
            return
        if cfg.run.caps.any:
            from .backend import check_estimable

            # a capped run is sized on the dry run's estimate: System One only, as ever
            check_estimable(settings)
        summary = _run(cfg, questions, settings, replace(cfg.run, cache=cache, price=price))
    finally:
        if cache is not None:
            cache.close()
    if summary.interrupted is not None:
        sys.stderr.write(f"toolnexus: {_resume_hint(cfg.output, summary.kept_old_output)}\n")
        raise typer.Exit(EXIT_INTERRUPTED if summary.interrupted == "SIGINT" else EXIT_TERMINATED)
    if summary.conditions:
        sys.stderr.write(f"toolnexus: {summary.fail_on_line()}\n")
    code = summary.exit_code()
    if code != EXIT_OK:
        raise typer.Exit(code)


def _check_files(cfg: Any, settings: BackendSettings) -> None:
    """Issue 42 item 1: no output onto a file the run reads or onto another output, before
    anything is read or sent (the library's one rule; ``--thresholds @FILE``, the ``--replay``
    directory and the cache file are the command's own)."""
    from ..run import check_files

    thresholds = cfg.thresholds[1:] if (cfg.thresholds or "").startswith("@") else None
    cache = None
    if cfg.use_cache:
        from .cache_cmd import cache_path

        cache = str(cache_path(cfg.cache_dir))
    replay = None if settings.replay is None else str(settings.replay)
    check_files(
        cfg.run, [("the cache", cache)], [("--thresholds", thresholds), ("--replay", replay)]
    )


def _joined(cfg: Any, questions: Path, settings: BackendSettings) -> Any:
    """The library's ``prepare``: the checked run joined to the question file (read once, after
    every flag was checked, as ever) and the backend's classifier options."""

    def prepare(run: Any) -> Any:
        from dataclasses import replace

        from ..questionfile import load_question_file
        from .backend import (
            classifier_options,
            live_target,
            recorder_for,
            warn_if_over_limits,
            warn_to_stderr,
        )

        (file_model, qs), gates = load_question_file(questions)
        if cfg.dry_run:  # a dry run sends nothing: no metric, no recorder, no thresholds file
            options = classifier_options(settings, file_model=file_model)
            return replace(run, questions=qs, gates=gates, classifier=options)
        _check_thresholds(cfg, questions, qs, gates)
        options = classifier_options(settings, file_model=file_model, on_metric=warn_to_stderr)
        model = options.get("model")
        warned = False
        if settings.style == "systemone":
            # issue 34 item 4: the question set alone over the wire's limits, said once
            warned = warn_if_over_limits(settings, live_target(settings, model)[1], qs)
        return replace(
            run,
            questions=qs,
            gates=gates,
            classifier=options,
            record=recorder_for(settings, model),
            replay=settings.replay,
            said_over_limits=warned,
        )

    return prepare


def _check_thresholds(cfg: Any, questions: Path, qs: Any, gates: Any) -> None:
    """``--thresholds @FILE`` against the question file, before the backend is built."""
    from dataclasses import replace

    from .gatefloors import check_thresholds_file

    # ``--thresholds @FILE``'s gates: floors (issue 35 item 4) are run_batch's to apply; a floor
    # for a gate the file lacks is refused here, as ever
    replace(cfg.run, gates=gates).floored_gates()
    check_thresholds_file(cfg.thresholds, qs, questions)  # issue 42 item 3


def _run(cfg: Any, questions: Path, settings: BackendSettings, run: Any) -> Any:
    """The library's run of the command's ``RunConfig``, with the display joined to it."""
    from ..run import run_batch
    from .batch_progress import Display

    display = Display(run.inputs, run.output, cfg.progress, ended=_summary_lines(run.output))
    try:
        summary = run_batch(run, on_progress=display, prepare=_joined(cfg, questions, settings))
    finally:
        display.stop()
    if not display.said_end:
        display.end(summary)  # every run that returns ended; said here should one not have
    return summary


def _summary_lines(output: str | None) -> Any:
    """What ``batch`` says when its run ends (``RunEnded``), before the steps after it: why it
    stopped, the summary line, and how to finish a stopped run."""

    def say(summary: Any) -> None:
        if summary.stopped is not None:
            sys.stderr.write(f"toolnexus: {one_line(summary.stopped)}\n")
        sys.stderr.write(f"toolnexus: {summary.line()}\n")
        if summary.stopped is not None and output is not None and summary.failed:
            # The states never sent have no record; the ones that failed keep theirs, which a
            # plain --resume leaves in place (issue 31 item 2).
            sys.stderr.write(
                "toolnexus: fix the cause, then run the same command with --resume "
                f"--retry-errors (--resume sends the states not sent; --retry-errors re-runs "
                f"the {summary.failed} error records)\n"
            )

    return say


def _resume_hint(output: str | None, kept_old_output: bool) -> str:
    """What to run after an interrupted batch."""
    if kept_old_output:
        return f"{output} was left as it was; run again with --overwrite to start over"
    if output is None:
        return (
            "the records so far went to stdout; run again with -o FILE, and after an "
            "interruption the same command with --resume continues it"
        )
    return f"to continue, run the same command with --resume (the records so far are in {output})"
