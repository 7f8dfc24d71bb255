"""Issue 32 item 2: "A run rides out a storm of 429 / 503 / 529 for up to a documented --patience
(BatchOptions(patience=…), default 60 s, counted from the last success or the start), then stops
as today (exit 4, --resume). Consecutive timeouts, and a 404 on the endpoint itself, are
systematic failures too: they stop the run after the same 3 requests as a rejected key.
Failures that stop a run never open slow start's window."

The limiter's verdicts run on a simulated clock; the end-to-end runs use ``serve --blackout``
with a short patience and sub-second Retry-After (their verdicts are counts, not speeds)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from clirun import run_main
from serving import HeldClock, ThreadedServer
from toolnexus import BatchOptions, ConfigError
from toolnexus.core.answers import ClassifierUsage
from toolnexus.core.errors import HTTPStatusError
from toolnexus.core.failures import EXIT_STOPPED
from toolnexus.scheduler import (
    Outcome,
    OutcomeKind,
    RunLimiter,
    RunStopped,
    Ticket,
    TokenEstimate,
    Window,
    outcome_of,
)
from toolnexus.serve import ServeOptions

EST = TokenEstimate(1, 1)


class SimClock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += seconds
        await asyncio.sleep(0)


def _storm(status: int) -> Outcome:
    error = HTTPStatusError(
        f"classifier: POST x: HTTP {status}: busy", status=status, endpoint="x", retry_after="1"
    )
    return outcome_of(error)


def _ride(limiter: RunLimiter, clock: SimClock, storm_until: float, status: int) -> float | None:
    """One request at a time against a server that answers ``status`` until ``storm_until``
    (simulated seconds), then 200; a request takes 0.1 s. The time the run stopped, or None
    when it rode the storm out."""

    async def go() -> float | None:
        for i in range(1000):
            ticket = Ticket(i, EST)
            try:
                await limiter.acquire(ticket)
            except RunStopped:
                return clock.t
            clock.t += 0.1
            if clock.t < storm_until:
                await limiter.release(ticket, ClassifierUsage(), _storm(status))
            else:
                await limiter.release(ticket, ClassifierUsage(), Outcome.success())
                if clock.t > storm_until + 1:
                    return None
        raise AssertionError("never decided")

    return asyncio.run(go())


@pytest.mark.parametrize("status", [429, 503, 529])
def test_a_storm_shorter_than_the_patience_is_ridden_out(status: int) -> None:
    """A 6-second blackout with Retry-After 1 (once stopped 4 s in) at the default 60 s."""
    clock = SimClock()
    limiter = RunLimiter(16, clock=clock)
    assert _ride(limiter, clock, storm_until=6.0, status=status) is None


@pytest.mark.parametrize("status", [429, 503, 529])
def test_a_storm_longer_than_the_patience_stops_the_run_at_the_patience(status: int) -> None:
    clock = SimClock()
    limiter = RunLimiter(16, clock=clock, patience=10.0)
    stopped = _ride(limiter, clock, storm_until=1e9, status=status)
    assert stopped is not None and 9.9 <= stopped <= 11.5
    assert not limiter.window.opened and limiter.window.allowed <= 2  # slow start held


def test_the_patience_counts_from_the_last_success() -> None:
    """Successes every 8 s within a storm keep a 10 s patience from running out."""
    clock = SimClock()
    limiter = RunLimiter(4, clock=clock, patience=10.0)

    async def go() -> None:
        last_ok = 0.0
        while clock.t < 60:
            ticket = Ticket(int(clock.t * 1000), EST)
            await limiter.acquire(ticket)
            clock.t += 0.1
            ok = clock.t - last_ok >= 8
            last_ok = clock.t if ok else last_ok
            await limiter.release(
                ticket, ClassifierUsage(), Outcome.success() if ok else _storm(429)
            )

    asyncio.run(go())  # a minute of storm, never a RunStopped


def test_a_pause_past_the_patience_stops_at_once() -> None:
    """A Retry-After that ends past the patience: no request could be sent in time."""
    clock = SimClock()
    limiter = RunLimiter(4, clock=clock, patience=30.0)

    async def go() -> float:
        await limiter.acquire(Ticket(0, EST))
        await limiter.release(Ticket(0, EST), ClassifierUsage(), Outcome.rate_limited(3600))
        with pytest.raises(RunStopped) as stop:
            await limiter.acquire(Ticket(1, EST))
        assert "no success for 30 s of HTTP 429" in stop.value.message
        # a limiter built by a script speaks a script's words (issue 43 item 7)
        assert "resume=True" in stop.value.message and stop.value.kind == "systematic"
        return clock.t

    assert asyncio.run(go()) == 0.0  # it did not sleep the hour first


@pytest.mark.parametrize(
    "outcome",
    [
        pytest.param(Outcome.systematic("x", "HTTP 401"), id="rejected-key"),
        pytest.param(Outcome.systematic("x", "timeout"), id="timeout"),
        pytest.param(Outcome.systematic("x", "HTTP 404"), id="wrong-path"),
        pytest.param(Outcome.failed("x"), id="failed"),
        pytest.param(Outcome.rate_limited(1.0), id="429"),
        pytest.param(Outcome(OutcomeKind.RATE_LIMITED, 1.0, signature="HTTP 503"), id="503"),
    ],
)
def test_failures_never_open_slow_starts_window(outcome: Outcome) -> None:
    window = Window(64)
    for i in range(20):
        window.admit(0.0, i)
        window.settle(0.0, i, outcome)
        assert window.allowed <= 2


@pytest.mark.parametrize("patience", [0, -1, float("inf"), float("nan"), True, "60"])
def test_patience_takes_seconds_above_zero(patience: object) -> None:
    with pytest.raises(ConfigError, match="patience takes a number of seconds above 0"):
        BatchOptions(patience=patience)  # type: ignore[arg-type]


# --- end to end: toolnexus batch against serve's scripted storms ---------------------------

QUESTIONS = "questions:\n  refund:\n    type: noul\n    instructions: Is a refund asked?\n"


def _files(tmp_path: Path, n: int) -> tuple[list[str], Path]:
    qfile, data = tmp_path / "q.yaml", tmp_path / "in.jsonl"
    qfile.write_text(QUESTIONS, encoding="utf-8")
    data.write_text(
        "".join(json.dumps({"id": f"t{i}", "text": f"ticket {i}"}) + "\n" for i in range(n)),
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    args = ["batch", str(qfile), str(data), "--id-field", "id", "--state-field", "text",
            "-o", str(out)]  # fmt: skip
    return args, out


def _records(out: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.read_text().splitlines()]


def _requests(server: ThreadedServer) -> int:
    return sum(server.server.traffic.statuses.values())


@pytest.mark.parametrize("kind", ["", ":503"])
def test_a_blackout_shorter_than_the_patience_loses_no_state(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], kind: str
) -> None:
    args, out = _files(tmp_path, 30)
    options = ServeOptions(synthetic=True, blackout=f"0+0.6{kind}", retry_after_ms=100)
    # The server's clock stands at 0 (inside the blackout) for its first readings, start-up's
    # and the first requests', whenever the CLI gets to send them: the run meets the blackout
    # by construction, not by starting within 0.6 s of the server on a busy machine.
    with ThreadedServer(options, clock=HeldClock(6)) as server:
        code, _, err = run_main(capfd, *args, "--base-url", f"{server.url}/v1", "--patience", "30")
        stormed = server.server.traffic.statuses.get(kind[1:] or "429", 0)
    assert code == 0, err
    records = _records(out)
    assert sorted(r["id"] for r in records) == sorted(f"t{i}" for i in range(30))
    assert not [r for r in records if "error" in r]
    assert stormed > 0, "the run never met the blackout: the test proves nothing"


def test_a_blackout_longer_than_the_patience_stops_with_exit_4_and_resume_finishes(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    args, out = _files(tmp_path, 30)
    options = ServeOptions(synthetic=True, blackout="0+600", retry_after_ms=100)
    with ThreadedServer(options) as server:
        code, _, err = run_main(capfd, *args, "--base-url", f"{server.url}/v1", "--patience", "0.5")
    assert code == EXIT_STOPPED, err
    assert "no success for 0.5 s of HTTP 429" in err and "--resume" in err
    assert not [r for r in _records(out) if "error" in r]  # not sent: no error records
    with ThreadedServer(ServeOptions(synthetic=True)) as calm:
        code, _, err = run_main(capfd, *args, "--base-url", f"{calm.url}/v1", "--resume")
    assert code == 0, err
    assert sorted(r["id"] for r in _records(out)) == sorted(f"t{i}" for i in range(30))


@pytest.mark.parametrize(
    ("serve", "flags", "names"),
    [
        pytest.param({}, ["--wrong-path"], "HTTP 404", id="wrong-path"),
        pytest.param(
            {"blackout": "0+600:stall", "stall_seconds": 30.0},
            ["--timeout", "0.2", "--retries", "0"],
            "timeout",
            id="hung-server",
        ),
    ],
)
def test_a_wrong_path_or_a_hung_server_stops_within_a_few_requests(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    serve: dict[str, object],
    flags: list[str],
    names: str,
) -> None:
    """Issue 32: "A wrong base path (404 on the endpoint itself) sends 2,000 requests and
    writes 2,000 error records"; "a hung server is never failed fast"."""
    args, out = _files(tmp_path, 200)
    with ThreadedServer(ServeOptions(synthetic=True, **serve)) as server:  # type: ignore[arg-type]
        base = f"{server.url}/v1" if flags[0] != "--wrong-path" else f"{server.url}/v2"
        code, _, err = run_main(
            capfd, *args, "--base-url", base, *flags[flags[0] == "--wrong-path" :]
        )
        sent = _requests(server)
    assert code == EXIT_STOPPED, err
    assert names in err
    assert sent <= 4, sent  # 3 in a row, plus slow start's second in flight
    assert len(_records(out)) <= 4
