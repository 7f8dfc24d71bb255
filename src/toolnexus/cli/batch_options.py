"""``toolnexus batch``'s own options, as one values class: each field of :class:`BatchFlags`
(the flags as given; the library's batch options are ``config.BatchOptions``, built from them)
IS its command-line option (``options.options_from`` gives the command one parameter per
field), so the option table is written once. ``batch_values.BatchConfig`` adds the inputs and
the parsed forms. Light on purpose: registering ``batch`` imports this module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import typer

from ..defaults import DEFAULT_BATCH_CONCURRENCY, DEFAULT_BATCH_PATIENCE
from .cache_cmd import CacheDirOpt
from .errors import CliError
from .options import CalibrationOpt, FailOnOpt, ThresholdsOpt
from .render.formats import BatchFormat

__all__ = ["BatchFlags", "parse_pack", "parse_shard"]


@dataclass(frozen=True)
class BatchFlags:
    """The options of ``batch`` as given (text where the option takes text to parse)."""

    id_field: Annotated[
        str | None,
        typer.Option(
            "--id-field", help="JSONL key / CSV or Parquet column holding each state's id."
        ),
    ] = None
    state_field: Annotated[
        list[str] | None,
        typer.Option(
            "--state-field",
            help="JSONL key / CSV or Parquet column holding the state; given more than once, "
            "the state is an object of those fields.",
        ),
    ] = None
    image_field: Annotated[
        str | None,
        typer.Option(
            "--image-field",
            help="JSONL key / CSV column holding an image path (relative to the input file); "
            "the image joins the state, or is the state when it is also --state-field.",
        ),
    ] = None
    recursive: Annotated[
        bool,
        typer.Option("--recursive", help="A directory INPUT: its subfolders' files too."),
    ] = False
    concurrency: Annotated[
        int, typer.Option("--concurrency", help="Requests in flight at most.")
    ] = DEFAULT_BATCH_CONCURRENCY
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate",
            help="At most R requests per minute, a hard cap (without it the run rides the "
            "server's 429s).",
        ),
    ] = None
    patience: Annotated[
        float,
        typer.Option(
            "--patience",
            help="Seconds to ride out a storm of 429/503/529 without one success before the "
            "run stops (exit 4; --resume continues it).",
            metavar="SECONDS",
        ),
    ] = DEFAULT_BATCH_PATIENCE
    pack: Annotated[
        str,
        typer.Option(
            "--pack",
            help="N|auto: states per request (1 sends one request per state).",
            metavar="N|auto",
        ),
    ] = "1"
    output: Annotated[
        str | None,
        typer.Option("--output", "-o", help="Write records to FILE (default stdout)."),
    ] = None
    fmt: Annotated[BatchFormat, typer.Option("--format", help="Record format.")] = "jsonl"
    ordered: Annotated[
        bool, typer.Option("--ordered", help="Write records in input order (bounded buffer).")
    ] = False
    resume: Annotated[
        bool, typer.Option("--resume", help="Skip ids already recorded in --output.")
    ] = False
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="Start --output over; the old file stays until this run finishes.",
        ),
    ] = False
    retry_errors: Annotated[
        bool,
        typer.Option("--retry-errors", help="Re-run the ids whose record in --output is an error."),
    ] = False
    shard: Annotated[
        str | None,
        typer.Option("--shard", help="I/N: only the ids whose sha256 falls in shard I of N."),
    ] = None
    progress: Annotated[
        bool | None,
        typer.Option(
            "--progress/--no-progress",
            help="A live bar on stderr (default: when stderr is a terminal that the records "
            "are not written to).",
            show_default=False,
        ),
    ] = None
    fail_on: FailOnOpt = None
    thresholds: ThresholdsOpt = None
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Read every input, send nothing: print the states to send, the requests, the "
            "estimated tokens and (with --price) the cost; --format json for tools.",
        ),
    ] = False
    max_cost: Annotated[
        str | None,
        typer.Option(
            "--max-cost",
            help="Stop scheduling before the spend (usage.cost, else tokens x --price) would "
            "pass USD; in-flight requests finish. --resume counts what --output spent.",
            metavar="USD",
        ),
    ] = None
    max_tokens: Annotated[
        int | None,
        typer.Option("--max-tokens", help="The same cap on input + output tokens billed."),
    ] = None
    max_requests: Annotated[
        int | None,
        typer.Option("--max-requests", help="The same cap on HTTP attempts (retries bill)."),
    ] = None
    price: Annotated[
        str | None,
        typer.Option(
            "--price",
            help="input=USD/Mtok,output=USD/Mtok: the spend when the server reports no "
            "usage.cost (none is built in).",
            envvar="TOOLNEXUS_PRICE",
            show_envvar=True,
        ),
    ] = None
    otel: Annotated[
        bool,
        typer.Option(
            "--otel",
            help="OpenTelemetry spans and metrics for the run (needs "
            "toolnexus-classifier[otel] and an SDK); on by itself with OTEL_* exporters set.",
        ),
    ] = False
    calibration: CalibrationOpt = None
    use_cache: Annotated[
        bool, typer.Option("--cache", help="Reuse and store decisions in the SQLite cache.")
    ] = False
    cache_dir: CacheDirOpt = None
    review_out: Annotated[
        str | None,
        typer.Option(
            "--review-out",
            help="After the run, write the records to review (a gate escalated or held them, "
            "or an answer is uncertain, near-uniform or invalid) as a CSV a person can fill in; "
            "the filled file is a report --labels file. Needs -o.",
            metavar="FILE",
        ),
    ] = None
    emit_cases: Annotated[
        str | None,
        typer.Option(
            "--emit-cases",
            help="After the run, write golden cases for regression tests as JSONL, one line per "
            'record the review queue would hold: {"id", "questions", "state", "expect": '
            '{"gates": {GATE: ACTION}}} (pytest --toolnexus-cases FILE). Needs -o and a '
            "question file with gates.",
            metavar="FILE",
        ),
    ] = None
    emit_cases_all: Annotated[
        bool,
        typer.Option(
            "--emit-cases-all", help="--emit-cases writes every decided record, not only the queue."
        ),
    ] = False


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``I/N`` with 1 <= I <= N."""
    if text is None:
        return None
    i, sep, n = text.partition("/")
    try:
        index, count = int(i), int(n)
    except ValueError:
        index = count = 0
    if not sep or count < 1 or not 1 <= index <= count:
        raise CliError(f"--shard takes I/N with 1 <= I <= N (like 2/3), got {text!r}")
    return index, count


def parse_pack(text: str) -> int | Literal["auto"]:
    """``--pack N|auto``, checked by the library's one rule (``packplan.check_pack``)."""
    if text == "auto":
        return "auto"
    try:
        size = int(text)
    except ValueError:
        size = 0
    if size != 1:
        from ..errors import ConfigError
        from ..packplan import check_pack

        try:
            check_pack(size)
        except ConfigError:
            raise CliError(f"--pack takes a whole number >= 1 or auto, got {text!r}") from None
    return size
