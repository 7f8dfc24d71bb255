"""What ``toolnexus batch`` was asked to do (:class:`BatchConfig`, over the options of
``batch_options.BatchFlags``) and what it did
(:class:`BatchSummary`: the counts behind the one-line summary and the exit code)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Literal

from ..printable import printable
from .batch_items import InputSpec
from .batch_options import BatchFlags, parse_pack, parse_shard
from .errors import (
    EXIT_BACKEND,
    EXIT_CONDITION,
    EXIT_FOR_CODE,
    EXIT_FOR_STOP,
    EXIT_OK,
    EXIT_STOPPED,
    EXIT_USAGE,
    CliError,
)

if TYPE_CHECKING:
    from ..scheduler.budget import Caps

__all__ = ["FIRST_IDS", "BatchConfig", "BatchSummary"]

#: How many ids of each ``--fail-on`` condition the summary names.
FIRST_IDS = 5


@dataclass(frozen=True)
class BatchConfig(BatchFlags):
    """Everything ``batch`` was asked to do: its options, its inputs, and the options' parsed
    forms (a wrong one raises :class:`CliError` here, before anything is read)."""

    inputs: list[str] = field(default_factory=list)
    #: ``--id-field`` / ``--state-field`` / ``--image-field`` / ``--recursive``
    spec: InputSpec = field(init=False)
    #: ``--shard I/N`` as ``(I, N)``
    shard_range: tuple[int, int] | None = field(init=False)
    #: ``--fail-on``'s conditions, in ``FLAGS`` order
    conditions: tuple[str, ...] = field(init=False)
    #: ``--thresholds``' cut-points (the names given; the rest keep their defaults)
    cut_points: Mapping[str, float] = field(init=False)
    #: ``--thresholds @FILE``'s cut-points per question key (``report --write-thresholds``)
    question_cut_points: Mapping[str, Mapping[str, float]] = field(init=False)
    #: ``--pack`` as ``config.BatchOptions.pack`` takes it
    pack_size: int | Literal["auto"] = field(init=False)
    #: ``--max-cost`` / ``--max-tokens`` / ``--max-requests``
    caps: Caps = field(init=False)

    def __post_init__(self) -> None:
        from .options import parse_fail_on, parse_question_thresholds, parse_thresholds

        # One name given as a plain string (a caller outside Typer) is one field, never its
        # characters.
        fields = [self.state_field] if isinstance(self.state_field, str) else self.state_field
        object.__setattr__(self, "state_field", list(fields) if fields else None)
        spec = InputSpec(self.id_field, tuple(fields or ()), self.image_field, self.recursive)
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "shard_range", parse_shard(self.shard))
        object.__setattr__(self, "conditions", parse_fail_on(self.fail_on))
        object.__setattr__(self, "cut_points", parse_thresholds(self.thresholds))
        object.__setattr__(self, "question_cut_points", parse_question_thresholds(self.thresholds))
        object.__setattr__(self, "pack_size", parse_pack(self.pack))
        object.__setattr__(self, "caps", _caps(self))


def _caps(cfg: BatchFlags) -> Caps:
    """The caps, checked: a wrong one is one line naming the flag."""
    from decimal import InvalidOperation

    from ..errors import ConfigError
    from ..scheduler.budget import Caps

    cost = None
    if cfg.max_cost is not None:
        try:
            cost = Decimal(cfg.max_cost)
        except InvalidOperation:
            cost = None
        if cost is None or not cost.is_finite():
            raise CliError(f"--max-cost takes an amount in USD (like 2.50), got {cfg.max_cost!r}")
    try:
        return Caps(cost, cfg.max_tokens, cfg.max_requests)
    except ConfigError as e:
        raise CliError(e.detail.removeprefix("classifier: ")) from None


@dataclass
class BatchSummary:
    """Counts for the one-line summary and the exit code."""

    states: int = 0
    ok: int = 0
    cached: int = 0
    skipped: int = 0
    #: ``--retry-errors`` without ``--resume``: states the output has no record of (not sent)
    not_in_output: int = 0
    #: states of the input that ``--shard`` leaves to the other shards
    other_shards: int = 0
    #: tokens and cost this run spent: cached decisions are not in them
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal | None = None
    #: the usage the cached decisions carry, spent by the run that first asked
    cached_input_tokens: int = 0
    cached_output_tokens: int = 0
    codes: Counter[str] = field(default_factory=Counter)
    #: the error records already in ``--output`` that this run left there (``--resume``
    #: without ``--retry-errors``), by code: counted in the summary and the exit code
    left_errors: Counter[str] = field(default_factory=Counter)
    conditions: set[str] = field(default_factory=set)
    #: per ``--fail-on`` condition met: how many records, and the first ids (``FIRST_IDS``)
    condition_counts: Counter[str] = field(default_factory=Counter)
    condition_ids: dict[str, list[str | int]] = field(default_factory=dict)
    wall: float = 0.0
    interrupted: str | None = None
    #: ``--overwrite`` did not replace the old output (the run did not finish)
    kept_old_output: bool = False
    #: the run stopped scheduling: the one line saying why, and ``RunStopped.kind``
    stopped: str | None = None
    stop_kind: str | None = None
    #: requests sent (re-sends after a 429 included) and the 429s among them; ``pack`` is
    #: ``--pack`` (the line shows the requests beside the states when it is not 1)
    requests: int = 0
    throttled: int = 0
    pack: int | str = 1
    #: states sent alone over the wire's token limits (warned once, before the first)
    over_limit: int = 0

    @property
    def budget_exceeded(self) -> bool:
        """A spend cap stopped the run (``Budget``'s ``RunStopped``, kind ``budget``: exit 5)."""
        return self.stop_kind == "budget"

    def met(self, condition: str, item_id: str | int) -> None:
        """Note that the record of ``item_id`` meets the ``--fail-on`` ``condition``."""
        self.conditions.add(condition)
        self.condition_counts[condition] += 1
        ids = self.condition_ids.setdefault(condition, [])
        if len(ids) < FIRST_IDS:
            ids.append(item_id)

    def fail_on_line(self) -> str:
        """``--fail-on met: uncertain 7 (t0, t1, t2, t3, t4, ...)``: each condition met, its
        count and its first ids."""
        parts = []
        for c in sorted(self.conditions):
            n, ids = self.condition_counts[c], self.condition_ids.get(c, [])
            shown = ", ".join(printable(str(i)) for i in ids) + (", ..." if n > len(ids) else "")
            parts.append(f"{c} {n} ({shown})")
        return "--fail-on met: " + "; ".join(parts)

    @property
    def failed(self) -> int:
        return sum(self.codes.values())

    def exit_code(self) -> int:
        """The worst outcome: a stopped run (4, or its stop kind's code) over a backend
        failure (3) over an input failure (2) over a ``--fail-on`` condition (1); each record
        code's exit code is ``failure_of``'s."""
        if self.stop_kind is not None:
            return EXIT_FOR_STOP.get(self.stop_kind, EXIT_STOPPED)
        # An error record already in the output still stands: a resumed run that leaves one
        # there never exits 0 (issue 31 item 2).
        exits = {EXIT_FOR_CODE.get(c, EXIT_USAGE) for c in self.codes | self.left_errors}
        for worst in (EXIT_BACKEND, EXIT_USAGE):
            if worst in exits:
                return worst
        return EXIT_CONDITION if self.conditions else EXIT_OK

    def add_cost(self, cost: float) -> None:
        """Add one response's reported cost: the Decimal of its shortest repr, so the total is
        what the server charged, never a float sum."""
        self.cost = (self.cost or Decimal(0)) + Decimal(repr(cost))

    def line(self) -> str:
        codes = ", ".join(f"{c} {n}" for c, n in sorted(self.codes.items()))
        cost = "not reported" if self.cost is None else f"{self.cost:.6g}"
        parts = [
            f"{self.states} states",
            f"{self.ok} ok",
            f"{self.failed} failed" + (f" ({codes})" if codes else ""),
            f"{self.cached} cached",
        ]
        if self.pack != 1:
            per = (self.ok - self.cached) / self.requests if self.requests else 0.0
            parts.append(f"{self.requests} requests ({per:.2f} states per request)")
        if self.over_limit:
            parts.append(f"{self.over_limit} over the wire's token limits (see the warning)")
        if self.throttled:
            parts.append(f"{self.throttled} answered 429 and were sent again")
        if self.skipped:
            parts.append(f"{self.skipped} skipped (already in the output)")
        if self.not_in_output:
            parts.append(
                f"{self.not_in_output} not in the output (not sent: --retry-errors re-runs "
                "errors only; add --resume to send them)"
            )
        if self.left_errors:
            left = ", ".join(f"{c} {n}" for c, n in sorted(self.left_errors.items()))
            parts.append(
                f"{sum(self.left_errors.values())} error records already in the output "
                f"({left}): re-run them with --retry-errors"
            )
        if self.other_shards:
            parts.append(f"{self.other_shards} in other shards")
        parts.append(f"tokens {self.input_tokens} in / {self.output_tokens} out")
        if self.cached:
            parts.append(
                f"cached tokens {self.cached_input_tokens} in / {self.cached_output_tokens} out"
            )
        parts += [
            f"cost {cost}",
            f"{self.wall:.2f} s",
        ]
        if self.budget_exceeded:
            parts.append("budget_exceeded")
        if self.interrupted:
            head = f"batch interrupted by {self.interrupted}: "
        else:
            head = "batch stopped: " if self.stopped else "batch: "
        return head + ", ".join(parts)
