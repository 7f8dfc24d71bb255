"""The simulated account limit and the batch loop that rides it, on their own clock: one
discrete-event simulation for every scheduler test that needs a limit to bind (issue 19 item 2,
issue 32 item 1). Deterministic (a seeded RNG), and no real time passes.

The server is written here, independently of the limiter's own token bucket: N/min with a burst
of one second of the rate (``serve --rate-limit``), a 429 carrying the wait until its next token
either in milliseconds (``retry-after-ms``) or rounded up to whole seconds (``Retry-After``
alone). The loop is the one a batch runs: a queue of states, admission by the limiter's
:class:`~toolnexus.scheduler.Window`, a 429 puts its state back at the head of the queue."""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from toolnexus.scheduler import Outcome, Window


@dataclass
class Server:
    """N requests per minute, burst one second; counts what it answered. ``names``: the figure a
    429's body gives, as a multiple of this run's limit (None: the body gives none, the old
    ``serve``; 1.0: the API's "Rate limit exceeded: 1200 requests per minute."; 2.0: the account's
    figure while another process on the same key takes half of it)."""

    per_minute: int
    whole_seconds: bool
    names: float | None = None
    level: float = field(init=False)
    last: float = 0.0
    ok: int = 0
    throttled: int = 0

    def __post_init__(self) -> None:
        self.level = self.per_minute / 60

    def answer(self, now: float) -> float | None:
        """None for a 200, else the Retry-After (seconds) of a 429."""
        rate = self.per_minute / 60
        self.level = min(rate, self.level + (now - self.last) * rate)
        self.last = now
        if self.level >= 1:
            self.level -= 1
            self.ok += 1
            return None
        self.throttled += 1
        wait = (1 - self.level) / rate
        return float(math.ceil(wait)) if self.whole_seconds else round(wait, 3)

    def refusal(self, retry_after: float) -> Outcome:
        """The outcome a client reads from this server's 429."""
        if self.names is None:
            return Outcome.rate_limited(retry_after)
        return Outcome.rate_limited(retry_after, "requests", self.names * self.per_minute / 60)


@dataclass(order=True)
class _Event:
    at: float
    seq: int
    kind: str = field(compare=False)
    data: tuple[int, int, Outcome | None] = field(compare=False, default=(0, 0, None))


@dataclass
class Run:
    """What one simulated batch saw: the states in the order they were answered, when each
    success and each 429 came back, and when the last reply did."""

    answered: list[int] = field(default_factory=list)
    ok: list[float] = field(default_factory=list)
    throttled: list[float] = field(default_factory=list)
    finish: float = 0.0

    def per_success(self, start: float, end: float = float("inf")) -> float:
        """429s per success among the replies that came back in ``[start, end)``."""
        ok = sum(start <= t < end for t in self.ok)
        return sum(start <= t < end for t in self.throttled) / max(1, ok)


def simulate(
    server: Server,
    *,
    concurrency: int,
    states: int,
    latency: Callable[[random.Random], float],
    seed: int,
    halve_at: float | None = None,
) -> Run:
    """Every state through a Window of ``concurrency`` against ``server``. ``latency`` draws a
    request's round trip from the run's RNG (the server answers at its middle); ``halve_at``
    halves the server's limit at the first admission from that time on. Every admission checks
    that the window never lets more than its allowed requests fly."""
    rng = random.Random(seed)
    window = Window(concurrency)
    per_minute = server.per_minute
    queue = deque(range(states))
    run = Run()
    events: list[_Event] = []
    seq = 0
    woken: set[float] = set()

    def push(at: float, kind: str, data: tuple[int, int, Outcome | None] = (0, 0, None)) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, _Event(at, seq, kind, data))

    def pump(now: float) -> None:
        while queue:
            at = window.ready_at(now)
            if at is None:
                return
            if at > now:
                if at not in woken:
                    woken.add(at)
                    push(at, "wake")
                return
            if halve_at is not None and now >= halve_at and server.per_minute == per_minute:
                server.per_minute = per_minute // 2
            state = queue.popleft()
            ticket = seq
            window.admit(now, ticket)
            assert window.in_flight <= window.allowed <= concurrency
            took = latency(rng)
            wait = server.answer(now + took / 2)
            refusal = None if wait is None else server.refusal(wait)
            push(now + took, "reply", (ticket, state, refusal))

    pump(0.0)
    now = 0.0
    for _ in range(100 * states):  # bounded: a stuck loop fails instead of hanging
        if not events:
            break
        event = heapq.heappop(events)
        now = event.at
        if event.kind == "reply":
            ticket, state, refusal = event.data
            if refusal is None:
                window.settle(now, ticket, Outcome.success())
                run.answered.append(state)
                run.ok.append(now)
            else:
                window.settle(now, ticket, refusal)
                run.throttled.append(now)
                queue.appendleft(state)
        pump(now)
    assert not events, "the simulation did not finish within its bound"
    run.finish = now
    return run
