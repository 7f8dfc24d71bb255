"""What a batch run did (:class:`RunSummary`: the counts behind ``toolnexus batch``'s
one-line summary and its exit code) and what it reports while it runs (:class:`RunProgress`,
the typed value ``run_batch(on_progress=...)`` hears after each record, :class:`RunNote`, a
note the user should read once, and :class:`RunEnded`, the run's end before the steps after
it)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from ..core import (
    EXIT_BACKEND,
    EXIT_CONDITION,
    EXIT_FOR_CODE,
    EXIT_FOR_STOP,
    EXIT_OK,
    EXIT_STOPPED,
    EXIT_USAGE,
    printable,
)

__all__ = ["FIRST_IDS", "RunEnded", "RunNote", "RunProgress", "RunSummary"]

#: How many ids of each ``--fail-on`` condition the summary names.
FIRST_IDS = 5


@dataclass(frozen=True)
class RunProgress:
    """Where a run is, after each record it wrote: what ``on_progress`` hears."""

    #: records written so far (ok + failed), and how many of them were ok / cached / errors
    states: int
    ok: int
    failed: int
    cached: int
    #: HTTP requests sent so far (re-sends included)
    requests: int
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class RunNote:
    """Something the user should know (an input's quirk, a state over the wire's limits), as
    ``on_progress`` hears it; without ``on_progress`` the run logs it (logger ``toolnexus.run``:
    a note at INFO, a warning at WARNING). The CLI prints ``toolnexus: {kind}: {message}``."""

    message: str
    #: ``done``: what a step after the run wrote (``review_out``, ``emit_cases``), said once
    #: the run ended; the CLI prints ``toolnexus: {message}``
    kind: Literal["note", "warning", "done"] = "note"


@dataclass(frozen=True)
class RunEnded:
    """The run ended (its output settled, or what it wrote kept after SIGINT / SIGTERM): what
    ``on_progress`` hears once, before the steps after the run (``review_out``,
    ``emit_cases``) and their ``done`` notes. ``toolnexus batch`` prints its summary line then,
    so the steps' lines (or their error) follow it."""

    summary: RunSummary


@dataclass
class RunSummary:
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
    #: how far the settled spend passed ``max_cost`` (``cost_cap``): what requests already in
    #: flight cost beyond their reserved estimate (issue 42 item 7); None within the cap
    over_cost_cap: Decimal | None = None
    cost_cap: Decimal | None = None

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

    def progress(self) -> RunProgress:
        """The counts so far, as ``on_progress`` hears them."""
        return RunProgress(
            self.states, self.ok, self.failed, self.cached, self.requests,
            self.input_tokens, self.output_tokens,
        )  # fmt: skip

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
        if self.over_cost_cap is not None:
            parts.append(
                f"${self.over_cost_cap:.6f} over --max-cost {self.cost_cap} (requests in flight "
                "cost more than their estimate)"
            )
        if self.budget_exceeded:
            parts.append("budget_exceeded")
        if self.interrupted:
            head = f"batch interrupted by {self.interrupted}: "
        else:
            head = "batch stopped: " if self.stopped else "batch: "
        return head + ", ".join(parts)
