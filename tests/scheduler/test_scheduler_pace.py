"""Issue 32 item 1: "Pace by rate, not only by concurrency. Learn the sustainable request rate
from accepted requests ..., release requests at that rate, with concurrency as an upper bound;
a 429 lowers the rate for the whole run, successes raise it slowly." Against the simulated
server and batch loop of ``simulated_limit.py`` (a 1-second token bucket; shared with
``test_scheduler_sim``), on its own clock: counts, no time.

The issue's regime: 1,200/min with 100 ms of latency, and 3,000/min with none, at concurrency
16 and 64, counted over the steady state (after the first 2 s). Pacing by concurrency alone drew
0.33 and 2.0 429s per success there (the simulation reproduces the issue's bench); paced, they
are at most 0.1, with at least 0.95x the limit; after the limit is halved mid-run, back to at
most 0.1 within 5 s."""

from __future__ import annotations

import pytest

from simulated_limit import Run, Server
from simulated_limit import simulate as simulated
from suite_policy import note
from toolnexus.scheduler import Outcome, Window


def simulate(
    per_minute: int,
    concurrency: int,
    latency: float,
    states: int,
    halve_at: float | None = None,
) -> tuple[Run, Server]:
    """The shared batch loop against a request limit, with ``latency`` +-10 % (plus 1 ms)."""
    server = Server(per_minute, whole_seconds=False)
    run = simulated(
        server,
        concurrency=concurrency,
        states=states,
        latency=lambda rng: latency * rng.uniform(0.9, 1.1) + 0.001,
        seed=7,
        halve_at=halve_at,
    )
    assert sorted(run.answered) == list(range(states))  # every state answered once, none lost
    return run, server


@pytest.mark.parametrize("concurrency", [16, 64])
@pytest.mark.parametrize(
    ("per_minute", "latency"),
    [pytest.param(1200, 0.1, id="1200-per-min-100ms"), pytest.param(3000, 0.0, id="3000-no-wait")],
)
def test_paced_runs_draw_at_most_a_tenth_of_a_429_per_success_at_the_limit(
    per_minute: int, concurrency: int, latency: float, request: pytest.FixtureRequest
) -> None:
    states = 2500
    run, _ = simulate(per_minute, concurrency, latency, states)
    rate = per_minute / 60
    steady = [t for t in run.ok if t >= 2.0]
    share = len(steady) / ((run.finish - 2.0) * rate)
    per_success = run.per_success(2.0)
    note(
        request.config,
        f"paced: {per_minute}/min, {latency * 1000:.0f} ms, concurrency {concurrency}: "
        f"{per_success:.3f} 429s per success, {share:.3f}x the limit",
    )
    assert per_success <= 0.1
    assert share >= 0.95


@pytest.mark.parametrize(
    ("per_minute", "latency"),
    [pytest.param(1200, 0.1, id="1200-per-min-100ms"), pytest.param(3000, 0.0, id="3000-no-wait")],
)
def test_after_the_limit_is_halved_the_run_is_back_under_a_tenth_within_5_s(
    per_minute: int, latency: float
) -> None:
    halve_at = 20.0
    run, server = simulate(per_minute, 64, latency, 2500, halve_at=halve_at)
    assert server.per_minute == per_minute // 2  # the halving happened mid-run
    assert run.finish > halve_at + 10
    assert run.per_success(halve_at + 5) <= 0.1


def test_the_pace_is_learned_only_from_a_429_and_only_lowered_by_one() -> None:
    """No 429, no pace (concurrency alone, as before); a 429 sets it a little under what was
    accepted lately; successes raise it slowly."""
    window = Window(8)
    for i in range(40):  # 20 successes a second for 2 s
        window.admit(i * 0.05, i)
        window.settle(i * 0.05 + 0.01, i, Outcome.success())
    assert window.pace is None
    window.admit(2.0, 40)
    window.settle(2.0, 40, Outcome.rate_limited(0.05))
    assert window.pace is not None and 18.0 <= window.pace.rate <= 20.0
    before = window.pace.rate
    window.admit(2.1, 41)
    window.settle(2.1, 41, Outcome.success())
    assert before < window.pace.rate <= before + 0.05
