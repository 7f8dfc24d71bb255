"""The synchronous facade's cost: per-request client CPU of ``toolnexus.sync`` beside the async
API, at concurrency 16, side by side in one run against ``toolnexus serve --synthetic`` on
127.0.0.1 (its own process, so its CPU is not counted).

Two shapes, each measured both ways: a batch (``evaluate_batch(states, q, 16)``: one hand-over
to the background loop for the whole batch) and 16 concurrent callers of ``evaluate`` (16 tasks
for the async API, 16 threads for the sync one: a hand-over per request, and the calling threads
contend for the GIL). CPU is ``time.process_time`` of this process, all threads included.
Target (issue 18): sync <= 1.2x async per request. It asserts nothing: the figures depend on the
machine.

The 16-callers shape also runs a floor: the same 16 threads handing the same async
``evaluate`` to a plain background loop with ``asyncio.run_coroutine_threadsafe`` and waiting
on its future, the textbook thread-to-loop hand-over with no toolnexus code in it. What 16 OS
threads cost beyond 16 tasks (a wake-up and a GIL hand-off per request, with their context
switches, which ``rusage`` counts) is in the floor too, so ``sync / floor`` is the facade's own
share and ``sync / async`` the threads' and the facade's together.
"""

from __future__ import annotations

import asyncio
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from _common import QUESTIONS, states
from toolnexus import create_classifier, sync

REQUESTS = 4000
#: Each side runs this many times, alternating, and its lowest CPU counts: on a shared machine
#: a neighbour's burst lands on one run, not on all of them.
ROUNDS = 3
CONCURRENCY = 16


def measure(run: Callable[[], None]) -> tuple[float, float, float]:
    """Run once: (wall seconds, client CPU milliseconds per request, voluntary context
    switches per request)."""
    switches0 = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw
    wall0, cpu0 = time.perf_counter(), time.process_time()
    run()
    wall, cpu = time.perf_counter() - wall0, (time.process_time() - cpu0) / REQUESTS * 1000
    switches = resource.getrusage(resource.RUSAGE_SELF).ru_nvcsw - switches0
    return wall, cpu, switches / REQUESTS


def compare(shape: str, sides: dict[str, Callable[[], None]]) -> None:
    runs: dict[str, list[tuple[float, float, float]]] = {side: [] for side in sides}
    for _ in range(ROUNDS):
        for side, run in sides.items():
            runs[side].append(measure(run))
    best = {side: min(r, key=lambda m: m[1]) for side, r in runs.items()}
    for side, (wall, cpu, switches) in best.items():
        print(
            f"{side + ', ' + shape:22} wall {wall:6.2f} s  client cpu {cpu:5.3f} ms/request"
            f"  {switches:4.1f} context switches/request"
        )
    ratio = best["sync"][1] / best["async"][1]
    print(f"  sync / async cpu per request, {shape}: {ratio:.2f}x (target <= 1.2x)", flush=True)
    if "floor" in best:
        floor = best["sync"][1] / best["floor"][1]
        print(f"  sync / floor cpu per request, {shape}: {floor:.2f}x", flush=True)


def async_batch(base_url: str) -> None:
    async def go() -> None:
        async with create_classifier(base_url=base_url) as judge:
            assert (
                len(await judge.evaluate_batch(states(REQUESTS), QUESTIONS, CONCURRENCY))
                == REQUESTS
            )

    asyncio.run(go())


def sync_batch(base_url: str) -> None:
    with sync.create_classifier(base_url=base_url) as judge:
        assert len(judge.evaluate_batch(states(REQUESTS), QUESTIONS, CONCURRENCY)) == REQUESTS


def async_callers(base_url: str) -> None:
    async def go() -> None:
        pending = iter(states(REQUESTS))
        async with create_classifier(base_url=base_url) as judge:

            async def caller() -> None:
                for state in pending:
                    await judge.evaluate(state, QUESTIONS)

            await asyncio.gather(*(caller() for _ in range(CONCURRENCY)))

    asyncio.run(go())


def _in_threads(evaluate: Callable[[Any], object]) -> None:
    """``CONCURRENCY`` threads, each calling ``evaluate(state)`` for the next state until none
    is left (a shared iterator is not thread-safe: a lock hands them out; tasks need none)."""
    pending = iter(states(REQUESTS))
    lock = threading.Lock()

    def caller() -> None:
        while True:
            with lock:
                state = next(pending, None)
            if state is None:
                return
            evaluate(state)

    threads = [threading.Thread(target=caller) for _ in range(CONCURRENCY)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def sync_callers(base_url: str) -> None:
    with sync.create_classifier(base_url=base_url) as judge:
        _in_threads(lambda state: judge.evaluate(state, QUESTIONS))


def floor_callers(base_url: str) -> None:
    """16 threads, each handing the async ``evaluate`` to a bare background loop and blocking
    on the future: the hand-over every sync-over-async design pays, with nothing of ours."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    judge = create_classifier(base_url=base_url)
    _in_threads(
        lambda state: asyncio.run_coroutine_threadsafe(
            judge.evaluate(state, QUESTIONS), loop
        ).result()
    )
    asyncio.run_coroutine_threadsafe(judge.aclose(), loop).result()
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


def main() -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "toolnexus", "serve", "--synthetic", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip() + "/v1"
        print(
            f"{REQUESTS} requests, concurrency {CONCURRENCY}, best of {ROUNDS} alternating runs, "
            "toolnexus serve --synthetic in its own process",
            flush=True,
        )
        sync_batch(base_url)  # warm the server, the imports and the background loop
        compare(
            "batch", {"async": lambda: async_batch(base_url), "sync": lambda: sync_batch(base_url)}
        )
        compare(
            f"{CONCURRENCY} callers",
            {
                "async": lambda: async_callers(base_url),
                "sync": lambda: sync_callers(base_url),
                "floor": lambda: floor_callers(base_url),
            },
        )
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
