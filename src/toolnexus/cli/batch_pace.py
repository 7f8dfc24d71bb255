"""What ``toolnexus batch`` adds to the run's one scheduler (issue 19): :class:`SentCounter`,
the admission member behind the summary's requests and 429s, and :class:`StateFieldProbe`, the
stop on a ``--state-field`` that no record of the first ``STATE_FIELD_PROBE`` has."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import RunStopped
from .batch_items import MALFORMED, InputItem
from .batch_values import BatchSummary

if TYPE_CHECKING:
    from ..decision import ClassifierUsage
    from ..scheduler import Outcome, Ticket

__all__ = ["STATE_FIELD_PROBE", "SentCounter", "StateFieldProbe"]

#: A ``--state-field`` none of this many first records has is a typo: the run stops.
STATE_FIELD_PROBE = 100


class SentCounter:
    """An admission member that only counts: the requests sent and the 429s among them."""

    def __init__(self, summary: BatchSummary) -> None:
        self.summary = summary

    async def acquire(self, ticket: Ticket) -> None:
        return None

    async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None:
        from ..scheduler import OutcomeKind

        if outcome.kind is not OutcomeKind.NOT_SENT:
            self.summary.requests += 1
        if outcome.kind is OutcomeKind.RATE_LIMITED and outcome.signature == "HTTP 429":
            self.summary.throttled += 1


class StateFieldProbe:
    """Sees every item read; raises ``RunStopped`` (kind ``input``) once the first
    ``STATE_FIELD_PROBE`` records all lack the ``--state-field`` (a shorter input keeps its
    ``malformed_input`` records)."""

    def __init__(self, state_fields: Sequence[str] | None) -> None:
        self.state_fields = tuple(state_fields or ())
        self.missing = 0
        self.seen = not self.state_fields

    def unseen(self) -> str | None:
        """At the end of an input shorter than the probe none of whose records had the field:
        a note naming it (the run is not stopped, each record keeps its ``malformed_input``
        record, issue 31 item 2; but a summary of N failures alone did not say why)."""
        if self.seen or not self.missing:
            return None
        return (
            f"--state-field {', '.join(map(repr, self.state_fields))}: none of the "
            f"{self.missing} input record{'s' if self.missing > 1 else ''} has that field; "
            "check its spelling, then run again with --resume --retry-errors"
        )

    def see(self, item: InputItem) -> None:
        if self.seen:
            return
        if not item.no_state_field:
            # A line that is not JSON says nothing about the field; any other record had it.
            self.seen = item.error is None or item.error[0] != MALFORMED
            return
        self.missing += 1
        if self.missing >= STATE_FIELD_PROBE:
            raise RunStopped(
                f"classifier: --state-field {', '.join(map(repr, self.state_fields))}: none of "
                f"the first {self.missing} input records has that field; check its spelling "
                "(nothing was sent)",
                "input",
            )
