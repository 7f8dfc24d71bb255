"""Spend caps (issue 23): a budget is an admission member that reserves a request's estimated spend
when it is admitted and settles what the server charged when it is released.

Spend is what the server reported: ``usage.cost`` when a gateway reports it, else tokens times a
:class:`Price` (``--price input=USD/Mtok,output=USD/Mtok``; no price is built in, since no
public price list is authoritative). A cost cap needs a price (:func:`check_price`, issue 42
item 7): the reservation is priced before the request is sent, and the settled spend counts the
reported ``usage.cost``, so only the estimate error of requests already in flight can pass the
cap (:attr:`Budget.over_cost_cap`, which the summary prints). Money is counted in
:class:`~decimal.Decimal`, never float sums. A request is admitted only while ``spent + reserved
+ its estimate`` stays within every cap; otherwise the budget raises
:class:`~.admission.RunStopped` (kind ``budget``) naming the cap and the spend, the run stops
scheduling, and what is in flight finishes.

The reservation is the request's UPPER token estimate (``scheduler.tokens``: never under the
bill in any script, CJK or base64 included) plus its output estimate with the same 15 % margin,
and each release settles what the server reported in its place. So in-flight work never
carries the run past a cap, whatever the text (issue 32 item 4: with the central estimate, 40
Japanese tickets once spent 2.7x ``--max-tokens``). The price is headroom: a run stops when the
next request's upper bound, not its likely bill, would pass the cap.

``max_requests`` counts attempts, retries included (they bill): :meth:`Budget.resent` is told
of every extra attempt of an admitted request.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from ..core import ClassifierUsage, ConfigError, RunStopped, Surface, option, registry, stop_advice
from .admission import (
    Outcome,
    OutcomeKind,
    Ticket,
)

__all__ = [
    "Budget",
    "Caps",
    "Price",
    "Spend",
    "check_price",
    "estimate_output_tokens",
    "parse_price",
]

_MTOK = Decimal(1_000_000)
#: The output estimate is fitted within 10 % of every capture: reserved with a 15 % margin.
OUTPUT_MARGIN = 1.15


def estimate_output_tokens(questions: Mapping[str, Mapping[str, object]]) -> int:
    """The central estimate of the output tokens of a request asking ``questions`` (in wire
    form: ``{key: {"type", "criteria", ...}}``): each answer's, by its type's ``output_tokens``
    hook (``qtypes``), fitted on the six live captures (tests/fixtures/recordings-live/): a
    noul answer bills about 20, a score 17-18 whatever its levels, a choice about 8 plus 10 per
    option (38 for 3 options, 331 for 32), any other type 20. The mixed capture's 6 answers
    bill 126 against 138 estimated: within 10% on each capture (tests/scheduler/test_budget.py
    prints the table)."""
    return sum(registry.of(q.get("type")).output_tokens(q) for q in questions.values())


@dataclass(frozen=True)
class Price:
    """USD per million input and output tokens."""

    input_per_mtok: Decimal
    output_per_mtok: Decimal = Decimal(0)

    def cost(self, input_tokens: int, output_tokens: int) -> Decimal:
        return (
            Decimal(input_tokens) * self.input_per_mtok
            + Decimal(output_tokens) * self.output_per_mtok
        ) / _MTOK


def parse_price(text: str, where: str = "--price") -> Price:
    """``input=0.042,output=0`` (USD per million tokens) as a :class:`Price`."""
    parts: dict[str, Decimal] = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in ("input", "output") or name in parts:
            raise ConfigError(
                f"classifier: {where} {text!r}: write input=USD/Mtok,output=USD/Mtok "
                "(e.g. input=0.042,output=0)"
            )
        try:
            amount = Decimal(value.strip())
        except InvalidOperation:
            raise ConfigError(f"classifier: {where}: {name}={value!r} is not a number") from None
        if not amount.is_finite() or amount < 0:
            raise ConfigError(f"classifier: {where}: {name}={value!r} must be 0 or more")
        parts[name] = amount
    if "input" not in parts:
        raise ConfigError(f"classifier: {where} {text!r} names no input price")
    return Price(parts["input"], parts.get("output", Decimal(0)))


def check_price(
    max_cost: Decimal | None, price: Price | None, surface: Surface = "library"
) -> None:
    """A cost cap needs a price (issue 42 item 7): a request's cost must be estimated and
    reserved BEFORE it is sent, and a gateway's ``usage.cost`` is known only after (a cap of
    $0.0000001 once let a $0.01 request through). :class:`Budget` holds itself to it, and every
    surface (``toolnexus.run``, ``batch``, ``filter``, ``mcp``) calls it before anything is
    sent."""
    if max_cost is not None and price is None:
        # In the words of the surface that set the cap (issue 43 item 7).
        cap, given = "max_cost", 'price="input=USD/Mtok,output=USD/Mtok"'
        if surface != "library":
            cap, given = "--max-cost", "--price input=USD/Mtok,output=USD/Mtok"
        raise ConfigError(
            f"classifier: {cap} needs {given} (or $TOOLNEXUS_PRICE): each request's cost is "
            "reserved from the price before it is sent, and a reported usage.cost is known "
            "only after; nothing was sent"
        )


@dataclass(frozen=True)
class Caps:
    """The run's caps; None is no cap. ``max_cost`` is USD."""

    max_cost: Decimal | None = None
    max_tokens: int | None = None
    max_requests: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_cost", "max_tokens", "max_requests"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigError(f"classifier: --{name.replace('_', '-')} must be 0 or more")

    @property
    def any(self) -> bool:
        return any(v is not None for v in (self.max_cost, self.max_tokens, self.max_requests))


