"""Issue 19 items 1-2, the run's limiter as a state machine driven by explicit times (no
sleeps): slow start, AIMD on 429, run-wide Retry-After, and the hard rate caps."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolnexus.core.errors import ConfigError
from toolnexus.scheduler.admission import Outcome
from toolnexus.scheduler.limiter import (
    DEFAULT_SLOW_START,
    Window,
)
from toolnexus.scheduler.pace import TokenBucket

OK = Outcome.success()


def _fill(w: Window, now: float, start: int = 0) -> list[int]:
    """Admit as many tickets as the window allows at ``now``; their ids."""
    ids = []
    while (at := w.ready_at(now)) is not None and at <= now:
        w.admit(now, start + len(ids))
        ids.append(start + len(ids))
    return ids


def test_slow_start_keeps_two_in_flight_until_the_first_success() -> None:
    """'Until the first success a run keeps very few requests in flight, then opens up to
    --concurrency.'"""
    w = Window(64)
    assert DEFAULT_SLOW_START == 2
    assert len(_fill(w, 0.0)) == 2
    w.settle(0.1, 0, Outcome.failed("HTTP 500"))  # a failure is not a success: still closed
    assert len(_fill(w, 0.1, start=2)) == 1
    w.settle(0.2, 1, OK)
    assert w.allowed == 3  # open: one more slot per success, doubling every round trip
    rounds, next_id = 0, 3
    while w.allowed < 64:
        ids = _fill(w, 0.2, start=next_id)
        next_id += len(ids)
        for i in ids:
            w.settle(0.2, i, OK)
        rounds += 1
    assert rounds <= 6 and w.allowed == 64  # 3 -> 64 in a handful of round trips, no more


def test_a_429_pauses_the_whole_run_for_its_retry_after() -> None:
    """'A 429 slows the whole run, not only the one request: honour Retry-After / retry-after-ms
    for the run.'"""
    w = Window(8)
    w.admit(0.0, 0)
    w.settle(0.0, 0, OK)
    ids = _fill(w, 1.0, start=1)
    w.settle(1.0, ids[0], Outcome.rate_limited(2.5))
    for i in ids[1:]:  # the others answered: slots are free, yet the run waits
        w.settle(1.0, i, OK)
    assert w.ready_at(1.0) == 3.5
    assert w.ready_at(3.5) == 3.5


def test_a_429_without_retry_after_backs_off_like_the_sdk() -> None:
    """No Retry-After: the official SDK's 0.5 s doubling, capped at 5 s."""
    w = Window(4)
    waits = []
    for i in range(6):
        w.admit(float(i * 10), i)
        w.settle(float(i * 10), i, Outcome.rate_limited(None))
        waits.append(w.paused_until - i * 10)
    assert waits == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_429s_from_one_window_cut_once_then_successes_climb_back_additively() -> None:
    """Multiplicative decrease, one cut per window of requests; additive increase after."""
    w = Window(16)
    for i in range(16):  # open the window fully
        w.admit(0.0, i)
        w.settle(0.0, i, OK)
    ids = _fill(w, 0.0, start=16)
    assert len(ids) == 16
    for i in ids:  # all sixteen answered 429: one signal, one halving
        w.settle(0.0, i, Outcome.rate_limited(0.0))
    assert w.allowed == 8
    next_ids = _fill(w, 0.0, start=32)
    w.settle(0.0, next_ids[0], Outcome.rate_limited(0.0))  # admitted after the cut: cuts again
    assert w.allowed == 4
    for i in next_ids[1:]:
        w.settle(0.0, i, OK)
    assert w.allowed == 5  # seven successes at window 4: about one slot per window


@given(
    max_concurrency=st.integers(1, 128),
    events=st.lists(st.sampled_from(["ok", "429", "fail", "admit"]), max_size=300),
)
def test_aimd_keeps_the_allowed_concurrency_within_one_and_the_maximum(
    max_concurrency: int, events: list[str]
) -> None:
    """Property: whatever the answers, 1 <= allowed <= max and in-flight never passes it."""
    w = Window(max_concurrency)
    in_flight: list[int] = []
    next_id = 0
    for event in events:
        if event == "admit" or not in_flight:
            if (at := w.ready_at(0.0)) is not None:
                w.admit(at, next_id)
                in_flight.append(next_id)
                next_id += 1
        else:
            outcome = {
                "ok": OK,
                "429": Outcome.rate_limited(0.0),
                "fail": Outcome.failed("x"),
            }[event]
            w.settle(0.0, in_flight.pop(0), outcome)
        assert 1 <= w.allowed <= max_concurrency
        assert w.in_flight == len(in_flight) <= max(w.allowed, max_concurrency)
        assert 1.0 <= w.window <= max_concurrency


def test_rate_is_a_hard_cap_with_a_one_second_burst() -> None:
    """'--rate stays as a hard cap': a token bucket on the injected times."""
    w = Window(100, slow_start=100, rate=TokenBucket(10.0))
    assert len(_fill(w, 0.0)) == 10  # the burst: one second of the rate
    assert w.ready_at(0.0) == pytest.approx(0.1)
    admitted, t = 10, 0.0
    for _ in range(1000):  # bounded: a bug must fail the test, not hang it
        at = w.ready_at(t)
        assert at is not None
        if at > 10.0 + 1e-9:
            break
        t = at
        w.admit(t, admitted)
        w.settle(t, admitted, OK)
        admitted += 1
    assert admitted == 10 + 100  # 10 s at 10/s after the burst, never more


def test_token_rate_caps_estimated_tokens_per_second() -> None:
    """The account's other limit (250,000 tokens/s): a request waits for its tokens."""
    w = Window(100, slow_start=100, token_rate=TokenBucket(1000.0))
    w.admit(0.0, 0, tokens=1000)
    assert w.ready_at(0.0, tokens=500) == pytest.approx(0.5)


def test_a_cost_over_the_burst_is_slowed_not_refused_forever() -> None:
    bucket = TokenBucket(10.0)
    assert bucket.ready_at(0.0, cost=100.0) == 0.0
    bucket.take(0.0, cost=100.0)
    assert bucket.ready_at(0.0) == pytest.approx(9.1)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: Window(0), id="zero-concurrency"),
        pytest.param(lambda: Window(4, slow_start=0), id="zero-slow-start"),
        pytest.param(lambda: Window(4, decrease=1.0), id="no-decrease"),
        pytest.param(lambda: TokenBucket(0.0), id="zero-rate"),
        pytest.param(lambda: TokenBucket(float("nan")), id="nan-rate"),
    ],
)
def test_bad_settings_are_config_errors(make: object) -> None:
    with pytest.raises(ConfigError):
        make()  # type: ignore[operator]


def test_later_429s_of_the_same_window_do_not_push_the_pause_on() -> None:
    """A whole-second Retry-After on each reply of one burst would otherwise extend the pause by
    every reply's own arrival time, idling the run after the server has tokens again."""
    w = Window(4, slow_start=4)
    ids = _fill(w, 0.0)
    w.settle(0.1, ids[0], Outcome.rate_limited(1.0))
    w.settle(0.3, ids[1], Outcome.rate_limited(1.0))  # same burst: same signal
    assert w.paused_until == pytest.approx(1.1)
    for i in ids[2:]:
        w.settle(0.4, i, OK)
    later = _fill(w, 1.1, start=4)
    w.settle(1.2, later[0], Outcome.rate_limited(1.0))  # admitted after the cut: a new signal
    assert w.paused_until == pytest.approx(2.2)
