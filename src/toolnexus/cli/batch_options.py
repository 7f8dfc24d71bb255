"""``toolnexus batch``'s own options, as one values class: each field of :class:`BatchFlags`
(the flags as given) IS its command-line option (``options.options_from`` gives the command one
parameter per field), so the option table is written once. :class:`BatchConfig` adds the inputs
and builds the run's ``toolnexus.run.RunConfig`` from them (:data:`RUN_FIELDS` says which
fields each flag sets; a test holds the two classes to it field for field). Light on purpose:
registering ``batch`` imports this module, and ``toolnexus.run`` only when a run is built."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from ..core import DEFAULT_BATCH_CONCURRENCY, DEFAULT_BATCH_PATIENCE
from .cache_cmd import CacheDirOpt
from .errors import CliError
from .options import CalibrationOpt, FailOnOpt, ThresholdsOpt
from .render.formats import BatchFormat

if TYPE_CHECKING:
    from ..run import RunConfig

__all__ = [
    "NOT_FLAGS",
    "RUN_FIELDS",
    "BatchConfig",
    "BatchFlags",
    "flags_like",
    "parse_pack",
    "parse_shard",
    "unmatched",
]


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
            "pass USD; in-flight requests finish. Needs --price (each request's cost is "
            "reserved before it is sent). --resume counts what --output spent.",
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
            help="input=USD/Mtok,output=USD/Mtok: what --max-cost reserves per request, and "
            "the spend when the server reports no "
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
        from ..config import check_pack
        from ..core import ConfigError

        try:
            check_pack(size)
        except ConfigError:
            raise CliError(f"--pack takes a whole number >= 1 or auto, got {text!r}") from None
    return size


def flags_like(name: str, helps: dict[str, str | None], defaults: dict[str, Any]) -> type:
    """A values class for ``options.options_from`` whose fields are :class:`BatchFlags`' own
    declarations (type, flag, metavar, environment variable) of the flags named in ``helps``,
    in that order: a command where a batch flag means the same over another scope (``mcp``:
    over an agent's session) says so in its help (None keeps batch's) and may change its
    default, but never declares the flag a second time."""
    import copy
    from dataclasses import make_dataclass
    from typing import get_args, get_type_hints

    hints = get_type_hints(BatchFlags, include_extras=True)
    own = {f.name: f.default for f in fields(BatchFlags)}
    made = []
    for flag, help_text in helps.items():
        kind, option = get_args(hints[flag])
        if help_text is not None:
            option = copy.copy(option)
            option.help = help_text
        default = defaults.get(flag, own[flag])
        made.append((flag, Annotated[kind, option], field(default=default)))
    return make_dataclass(name, made, frozen=True)


#: Each flag -> the ``RunConfig`` fields it sets, parsed; ``()``: the command's own (its display
#: and the dry run that sends nothing).
RUN_FIELDS: dict[str, tuple[str, ...]] = {
    "id_field": ("id_field",),
    "state_field": ("state_fields",),
    "image_field": ("image_field",),
    "recursive": ("recursive",),
    "concurrency": ("concurrency",),
    "rate": ("rate",),
    "patience": ("patience",),
    "pack": ("pack",),
    "output": ("output",),
    "fmt": ("fmt",),
    "ordered": ("ordered",),
    "resume": ("resume",),
    "overwrite": ("overwrite",),
    "retry_errors": ("retry_errors",),
    "shard": ("shard",),
    "progress": (),
    "fail_on": ("fail_on",),
    "thresholds": ("thresholds", "question_thresholds", "gate_floors"),
    "dry_run": (),
    "max_cost": ("max_cost",),
    "max_tokens": ("max_tokens",),
    "max_requests": ("max_requests",),
    "price": ("price",),
    "otel": ("otel",),
    "calibration": ("calibration",),
    "use_cache": ("cache",),
    "cache_dir": ("cache",),
    "review_out": ("review_out",),
    "emit_cases": ("emit_cases",),
    "emit_cases_all": ("emit_cases_all",),
}

#: The ``RunConfig`` fields no batch flag sets: the command's arguments (the question file and
#: INPUT...), the backend options (``--replay``, ``--record``, the classifier's) and what the
#: command works out before the run (the file's gates, the budget, the over-limit warning).
NOT_FLAGS = frozenset(
    {
        "questions",
        "inputs",
        "classifier",
        "gates",
        "questions_path",
        "admission",
        "record",
        "replay",
        "said_over_limits",
        "surface",
    }
)


def unmatched(
    flags: type,
    config: type,
    run_fields: dict[str, tuple[str, ...]] = RUN_FIELDS,
    not_flags: frozenset[str] = NOT_FLAGS,
) -> list[str]:
    """Every way ``flags`` and ``config`` (two dataclasses) disagree with ``run_fields``: a flag
    it does not list, a field it names that ``config`` lacks, a ``config`` field no flag sets
    and ``not_flags`` does not name. Empty when each side has its counterpart."""
    flag_names = [f.name for f in fields(flags)]
    config_names = {f.name for f in fields(config)}
    found = [f"flag {n!r} has no entry in RUN_FIELDS" for n in flag_names if n not in run_fields]
    found += [f"RUN_FIELDS names {n!r}, not a flag" for n in run_fields if n not in flag_names]
    set_by_flags = {target for n in flag_names for target in run_fields.get(n, ())}
    found += [
        f"RUN_FIELDS sets {t!r}, not a RunConfig field" for t in sorted(set_by_flags - config_names)
    ]
    found += [
        f"RunConfig field {n!r} is set by no flag and not in NOT_FLAGS"
        for n in sorted(config_names - set_by_flags - not_flags)
    ]
    found += [
        f"NOT_FLAGS names {n!r}, not a RunConfig field" for n in sorted(not_flags - config_names)
    ]
    return found


@dataclass(frozen=True)
class BatchConfig(BatchFlags):
    """Everything ``batch`` was asked to do: its flags, its inputs, and :attr:`run`, the
    library's ``RunConfig`` they make (a wrong flag raises here, before anything is read; the
    question set, its gates and the backend join it when the command has read them)."""

    inputs: list[str] = field(default_factory=list)
    #: the question file (an ``--output`` onto it is refused)
    questions_file: str | None = None
    run: RunConfig = field(init=False)

    def __post_init__(self) -> None:
        from ..run import RunConfig, caps_from
        from .options import (
            parse_fail_on,
            parse_gate_floors,
            parse_question_thresholds,
            parse_thresholds,
        )

        # One name given as a plain string (a caller outside Typer) is one field, never its
        # characters; each parse in the order a user met its error before.
        names = [self.state_field] if isinstance(self.state_field, str) else self.state_field
        object.__setattr__(self, "state_field", list(names) if names else None)
        shard = parse_shard(self.shard)
        fail_on = parse_fail_on(self.fail_on)
        thresholds = parse_thresholds(self.thresholds)
        question_thresholds = parse_question_thresholds(self.thresholds)
        gate_floors = parse_gate_floors(self.thresholds)
        pack = parse_pack(self.pack)
        caps = caps_from(self.max_cost, self.max_tokens, self.max_requests)
        run = RunConfig(
            questions={},
            inputs=tuple(self.inputs),
            questions_path=self.questions_file,
            id_field=self.id_field,
            state_fields=tuple(names or ()),
            image_field=self.image_field,
            recursive=self.recursive,
            output=self.output,
            fmt=self.fmt,
            ordered=self.ordered,
            resume=self.resume,
            retry_errors=self.retry_errors,
            overwrite=self.overwrite,
            shard=shard,
            pack=pack,
            concurrency=self.concurrency,
            rate=self.rate,
            patience=self.patience,
            max_cost=caps.max_cost,
            max_tokens=caps.max_tokens,
            max_requests=caps.max_requests,
            fail_on=fail_on,
            thresholds=thresholds,
            question_thresholds=question_thresholds,
            gate_floors=gate_floors,
            calibration=self.calibration,
            review_out=self.review_out,
            emit_cases=self.emit_cases,
            emit_cases_all=self.emit_cases_all,
            otel=self.otel,
            surface="batch",
        )
        object.__setattr__(self, "run", run)
