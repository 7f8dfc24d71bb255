"""Issue 19 item 2 against a simulated server: a batch at concurrency 64 against an account
limited to N requests a minute finishes with no request lost to 429 and close to the limit's
throughput. A discrete-event simulation on its own clock drives the limiter's state machine:
deterministic, and no real time passes.

The server and the loop are ``simulated_limit.py``'s (shared with ``test_scheduler_pace``):
N/min with a burst of one second of the rate (issue 19 item 5's ``serve --rate-limit``), a 429
carrying the wait until its next token in milliseconds (``retry-after-ms``) or rounded up to
whole seconds (``Retry-After`` alone)."""

from __future__ import annotations

import heapq
import random
from collections import deque
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulated_limit import Server, simulate
from suite_policy import note

LIMIT_PER_MINUTE = 3000
STATES = 1500
CONCURRENCY = 64


def _latency(rng: random.Random) -> float:
    return rng.uniform(0.05, 0.25)


def run_with_scheduler(
    server: Server, seed: int, concurrency: int = CONCURRENCY, states: int = STATES
) -> tuple[float, list[int]]:
    """The batch loop (``simulated_limit.simulate``) with 50-250 ms of latency. Returns (finish
    time, states answered in order)."""
    run = simulate(server, concurrency=concurrency, states=states, latency=_latency, seed=seed)
    return run.finish, run.answered


def run_with_per_request_retries(server: Server, seed: int, retries: int = 2) -> int:
    """What a batch did before: 64 in flight, each request retrying its own 429s after their
    Retry-After, then giving up. Returns the states lost to 429."""
    rng = random.Random(seed)
    events: list[tuple[float, int, int, int]] = []  # (at, seq, state, attempt)
    queue = deque(range(STATES))
    lost = 0
    seq = 0
    for _ in range(CONCURRENCY):
        state = queue.popleft()
        events.append((0.0, state, state, 0))
    heapq.heapify(events)
    while events:
        now, _, state, attempt = heapq.heappop(events)
        latency = rng.uniform(0.05, 0.25)
        retry_after = server.answer(now + latency / 2)
        seq += 1
        if retry_after is not None and attempt < retries:
            heapq.heappush(events, (now + latency + retry_after, seq, state, attempt + 1))
            continue
        lost += retry_after is not None
        if queue:
            heapq.heappush(events, (now + latency, seq, queue.popleft(), 0))
    return lost


@pytest.mark.parametrize(
    "whole_seconds",
    [pytest.param(False, id="retry-after-ms"), pytest.param(True, id="retry-after-seconds")],
)
@pytest.mark.parametrize(
    ("concurrency", "seed"),
    [
        pytest.param(16, 1, id="c16"),
        pytest.param(64, 1, id="c64-seed1"),
        pytest.param(64, 2, id="c64-seed2"),
        pytest.param(64, 3, id="c64-seed3"),
        pytest.param(256, 1, id="c256"),
    ],
)
def test_any_concurrency_against_a_limited_server_loses_nothing_and_rides_the_limit(
    whole_seconds: bool,
    concurrency: int,
    seed: int,
    request: pytest.FixtureRequest,
    record_property: Any,
) -> None:
    """'a batch at any --concurrency against a limited server finishes with no error record
    caused by 429 and close to the limit's throughput' (bench target at concurrency 64:
    >= 0.9x the limit)."""
    server = Server(LIMIT_PER_MINUTE, whole_seconds)
    finish, answered = run_with_scheduler(server, seed, concurrency)
    assert sorted(answered) == list(range(STATES))  # every state answered, exactly once
    rate = LIMIT_PER_MINUTE / 60
    ideal = (STATES - rate) / rate  # the first second's burst, then the sustained rate
    throughput = ideal / finish
    sent = server.ok + server.throttled
    line = (
        f"{STATES} states at concurrency {concurrency}, limit {LIMIT_PER_MINUTE}/min, "
        f"{'Retry-After' if whole_seconds else 'retry-after-ms'}: "
        f"{throughput:.3f}x the limit, {server.throttled} of {sent} requests answered 429"
    )
    record_property("simulation", line)
    if seed == 1:  # one line per concurrency in the run's summary, whatever -s says
        note(request.config, line)
    assert throughput >= 0.9, (
        f"{throughput:.2f}x the limit; {server.throttled} of {sent} requests answered 429"
    )
    # The 429s are the price of finding the limit, not a storm: a few per cent of requests.
    assert server.throttled <= 0.1 * sent, f"{server.throttled} 429s of {sent} requests"


def test_without_the_scheduler_concurrency_64_loses_states_to_429() -> None:
    """The baseline the issue measured (30 of 1,500 lost at concurrency 64): per-request retries
    alone cannot ride the limit, which is why the whole run must slow down."""
    assert run_with_per_request_retries(Server(LIMIT_PER_MINUTE, whole_seconds=False), 1) > 0


@settings(max_examples=40)
@given(
    per_minute=st.integers(120, 12_000),
    concurrency=st.integers(1, 128),
    whole_seconds=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_property_no_state_is_lost_or_answered_twice(
    per_minute: int, concurrency: int, whole_seconds: bool, seed: int
) -> None:
    """Whatever the limit and the concurrency: every state answered exactly once, and the
    window never lets more than its allowed requests fly (checked at every admission)."""
    _, answered = run_with_scheduler(Server(per_minute, whole_seconds), seed, concurrency, 200)
    assert sorted(answered) == list(range(200))