@dataclass
class Spend:
    """What a run has spent (settled) and holds reserved for what is in flight."""

    cost: Decimal = Decimal(0)
    tokens: int = 0
    requests: int = 0
    #: True while some charged request reported no cost and no price was given
    cost_unknown: bool = False


@dataclass
class _Reservation:
    cost: Decimal
    tokens: int


@dataclass
class Budget:
    """The spend budget as an admission member (see the module docstring).

    ``already`` is what this output spent before (``--resume`` counts the recorded spend);
    ``output_tokens`` is the central estimate of one request's output tokens."""

    caps: Caps
    price: Price | None = None
    output_tokens: int = 0
    already: Spend = field(default_factory=Spend)
    #: whose words its stop speaks (``failures.Surface``): a cap is ``--max-requests 5`` to a
    #: command line, ``max_requests=5`` to a script (issue 43 item 7)
    surface: Surface = "library"
    spent: Spend = field(init=False)
    _reserved: dict[int, _Reservation] = field(default_factory=dict, init=False)
    stopped: RunStopped | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        check_price(self.caps.max_cost, self.price, self.surface)
        self.spent = Spend(
            self.already.cost, self.already.tokens, self.already.requests, self.already.cost_unknown
        )

    def estimate(self, input_tokens: int) -> _Reservation:
        """What admitting a request of ``input_tokens`` (its upper bound) reserves. With no
        price, a gateway's reported costs so far give the price per token; before the first,
        nothing is known."""
        output = math.ceil(OUTPUT_MARGIN * self.output_tokens)
        tokens = input_tokens + output
        cost = self.price.cost(input_tokens, output) if self.price is not None else Decimal(0)
        return _Reservation(cost, tokens)

    def _would_pass(self, extra: _Reservation) -> str | None:
        held_cost = sum((r.cost for r in self._reserved.values()), Decimal(0))
        held_tokens = sum(r.tokens for r in self._reserved.values())
        held = len(self._reserved)
        caps, spent, cap = self.caps, self.spent, self._cap
        # The stop line counts what is in flight too (issue 31 item 11): "35 requests sent"
        # under a cap of 50 read as a budget stopped too early.
        if caps.max_requests is not None and spent.requests + held + 1 > caps.max_requests:
            flying = f" and {held} in flight" if held else ""
            return f"{cap('max_requests')}: {spent.requests} requests sent{flying}"
        if caps.max_tokens is not None and spent.tokens + held_tokens + extra.tokens > (
            caps.max_tokens
        ):
            flying = f" and {held_tokens} reserved in flight" if held else ""
            return f"{cap('max_tokens')}: {spent.tokens} tokens spent{flying}"
        if caps.max_cost is not None and spent.cost + held_cost + extra.cost > caps.max_cost:
            flying = f" and ${held_cost:.6f} reserved in flight" if held else ""
            return f"{cap('max_cost')}: ${spent.cost:.6f} spent{flying}"
        return None

    def _cap(self, name: str) -> str:
        value = getattr(self.caps, name)
        return option(name, self.surface, str(value) if self.surface != "library" else value)

    async def acquire(self, ticket: Ticket) -> None:
        if self.stopped is not None:
            raise self.stopped
        reservation = self.estimate(ticket.estimate.upper)
        why = self._would_pass(reservation)
        if why is not None:
            self.stopped = RunStopped(
                f"classifier: budget reached, {why}; the next request would pass it. "
                f"{stop_advice('budget', self.surface)}",
                "budget",
            )
            raise self.stopped
        self._reserved[ticket.id] = reservation

    def resent(self, extra_attempts: int = 1) -> None:
        """A request was sent again, whichever ticket it belongs to (what the transport's
        attempt hook knows): it bills like a request."""
        self.spent.requests += extra_attempts

    @property
    def over_cost_cap(self) -> Decimal:
        """How far the settled spend passed ``--max-cost`` (0 within it): only what requests
        already in flight cost beyond their reserved estimate can carry it there."""
        cap = self.caps.max_cost
        return max(Decimal(0), self.spent.cost - cap) if cap is not None else Decimal(0)

    async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None:
        held = self._reserved.pop(ticket.id, None)
        if outcome.kind is OutcomeKind.NOT_SENT:
            return
        self.spent.requests += 1
        if not usage.reported and outcome.kind is OutcomeKind.SUCCESS:
            # A reply without token counts is charged at its estimate, never 0 (issue 33):
            # otherwise every cap counts nothing against such a server.
            estimate = held or self.estimate(ticket.estimate.central)
            self.spent.tokens += max(estimate.tokens, usage.input_tokens + usage.output_tokens)
            if usage.cost is not None:
                self.spent.cost += Decimal(repr(usage.cost))
            elif self.price is not None:
                self.spent.cost += estimate.cost
            else:
                self.spent.cost_unknown = True
            return
        self.spent.tokens += usage.input_tokens + usage.output_tokens
        if usage.cost is not None:
            self.spent.cost += Decimal(repr(usage.cost))
        elif self.price is not None:
            self.spent.cost += self.price.cost(usage.input_tokens, usage.output_tokens)
        elif usage.input_tokens or usage.output_tokens:
            self.spent.cost_unknown = True
