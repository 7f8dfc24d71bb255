"""The synchronous facade's cost: per-request client CPU of ``toolnexus.sync`` beside the async
API, at concurrency 16, side by side in one run against ``toolnexus serve --synthetic`` on
127.0.0.1 (its own process, so its CPU is not counted).

Two shapes, each measured both ways: a batch (``evaluate_batch(states, q, 16)``: one hand-over
to the background loop for the whole batch) and 16 concurrent callers of ``evaluate`` (16 tasks
for the async API, 16 threads for the sync one: a hand-over per request, and the calling threads
contend for the GIL). CPU is ``time.process_time`` of this process, all threads included.
Target (issue 18): sync <= 1.2x async per request. It asserts nothing: the figures depend on the
machine.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from _common import QUESTIONS, states
from toolnexus import create_classifier, sync

REQUESTS = 4000
#: Each side runs this many times, alternating, and its lowest CPU counts: on a shared machine
#: a neighbour's burst lands on one run, not on all of them.
ROUNDS = 3
CONCURRENCY = 16


def measure(run: Callable[[], None]) -> tuple[float, float]:
    """Run once: (wall seconds, client CPU milliseconds per request)."""
    wall0, cpu0 = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall0, (time.process_time() - cpu0) / REQUESTS * 1000


def compare(shape: str, run_async: Callable[[], None], run_sync: Callable[[], None]) -> None:
    runs: dict[str, list[tuple[float, float]]] = {"async": [], "sync": []}
    for _ in range(ROUNDS):
        runs["async"].append(measure(run_async))
        runs["sync"].append(measure(run_sync))
    best = {side: min(r, key=lambda m: m[1]) for side, r in runs.items()}
    for side, (wall, cpu) in best.items():
        print(f"{side + ', ' + shape:22} wall {wall:6.2f} s  client cpu {cpu:5.3f} ms/request")
    ratio = best["sync"][1] / best["async"][1]
    print(f"  sync / async cpu per request, {shape}: {ratio:.2f}x (target <= 1.2x)", flush=True)


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


def sync_callers(base_url: str) -> None:
    pending = iter(states(REQUESTS))
    lock = threading.Lock()  # a shared iterator is not thread-safe; the tasks above need none

    def caller() -> None:
        while True:
            with lock:
                state = next(pending, None)
            if state is None:
                return
            judge.evaluate(state, QUESTIONS)

    with sync.create_classifier(base_url=base_url) as judge:
        threads = [threading.Thread(target=caller) for _ in range(CONCURRENCY)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


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
        rows = (
            ("batch", async_batch, sync_batch),
            (f"{CONCURRENCY} callers", async_callers, sync_callers),
        )
        for shape, run_async, run_sync in rows:
            compare(shape, lambda a=run_async: a(base_url), lambda s=run_sync: s(base_url))
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
