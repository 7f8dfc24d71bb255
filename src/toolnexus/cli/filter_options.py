"""``toolnexus filter``'s own options, as one values class (:class:`FilterFlags`): each field IS
its command-line option (``options.options_from``). Those that mean for a stream what they mean
for ``batch`` take ``batch``'s own definitions (``batch_options.BatchFlags``), so they read and
check the same; ``--dry-run`` and ``--max-cost`` say what they do here (no ``--format``, no
``--resume``).
Light on purpose: registering ``filter`` imports this module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal, get_type_hints

import typer

from ..core import DEFAULT_BATCH_CONCURRENCY, DEFAULT_BATCH_PATIENCE
from .batch_options import BatchFlags

__all__ = ["FilterFlags"]

if TYPE_CHECKING:
    ConcurrencyOpt = int
    RateOpt = float | None
    PackOpt = str
    MaxTokensOpt = int | None
    MaxRequestsOpt = int | None
    PriceOpt = str | None
else:
    # batch's option definitions, one source for both commands (house rule 13)
    _BATCH = get_type_hints(BatchFlags, include_extras=True)
    ConcurrencyOpt = _BATCH["concurrency"]
    RateOpt = _BATCH["rate"]
    PackOpt = _BATCH["pack"]
    MaxTokensOpt = _BATCH["max_tokens"]
    MaxRequestsOpt = _BATCH["max_requests"]
    PriceOpt = _BATCH["price"]


@dataclass(frozen=True)
class FilterFlags:
    """The options of ``filter`` as given."""

    where: Annotated[
        list[str] | None,
        typer.Option(
            "--where",
            "-w",
            help="KEY[.FIELD] OP VALUE, like 'refund >= 0.8', 'desk == billing', "
            "'urgency.level >= 2' (repeatable: all must hold; OP one of >= <= == != > <).",
            show_default=False,
        ),
    ] = None
    gate: Annotated[
        str | None, typer.Option("--gate", help="A gate of the question file (with --action).")
    ] = None
    action: Annotated[
        str | None,
        typer.Option("--action", help="Keep the lines whose --gate action is this one."),
    ] = None
    state_field: Annotated[
        list[str] | None,
        typer.Option(
            "--state-field",
            help="Read JSONL: the state is this field of each line's object (a dotted path "
            "a.b reaches into nested objects); given more than once, an object of those fields.",
        ),
    ] = None
    invert: Annotated[
        bool, typer.Option("--invert-match", "-v", help="Keep the lines that do NOT pass.")
    ] = False
    count: Annotated[
        bool, typer.Option("--count", "-c", help="Print only how many lines passed.")
    ] = False
    with_answers: Annotated[
        bool,
        typer.Option(
            "--with-answers",
            help='Write JSONL {"line": ..., "decision": {...}} (batch\'s record body) instead '
            "of the bare lines.",
        ),
    ] = False
    on_error: Annotated[
        Literal["drop", "keep"],
        typer.Option(
            "--on-error",
            help="A line whose evaluation failed (said on stderr): drop it or keep it.",
        ),
    ] = "drop"
    concurrency: ConcurrencyOpt = DEFAULT_BATCH_CONCURRENCY
    rate: RateOpt = None
    patience: Annotated[
        float,
        typer.Option(
            "--patience",
            help="Seconds to ride out a storm of 429/503/529 without one success before the "
            "run stops (exit 4).",
            metavar="SECONDS",
        ),
    ] = DEFAULT_BATCH_PATIENCE
    pack: PackOpt = "auto"
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Read every line, send nothing: print the lines to send, the requests, the "
            "estimated tokens and (with --price) the cost.",
        ),
    ] = False
    max_cost: Annotated[
        str | None,
        typer.Option(
            "--max-cost",
            help="Stop sending before the spend (usage.cost, else tokens x --price) would pass "
            "USD; in-flight requests finish (exit 5). Needs --price.",
            metavar="USD",
        ),
    ] = None
    max_tokens: MaxTokensOpt = None
    max_requests: MaxRequestsOpt = None
    price: PriceOpt = None
