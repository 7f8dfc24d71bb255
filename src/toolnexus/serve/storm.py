"""Scripted storms (issue 32 item 6): a blackout for N seconds from time T, and a change of the
request rate limit at time T, so a client's patience and pacing are tested end to end.

``toolnexus serve --blackout 2+6`` answers every API request from 2 s after the server started
until 8 s with a 429 (``Retry-After`` and ``retry-after-ms`` from ``--retry-after-ms``, as the
``429`` fault does); ``--blackout 2+6:503`` with a 503, ``:529`` with the overload body,
``:stall`` sends nothing until the client gives up (a hung server). Several blackouts are
separated by commas. ``--rate-change 10=600/min`` sets ``--rate-limit`` to 600/min from 10 s
on (commas for several changes, in time order). Time is the server's clock (``Server(clock=)``:
a test's simulated clock steps it), counted from the server's start.

Pure: parsing and the schedule; ``server.py`` applies them.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

from .faults import Fault, parse_faults
from .limits import parse_rate

__all__ = ["Blackout", "RateChange", "Storm", "parse_blackouts", "parse_rate_changes"]

#: What a blackout may answer: the statuses a storm is made of, or a stall.
BLACKOUT_KINDS = ("429", "500", "502", "503", "504", "529", "stall")
_BLACKOUT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*\+\s*(\d+(?:\.\d+)?)\s*(?::\s*(\w+)\s*)?")
_CHANGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*=\s*(.+?)\s*")


@dataclass(frozen=True)
class Blackout:
    """From ``start`` seconds for ``seconds`` seconds, every API request gets ``fault``."""

    start: float
    seconds: float
    fault: Fault

    def covers(self, elapsed: float) -> bool:
        return self.start <= elapsed < self.start + self.seconds


@dataclass(frozen=True)
class RateChange:
    """From ``at`` seconds on, the request limit is ``per_second`` requests a second."""

    at: float
    per_second: float


@dataclass(frozen=True)
class Storm:
    """A server's schedule of blackouts and rate changes."""

    blackouts: tuple[Blackout, ...] = ()
    rate_changes: tuple[RateChange, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.blackouts or self.rate_changes)

    def fault_at(self, elapsed: float) -> Fault | None:
        """The blackout's fault at ``elapsed`` seconds, or None."""
        for blackout in self.blackouts:
            if blackout.covers(elapsed):
                return blackout.fault
        return None

    def rate_at(self, elapsed: float) -> float | None:
        """The request limit the latest change before ``elapsed`` set, or None (no change yet:
        ``--rate-limit`` holds)."""
        rate = None
        for change in self.rate_changes:
            if change.at <= elapsed:
                rate = change.per_second
        return rate


def parse_blackouts(
    spec: str, *, retry_after_ms: int, stall_seconds: float
) -> tuple[Blackout, ...]:
    """``"2+6"``, ``"2+6:503,20+1.5:stall"`` as blackouts; ``ValueError`` naming the part."""
    out: list[Blackout] = []
    for part in spec.split(","):
        m = _BLACKOUT.fullmatch(part)
        kind = (m.group(3) or "429").lower() if m else ""
        if m is None or kind not in BLACKOUT_KINDS:
            raise ValueError(
                f"--blackout {part.strip()!r}: write START+SECONDS[:KIND] (seconds from the "
                f"server's start; KIND one of {','.join(BLACKOUT_KINDS)}), e.g. 2+6 or 2+6:503"
            )
        start, seconds = float(m.group(1)), float(m.group(2))
        if not (math.isfinite(start) and math.isfinite(seconds)) or seconds <= 0:
            raise ValueError(f"--blackout {part.strip()!r}: the duration must be above 0")
        # A stall lasts as long as the blackout has left at most: the client's timeout decides.
        (fault,) = parse_faults(
            kind, retry_after_ms=retry_after_ms, stall_seconds=min(stall_seconds, seconds)
        )
        out.append(Blackout(start, seconds, fault))
    return tuple(out)


def parse_rate_changes(spec: str) -> tuple[RateChange, ...]:
    """``"10=600/min,20=1200/min"`` as rate changes, in time order; ``ValueError`` else."""
    out: list[RateChange] = []
    for part in spec.split(","):
        m = _CHANGE.fullmatch(part)
        if m is None:
            raise ValueError(
                f"--rate-change {part.strip()!r}: write SECONDS=N/min (from the server's "
                "start), e.g. 10=600/min"
            )
        at = float(m.group(1))
        out.append(RateChange(at, parse_rate(m.group(2), "--rate-change", "600/min")))
    if any(b.at < a.at for a, b in itertools.pairwise(out)):
        raise ValueError(f"--rate-change {spec!r}: give the changes in time order")
    return tuple(out)
