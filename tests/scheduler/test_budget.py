"""Spend caps as an admission member (issue 23 item 2): reserve on admit, settle on release."""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal

import pytest

from paths import TESTS
from toolnexus.core.answers import ClassifierUsage
from toolnexus.core.errors import ConfigError
from toolnexus.scheduler import Chain, Outcome, RunStopped, Ticket, TokenEstimate
from toolnexus.scheduler.budget import (
    Budget,
    Caps,
    Price,
    Spend,
    estimate_output_tokens,
    parse_price,
)

# The budgets whose stop lines are checked below speak batch's words (``surface="batch"``); a
# script's own budget says ``max_requests=3`` (issue 43 item 7, tests/run/test_surface_words.py).
LIVE = TESTS / "fixtures" / "recordings-live"


def _ticket(i: int, tokens: int = 1000) -> Ticket:
    """A request whose UPPER bound is ``tokens``: what a budget reserves (issue 32 item 4)."""
    return Ticket(i, TokenEstimate(central=tokens // 2, upper=tokens))


def test_the_next_request_that_would_pass_the_cap_stops_the_run() -> None:
    """ "When the next request would not fit, the run stops scheduling" — in-flight work never
    carries the run past the cap by more than the estimate's error."""
    price = Price(Decimal("1"), Decimal("0"))  # $1 per million input tokens
    budget = Budget(Caps(max_cost=Decimal("0.0035")), price=price, surface="batch")

    async def go() -> int:
        admitted = 0
        for i in range(10):
            try:
                await budget.acquire(_ticket(i))
            except RunStopped as stop:
                assert stop.kind == "budget"
                assert "--max-cost 0.0035" in str(stop) and "--resume" in str(stop)
                return admitted
            admitted += 1
        return admitted

    assert asyncio.run(go()) == 3  # 3 x $0.001 reserved fit; a fourth would reach $0.004


def test_settling_frees_the_reservation_and_charges_what_the_server_reported() -> None:
    budget = Budget(Caps(max_cost=Decimal("0.01")), price=Price(Decimal("1")))

    async def go() -> None:
        await budget.acquire(_ticket(0))
        # the gateway reported its own cost: that wins over tokens x price
        await budget.release(_ticket(0), ClassifierUsage(1000, 10, 0.0002), Outcome.success())
        await budget.acquire(_ticket(1))
        await budget.release(_ticket(1), ClassifierUsage(500, 10), Outcome.success())

    asyncio.run(go())
    assert budget.spent.cost == Decimal("0.0002") + Decimal("0.0005")
    assert budget.spent.requests == 2
    assert budget.spent.tokens == 1520


def test_max_requests_counts_attempts_retries_included() -> None:
    budget = Budget(Caps(max_requests=3), surface="batch")

    async def go() -> None:
        await budget.acquire(_ticket(0))
        budget.resent(1)  # one retry: it bills
        await budget.release(_ticket(0), ClassifierUsage(1, 1), Outcome.success())
        with pytest.raises(RunStopped, match="--max-requests 3: 2 requests sent"):
            await budget.acquire(_ticket(1))
            await budget.acquire(_ticket(2))

    asyncio.run(go())


def test_resume_counts_the_spend_already_recorded() -> None:
    budget = Budget(Caps(max_tokens=5000), already=Spend(tokens=4500), surface="batch")

    async def go() -> None:
        with pytest.raises(RunStopped, match="--max-tokens 5000: 4500 tokens spent"):
            await budget.acquire(_ticket(0, tokens=1000))

    asyncio.run(go())


def test_a_refusal_in_a_chain_gives_the_earlier_members_slot_back() -> None:
    released: list[str] = []

    class Recorder:
        async def acquire(self, ticket: Ticket) -> None:
            return None

        async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None:
            released.append(outcome.kind.value)

    chain = Chain([Recorder(), Budget(Caps(max_requests=0))])
    with pytest.raises(RunStopped):
        asyncio.run(chain.acquire(_ticket(0)))
    assert released == ["not_sent"]


def test_a_cost_cap_without_a_price_is_refused() -> None:
    """Issue 42 item 7: "``--max-cost`` requires ``--price`` (or ``TOOLNEXUS_PRICE``); without
    it, exit 2 naming both" (a cap of 1e-7 once let a $0.01 request through: its reported
    ``usage.cost`` is known only after it is sent)."""
    with pytest.raises(ConfigError) as e:
        Budget(Caps(max_cost=Decimal("0.003")), surface="batch")
    said = str(e.value)
    assert "--max-cost" in said and "--price" in said and "TOOLNEXUS_PRICE" in said
    assert "\n" not in said
    # A script's own Budget speaks a script's words (issue 43 item 7).
    with pytest.raises(ConfigError) as e:
        Budget(Caps(max_cost=Decimal("0.003")))
    said = str(e.value)
    assert "max_cost needs price=" in said and "--" not in said and "TOOLNEXUS_PRICE" in said


def test_the_reported_cost_is_counted_and_only_requests_in_flight_pass_the_cap() -> None:
    """ "Admission reserves each request's estimated cost before sending; a reported
    ``usage.cost`` is what gets counted; the cap can be passed only by the estimate error of
    requests already in flight"."""
    # $1 per million input tokens: a 1,000-token request reserves about $0.001
    budget = Budget(Caps(max_cost=Decimal("0.0025")), Price(Decimal(1)))

    async def go() -> None:
        await budget.acquire(_ticket(0, tokens=1000))
        await budget.acquire(_ticket(1, tokens=1000))  # both in flight: $0.002 reserved
        with pytest.raises(RunStopped):
            await budget.acquire(_ticket(2, tokens=1000))  # a third would pass $0.0025
        # the gateway charged each far more than its estimate: the reported cost counts
        await budget.release(_ticket(0), ClassifierUsage(1000, 0, 0.002), Outcome.success())
        await budget.release(_ticket(1), ClassifierUsage(1000, 0, 0.002), Outcome.success())

    asyncio.run(go())
    assert budget.spent.cost == Decimal("0.004")
    assert budget.over_cost_cap == Decimal("0.0015")


@pytest.mark.parametrize(
    "text, price",
    [
        pytest.param("input=0.042,output=0", Price(Decimal("0.042"), Decimal(0)), id="both"),
        pytest.param("input=2", Price(Decimal(2)), id="input-only"),
        pytest.param(" output=1 , input=3 ", Price(Decimal(3), Decimal(1)), id="spaces"),
    ],
)
def test_parse_price(text: str, price: Price) -> None:
    assert parse_price(text) == price


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("0.042", id="no-name"),
        pytest.param("input=x", id="not-a-number"),
        pytest.param("input=-1", id="negative"),
        pytest.param("input=NaN", id="nan"),
        pytest.param("output=1", id="no-input"),
        pytest.param("input=1,input=2", id="twice"),
        pytest.param("inptu=1", id="typo"),
    ],
)
def test_a_bad_price_is_one_line(text: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_price(text)
    assert "\n" not in str(e.value) and "--price" in str(e.value)


def test_output_estimate_is_within_ten_percent_on_each_live_capture(
    record_property: pytest.RecordProperty,
) -> None:
    table = []
    for path in sorted(LIVE.glob("*.json")):
        capture = json.loads(path.read_text(encoding="utf-8"))
        request = json.loads(capture["request_raw"])
        billed = json.loads(capture["response_raw"])["usage"]["output_tokens"]
        estimated = estimate_output_tokens(request["questions"])
        table.append((path.stem, billed, estimated, (estimated - billed) / billed))
    record_property("output_estimate", table)
    print("\n".join(f"{n}: billed {b}, estimated {e} ({err:+.1%})" for n, b, e, err in table))
    assert len(table) == 6
    for name, billed, estimated, err in table:
        assert abs(err) <= 0.10, f"{name}: billed {billed}, estimated {estimated} ({err:+.1%})"
