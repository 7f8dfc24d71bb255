"""Issue 32 item 1: "Learn the sustainable request rate (and token rate) from accepted requests
and from Retry-After / retry-after-ms, and release requests at that rate." A 429 whose body names
the token limit (serve's "Rate limit exceeded: N tokens per second.") teaches a token pace from
the accepted requests' ``usage``; requests are released by both paces.

Against a simulated server written here (token buckets of one second, as ``serve --token-limit``
keeps them), on its own clock: counts, no time passes. The client's estimate is off by up to 30 %
either way, as a real tokenizer's is: the pace is learned in billed tokens, not estimated ones."""

from __future__ import annotations

import asyncio

import pytest

from simulated_tokens import Bucket, Server, mixed_costs, simulate
from suite_policy import note
from toolnexus.core.answers import ClassifierUsage
from toolnexus.core.errors import HTTPStatusError
from toolnexus.scheduler import Outcome, RunLimiter, Ticket, TokenEstimate, Window, outcome_of


@pytest.mark.parametrize("concurrency", [16, 64])
@pytest.mark.parametrize(
    "latency", [pytest.param(0.1, id="100ms"), pytest.param(0.0, id="no-wait")]
)
def test_a_token_limit_is_ridden_at_most_a_tenth_of_a_429_per_success(
    concurrency: int, latency: float, request: pytest.FixtureRequest
) -> None:
    """At steady state (after the first 2 s): <= 0.1 429s per success, >= 0.95x the limit."""
    limit = 20_000.0  # tokens a second: about 15 requests a second of these sizes
    run = simulate(Server(Bucket(limit)), mixed_costs(1200), concurrency=concurrency,
                   latency=latency)  # fmt: skip
    share = run.tokens_per_second(2.0) / limit
    note(
        request.config,
        f"token pace: {limit:.0f} tokens/s, {latency * 1000:.0f} ms, concurrency {concurrency}: "
        f"{run.per_success(2.0):.3f} 429s per success, {share:.3f}x the limit",
    )
    assert run.per_success(2.0) <= 0.1
    assert share >= 0.95


def test_a_token_pace_beats_a_request_pace_when_request_sizes_change() -> None:
    """Sizes that change mid-run (short requests, then packs 8x as large): a request pace
    learned on the short ones floods the token limit with the large ones; the token pace
    releases them by their tokens. Without the body naming the limit, the run falls back to the
    request pace (as before this change) and draws more 429s."""
    costs = [300] * 600 + [2400] * 150 + [300] * 600
    runs = {
        named: simulate(Server(Bucket(12_000.0)), costs, concurrency=64, latency=0.1, named=named)
        for named in (True, False)
    }
    by_tokens, by_requests = runs[True].per_success(2.0), runs[False].per_success(2.0)
    assert by_tokens <= 0.1
    assert by_tokens < by_requests / 2


def test_after_the_token_limit_is_halved_the_run_is_back_under_a_tenth_within_5_s() -> None:
    halve_at = 10.0
    run = simulate(Server(Bucket(20_000.0)), mixed_costs(1500), concurrency=64, latency=0.1,
                   halve_at=halve_at)  # fmt: skip
    assert run.finish > halve_at + 10
    assert run.per_success(halve_at + 5) <= 0.1


def test_both_limits_are_learned_and_requests_released_by_both() -> None:
    """A request limit and a token limit: each 429 teaches the pace of the limit it names."""
    server = Server(Bucket(20_000.0), requests=Bucket(10.0))
    run = simulate(server, [300] * 300 + [2400] * 200, concurrency=64, latency=0.1)
    limits = {limit for _, limit in run.throttled}
    assert limits == {"requests", "tokens"}
    assert run.per_success(2.0) <= 0.1


def test_a_429_naming_the_token_limit_sets_a_token_pace_from_usage_only() -> None:
    """The token pace is set a little under the billed tokens of the last 2 s (never the
    estimate), the request pace is left alone, and a success raises it by 2 % of its bill."""
    window = Window(8)
    for i in range(40):  # 20 requests a second of 500 billed tokens for 2 s: 10,000 tokens/s
        window.admit(i * 0.05, i)
        window.settle(i * 0.05 + 0.01, i, Outcome.success(), 500)
    window.admit(2.0, 40)
    window.settle(2.0, 40, Outcome.rate_limited(0.05, "tokens"))
    assert window.pace is None
    assert window.token_pace is not None and 9_000 <= window.token_pace.rate <= 10_000
    before = window.token_pace.rate
    window.admit(2.1, 41, tokens=900)  # estimated 900, billed 500: settled by the bill
    window.settle(2.2, 41, Outcome.success(), 500)
    assert window.token_pace.rate == pytest.approx(before + 0.02 * 500)


