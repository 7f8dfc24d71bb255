"""What ``toolnexus batch`` adds to the run's one scheduler (issue 19): :class:`SentCounter`,
the admission member behind the summary's requests and 429s, and :class:`StateFieldProbe`, the
stop on a ``--state-field`` that no record of the first ``STATE_FIELD_PROBE`` has, and
:class:`OverLimitWatch`, the one warning on a state over the wire's token limits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core import RunStopped, Surface, option
from .config import RunConfig
from .items import MALFORMED, InputItem
from .summary import RunSummary

if TYPE_CHECKING:
    from ..core import ClassifierUsage
    from ..scheduler import Outcome, Ticket
    from .items import Notes

__all__ = ["STATE_FIELD_PROBE", "OverLimitWatch", "SentCounter", "StateFieldProbe"]

#: A ``--state-field`` none of this many first records has is a typo: the run stops.
STATE_FIELD_PROBE = 100


class SentCounter:
    """An admission member that only counts: the requests sent and the 429s among them."""

    def __init__(self, summary: RunSummary) -> None:
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

    def __init__(self, state_fields: Sequence[str] | None, surface: Surface = "batch") -> None:
        self.state_fields = tuple(state_fields or ())
        self.missing = 0
        self.seen = not self.state_fields
        self.surface: Surface = surface

    def _field(self) -> str:
        """The option as the run's surface spells it (issue 43 item 7)."""
        if self.surface == "library":
            return option("state_fields", "library", self.state_fields)
        return f"--state-field {', '.join(map(repr, self.state_fields))}"

    def unseen(self) -> str | None:
        """At the end of an input shorter than the probe none of whose records had the field:
        a note naming it (the run is not stopped, each record keeps its ``malformed_input``
        record, issue 31 item 2; but a summary of N failures alone did not say why)."""
        if self.seen or not self.missing:
            return None
        again = f"{option('resume', self.surface)} {option('retry_errors', self.surface)}"
        return (
            f"{self._field()}: none of the {self.missing} input "
            f"record{'s' if self.missing > 1 else ''} has that field; check its spelling, then "
            f"run again with {again}"
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
                f"classifier: {self._field()}: none of the first {self.missing} input records "
                "has that field; check its spelling (nothing was sent)",
                "input",
            )


class OverLimitWatch:
    """``BatchOptions.on_over_limit`` for the run: before the first request of a state
    over the wire's token limits is sent, one warning (a ``RunNote``) naming that state (its id and
    input line) and the limit; every such state is counted in ``summary.over_limit`` (the
    summary line says how many). The classifier reuses the estimate it made for this, so a
    run pays nothing for states under ``scheduler.tokens.LIMIT_SAFE_BYTES``.

    The classifier hands back the state value, not its id: the run notes each state in flight
    (:meth:`sent`, :meth:`done`, by identity) until the warning is printed, then stops."""

    def __init__(self, cfg: RunConfig, summary: RunSummary, *, warned: bool, note: Notes) -> None:
        self.cfg = cfg
        self.summary = summary
        self.note = note
        #: in-flight states by ``id(state)``, while the one warning is still to be printed
        self.flying: dict[int, InputItem] | None = None if warned else {}

    def sent(self, item: InputItem) -> int:
        """Note ``item`` as in flight; the key :meth:`done` takes."""
        key = id(item.state)
        if self.flying is not None:
            self.flying[key] = item
        return key

    def done(self, key: int) -> None:
        if self.flying is not None:
            self.flying.pop(key, None)

    def __call__(self, state: Any, phrase: str) -> None:
        self.summary.over_limit += 1
        if self.flying is None:
            return
        item = self.flying.get(id(state))
        self.flying = None
        if item is None:
            where = "a state"
        else:
            at = f"{self.cfg.inputs[item.source]}:{item.line}" if item.line else None
            where = f"state {item.id!r}" + (f" ({at})" if at else "")
        warning = (
            f"{where} will pass the wire's token limits ({phrase}); the server will refuse it: "
            "shorten the state or the instructions (the summary counts every state over them; "
            "batch --dry-run shows the largest request)"
        )
        self.note(warning, "warning")
