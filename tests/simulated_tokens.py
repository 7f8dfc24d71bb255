"""The simulated token limit and the batch loop that rides it, on their own clock (issue 32
item 1): token buckets of one second, as ``serve --token-limit`` keeps them, and the loop a
batch runs, with a central estimate off by up to 30 % either way. Counts, no time passes.
Shared by ``test_scheduler_token_pace`` and ``test_scheduler_named_figure``."""

from __future__ import annotations

import heapq
import random
from collections import deque
from dataclasses import dataclass, field

from toolnexus.scheduler import Outcome, Window


@dataclass
class Bucket:
    rate: float
    level: float = field(init=False)
    last: float = 0.0

    def __post_init__(self) -> None:
        self.level = self.rate

    def wait(self, now: float, cost: float) -> float:
        self.level = min(self.rate, self.level + (now - self.last) * self.rate)
        self.last = now
        need = min(cost, self.rate)
        return 0.0 if self.level >= need else (need - self.level) / self.rate


@dataclass
class Server:
    """A token limit (and optionally a request limit) per second, burst one second."""

    tokens: Bucket
    requests: Bucket | None = None

    def answer(self, now: float, cost: int) -> tuple[float, str, float] | None:
        """None for a 200, else (retry-after-ms in seconds, the limit its body names, and that
        limit's figure a second)."""
        waits = [(self.tokens.wait(now, cost), "tokens", self.tokens.rate)]
        if self.requests is not None:
            waits.append((self.requests.wait(now, 1), "requests", self.requests.rate))
        wait, limit, figure = max(waits)
        if wait > 0:
            return round(wait + 0.001, 3), limit, figure
        self.tokens.level -= cost
        if self.requests is not None:
            self.requests.level -= 1
        return None


@dataclass
class Run:
    ok: list[tuple[float, int]] = field(default_factory=list)
    throttled: list[tuple[float, str]] = field(default_factory=list)
    finish: float = 0.0

    def per_success(self, start: float, end: float = float("inf")) -> float:
        ok = sum(start <= t < end for t, _ in self.ok)
        return sum(start <= t < end for t, _ in self.throttled) / max(1, ok)

    def tokens_per_second(self, start: float) -> float:
        return sum(c for t, c in self.ok if t >= start) / (self.finish - start)


def simulate(
    server: Server,
    costs: list[int],
    *,
    concurrency: int,
    latency: float,
    named: bool = True,
    figures: bool = False,
    halve_at: float | None = None,
) -> Run:
    """A batch loop over ``costs`` (billed tokens per request) driving a Window; a 429 puts its
    request back at the head of the queue. ``named``: whether the 429's body names its limit;
    ``figures``: whether it also gives the limit's figure (the API's and ``serve``'s do)."""
    rng = random.Random(11)
    guesses = [round(c * rng.uniform(0.7, 1.3)) for c in costs]  # the central estimate
    window = Window(concurrency)
    queue = deque(range(len(costs)))
    events: list[tuple[float, int, str, int, int]] = []
    seq = 0
    woken: set[float] = set()
    run = Run()
    halved = False

    def push(at: float, kind: str, ticket: int = 0, index: int = 0) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (at, seq, kind, ticket, index))

    pending: dict[int, tuple[float, str, float] | None] = {}

    def pump(now: float) -> None:
        nonlocal halved
        while queue:
            index = queue[0]
            counted = window.token_pace is not None
            at = window.ready_at(now, guesses[index] if counted else 0)
            if at is None:
                return
            if at > now:
                if at not in woken:
                    woken.add(at)
                    push(at, "wake")
                return
            if halve_at is not None and now >= halve_at and not halved:
                halved = True
                server.tokens.rate /= 2
                server.tokens.level = min(server.tokens.level, server.tokens.rate)
            queue.popleft()
            ticket = seq
            window.admit(now, ticket, guesses[index] if counted else 0)
            took = latency * rng.uniform(0.9, 1.1) + 0.001
            pending[ticket] = server.answer(now + took / 2, costs[index])
            push(now + took, "reply", ticket, index)

    pump(0.0)
    now = 0.0
    while events:
        now, _, kind, ticket, index = heapq.heappop(events)
        if kind == "reply":
            refused = pending.pop(ticket)
            if refused is None:
                window.settle(now, ticket, Outcome.success(), costs[index])
                run.ok.append((now, costs[index]))
            else:
                wait, limit, figure = refused
                given = figure if named and figures else None
                refusal = Outcome.rate_limited(wait, limit if named else "", given)
                window.settle(now, ticket, refusal)
                run.throttled.append((now, limit))
                queue.appendleft(index)
        pump(now)
    assert len(run.ok) == len(costs)  # every request answered once, none lost
    run.finish = now
    return run


def mixed_costs(n: int, seed: int = 3) -> list[int]:
    """Requests of very different sizes (packs of 1 to 20 short states: 250 to 2,400 tokens)."""
    rng = random.Random(seed)
    return [250 + 120 * rng.randrange(20) for _ in range(n)]
