"""The project's test server: ``toolnexus serve`` (``toolnexus.serve.Server``) in a background
thread, with the controls the integration tests and benches use. One fake, not two.

    with Loopback(latency=0.0) as server:
        classifier = create_classifier(base_url=server.base_url, retry_base_ms=1)
        ...
        server.push(Fault.http(429, retry_after="0"), Fault.reset())   # the next two requests
        server.count(body)                                             # requests seen for a body

``POST {base_url}/systemone`` is served by ``toolnexus.serve`` in replay mode over the live
captures (``tests/fixtures/recordings-live``), falling back to its synthetic model
(:func:`synthesize`) when a request matches no capture: deterministic, valid answers derived
from the questions and the state, so any question set and any number of states can be served
(batches, benches) and a test can compute what it expects. Requests are validated as the API
does (``toolnexus.serve.wire``), except that a question type System One does not define gets
the synthetic placeholder answer, for toolnexus's raw questions.

Faults (:class:`Fault`, from ``toolnexus.serve``): an HTTP status with optional ``Retry-After``
/ ``retry-after-ms`` and body, a reset connection (RST), a stall past the client's timeout, a
truncated body, a non-JSON body, and a 401 whose body echoes the ``Authorization`` header (as
gateways do). ``push`` queues faults for the next requests in arrival order;
``fail_first_attempts`` faults the FIRST arrival of every body whose digest falls in a fraction,
so a retry of that body succeeds. ``hold`` and ``hold_body`` stall requests until ``release``: a
run that cannot finish (or a state that cannot answer) before the test says so, whatever the
machine's speed. Request ids are ``req_loopback_`` + 8 hex digits of the
sha256 of the answer's body, so a test can predict them.

Run as a script (``python tests/loopback.py --latency-ms 20``) it prints its base URL on the first
line of stdout and serves until stdin closes: that is how ``bench/batch.py`` keeps the server's
CPU out of the client's measurement.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import threading
from collections import Counter, deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from paths import RECORDINGS_LIVE
from toolnexus.serve import Fault, ReplayIndex, ServeOptions, Server, synthesize
from toolnexus.styles.recordings import Recording

__all__ = ["RECORDINGS_LIVE", "Fault", "Loopback", "body_digest", "recordings", "synthesize"]

#: How long a held request stalls if the test never releases it: only a hang guard, far past
#: any test's own timeout (the server's stop ends every stall anyway).
HOLD_SECONDS = 600.0


def body_digest(body: bytes) -> str:
    """The key ``count`` uses: sha256 of the exact request bytes."""
    return hashlib.sha256(body).hexdigest()


def recordings(folder: Path = RECORDINGS_LIVE) -> list[dict[str, Any]]:
    """The live captures, each ``{"name", "request", "response"}`` (parsed JSON), sorted by name."""
    out = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out.append(
            {
                "name": path.stem,
                "request": json.loads(data["request_raw"]),
                "response": json.loads(data["response_raw"]),
            }
        )
    return out


def _index(folder: Path) -> ReplayIndex:
    entries = []
    for r in recordings(folder) if folder.is_dir() else []:
        req, resp = r["request"], r["response"]
        entries.append(
            Recording(
                path=None,
                model=req["model"],
                served_model=resp["model"],
                endpoint="",
                state=req["state"],
                questions=req["questions"],
                response=resp,
                recorded_at="",
            )
        )
    return ReplayIndex.of(entries, str(folder))


def _request_id(raw: bytes) -> str:
    return "req_loopback_" + body_digest(raw)[:8]


class Loopback:
    """``toolnexus serve`` on 127.0.0.1:<ephemeral>, in a background thread. Use as a context
    manager (or ``start()`` / ``stop()``). Counters are read after the client has finished."""

    def __init__(self, latency: float = 0.0, *, recordings_folder: Path = RECORDINGS_LIVE) -> None:
        self.latency = latency
        self.port = 0
        #: requests seen, per sha256 of the exact body bytes
        self.requests: Counter[str] = Counter()
        self.total = 0
        self.faults_injected = 0
        #: headers of the most recent requests (lower-case names), newest last
        self.headers: deque[dict[str, str]] = deque(maxlen=64)
        self._queue: deque[Fault] = deque()
        self._every: tuple[int, tuple[Fault, ...]] | None = None
        self._hold_after: int | None = None
        self._held_bodies: set[str] = set()
        self._options = ServeOptions(
            replay=_index(recordings_folder),
            replay_fallback_synthetic=True,
            latency_ms=latency * 1000,
        )
        self._server: Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failed: BaseException | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def push(self, *faults: Fault) -> None:
        """Fault the next ``len(faults)`` requests, in arrival order."""
        self._queue.extend(faults)

    def fail_first_attempts(self, every: int, faults: Iterable[Fault]) -> None:
        """Fault the first arrival of each body whose digest is 0 mod ``every`` (about 1 in
        ``every`` bodies), cycling through ``faults``; later arrivals of that body succeed."""
        self._every = (every, tuple(faults))

    def hold(self, after: int) -> None:
        """Answer the API requests up to the ``after``-th arrival (retries count), then stall
        every later one until :meth:`release`: a run against this server cannot finish, so a
        test interrupts it mid-way by construction, not by outrunning it (issue 29 item 2)."""
        self._hold_after = after

    def hold_body(self, body: bytes) -> None:
        """Stall every request carrying exactly these bytes until :meth:`release`."""
        self._held_bodies.add(body_digest(body))

    def release(self) -> None:
        """Stop holding and end every stall waiting now (held or pushed); a stall pushed later
        waits as usual. Thread-safe."""
        self._hold_after = None
        self._held_bodies.clear()
        server, loop = self._server, self._loop
        if server is None or loop is None:
            return

        def end_stalls() -> None:
            # A stall waits on the ``stopping`` event it read when it began: set that one, and
            # give later stalls a fresh event (``Server.stop`` sets whichever is current).
            waited, server.stopping = server.stopping, asyncio.Event()
            waited.set()

        loop.call_soon_threadsafe(end_stalls)

    def count(self, body: bytes) -> int:
        """How many requests carried exactly these bytes."""
        return self.requests[body_digest(body)]

    # --- the server's hooks ---------------------------------------------------------------

    def _seen(self, raw: bytes, headers: Mapping[str, str]) -> None:
        self.requests[body_digest(raw)] += 1
        self.total += 1
        self.headers.append(dict(headers))

    def _pick_fault(self, raw: bytes, headers: Mapping[str, str]) -> Fault | None:
        fault: Fault | None = None
        digest = body_digest(raw)
        hold = self._hold_after
        if self._queue:
            fault = self._queue.popleft()
        elif (hold is not None and self.total > hold) or digest in self._held_bodies:
            fault = Fault.stall(HOLD_SECONDS)
        elif self._every is not None and self.requests[digest] == 1:
            every, faults = self._every
            n = int(digest[:12], 16)
            if n % every == 0:
                fault = faults[(n // every) % len(faults)]
        if fault is not None:
            self.faults_injected += 1
        return fault

    # --- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> Loopback:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="loopback", daemon=True)
        self._thread.start()
        if not self._ready.wait(10) or self._failed is not None:
            raise RuntimeError(f"loopback server did not start: {self._failed!r}")

    def stop(self) -> None:
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as e:  # reported by start(), not lost in the thread
            self._failed = e
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        server = Server(self._options)
        server.on_request = self._seen
        server.fault_hook = self._pick_fault
        server.request_ids = _request_id
        await server.start()
        self._server = server
        self.port = server.port
        self._ready.set()
        try:
            await self._stopping.wait()
        finally:
            await server.stop()


def main(argv: list[str]) -> None:
    """``python tests/loopback.py [--latency-ms N]``: print the base URL, serve until stdin
    closes; for each line read from stdin, print the number of requests seen so far (how
    ``bench/batch_cli.py`` counts what a warm-cache run sent)."""
    latency_ms = float(argv[argv.index("--latency-ms") + 1]) if "--latency-ms" in argv else 0.0
    with Loopback(latency=latency_ms / 1000) as server:
        print(server.base_url, flush=True)
        for _ in sys.stdin:
            print(server.total, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