def test_a_refused_request_is_refunded_and_a_request_without_usage_teaches_the_request_pace() -> (
    None
):
    window = Window(8)
    for i in range(40):  # successes that reported no usage: no token rate to learn
        window.admit(i * 0.05, i)
        window.settle(i * 0.05 + 0.01, i, Outcome.success(), None)
    window.settle(2.0, 40, Outcome.rate_limited(0.05, "tokens"))
    assert window.token_pace is None and window.pace is not None


def test_the_run_limiter_charges_the_estimate_and_settles_with_the_usage() -> None:
    """Through RunLimiter: a ticket is charged its central estimate when a token pace exists,
    and one the server charged nothing (never sent) gives it back."""

    class Clock:
        def now(self) -> float:
            return 2.5

        async def sleep(self, seconds: float) -> None:
            raise AssertionError("the pace has room: no wait")

    async def run() -> tuple[float, float, float]:
        limiter = RunLimiter(8, clock=Clock())
        window = limiter.window
        for i in range(40):
            window.admit(i * 0.05, i)
            window.settle(i * 0.05 + 0.01, i, Outcome.success(), 500)
        window.admit(2.0, 40)
        window.settle(2.0, 40, Outcome.rate_limited(0.05, "tokens"))
        assert window.token_pace is not None
        full = window.token_pace.level
        ticket = Ticket(100, TokenEstimate(central=400, upper=900))
        await limiter.acquire(ticket)
        charged = window.token_pace.level
        await limiter.release(ticket, ClassifierUsage(), Outcome.not_sent())
        refunded = window.token_pace.level
        return full, charged, refunded

    full, charged, refunded = asyncio.run(run())
    assert charged == pytest.approx(full - 400, abs=1)
    assert refunded == pytest.approx(full, abs=1)


@pytest.mark.parametrize(
    ("body", "limit"),
    [
        pytest.param(
            '{"detail": "Rate limit exceeded: 250000 tokens per second."}',
            "tokens",
            id="serve-tokens",
        ),
        pytest.param(
            '{"detail": "Rate limit exceeded: 1200 requests per minute."}',
            "requests",
            id="serve-requests",
        ),
        pytest.param(
            '{"error": {"message": "Limit 30000 tokens per min (TPM)"}}', "tokens", id="gateway-tpm"
        ),
        pytest.param('{"detail": "slow down"}', "", id="names-none"),
    ],
)
def test_a_429_body_names_its_limit(body: str, limit: str) -> None:
    error = HTTPStatusError(
        "classifier: HTTP 429", status=429, endpoint="/v1/x", body=body, retry_after="1"
    )
    outcome = outcome_of(error)
    assert outcome.limit == limit and outcome.retry_after == 1.0


def test_a_refused_request_is_not_refunded_so_it_does_not_go_again_at_once() -> None:
    """A 429's request keeps its charge (a refund sent it straight back into the bucket that
    refused it: against serve at 3,000/min a run sank to 0.45x the limit); one never sent is
    refunded."""
    window = Window(8)
    for i in range(40):
        window.admit(i * 0.05, i)
        window.settle(i * 0.05 + 0.01, i, Outcome.success(), 500)
    window.admit(2.0, 40)
    window.settle(2.0, 40, Outcome.rate_limited(0.05, "tokens"))
    assert window.token_pace is not None
    window.admit(2.0, 30, tokens=400)  # admitted before the cut's window: this 429 cuts nothing
    charged = window.token_pace.level
    window.settle(2.0, 30, Outcome.rate_limited(0.05, "tokens"))
    assert window.token_pace.level == charged
    window.admit(2.0, 31, tokens=400)
    window.settle(2.0, 31, Outcome.not_sent())
    assert window.token_pace.level == charged
