"""Client CPU per state of a packed run (issue 32), beside ``jev-ultralightspeed`` in-process.

3,200 short tickets, one yes/no question each, at pack 32 (100 requests), 16 in flight, against
``tests/loopback.py`` in its own process (its CPU is not counted), the same server and the same
items for every client:

- toolnexus through the library: ``evaluate_batch`` in-process;
- ``jev-ultralightspeed`` (Apache-2.0, the ``bench`` extra) in-process: ``Client.classify``
  with ``pack=32``, ``workers=16``, its own rate ceiling lifted (``requests_per_minute``) and its
  answer cache off, so every round sends its 100 requests; its transport is what ``"auto"``
  picks here (the stdlib's threads unless httpx and h2 are both installed);
- toolnexus through the CLI: ``toolnexus batch --pack 32`` as a child process, its user + system
  CPU (``resource.getrusage(RUSAGE_CHILDREN)``), start-up included.

In-process CPU is ``time.process_time`` (every thread of this process) around one run; a warm-up
run of each first, then ``ROUNDS`` alternating rounds, the median per client. Target (issue 32):
toolnexus at most 1.0x ultralightspeed's CPU per state. The figures depend on the machine: the
bench prints them and the ratio; it fails only when the ratio misses the target.

Beside them, in the same rounds, the **floor**: the per-state CPU of what the seeds require of
any packed client in this library's model, with no I/O, no scheduler and no plan: the canonical
bytes of each packed request (seed 001, "own the bytes"), the bounded JSON decode of the replies
the same server sends (``jsonlimits.loads``), and one typed ``Decision`` per state, with its
share of the usage, checked by ``validate_decision`` (seeds 000 and 004). What toolnexus spends
above the floor is its transport (aiohttp), scheduler, plan and batch loop; when the floor alone
is a large part of ultralightspeed's whole cost (which returns a plain mutable record per item
and checks nothing), 1.0x is out of reach without dropping a seed's requirement.

And the **transport floor**, in the same rounds: the same packed bodies POSTed through one bare
aiohttp session, 16 at a time, each reply read whole, nothing decoded. The seeds' floor plus
this one is what any packed client of this library's model pays on aiohttp before a plan, a
scheduler, a retry loop or a batch loop; when that sum alone is near ultralightspeed's whole
cost (stdlib threads, no aiohttp), 1.0x needs another HTTP client, not a cut in this library.
"""

from __future__ import annotations

import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolnexus import BatchOptions, create_classifier

REPO = Path(__file__).resolve().parents[1]
STATES = 3200
PACK = 32
CONCURRENCY = 16
ROUNDS = 5
INSTRUCTIONS = "Is a duplicate-charge refund requested?"
QUESTIONS = {"refund": {"type": "noul", "instructions": INSTRUCTIONS}}


def items(n: int) -> list[str]:
    return [f"Ticket {i}: the terminal charged invoice INV-{i} twice." for i in range(n)]


async def toolnexus_run(base_url: str, values: list[str]) -> None:
    async with create_classifier(base_url=base_url, api_key_env="BENCH_NO_KEY") as judge:
        options = BatchOptions(concurrency=CONCURRENCY, pack=PACK)
        got = await judge.evaluate_batch(values, QUESTIONS, options=options)
    assert len(got) == len(values)


def ultralightspeed_run(base_url: str, values: list[str]) -> None:
    import jev_ultralightspeed  # the bench extra: imported only when installed

    client = jev_ultralightspeed.Client(
        key="bench-key", url=f"{base_url}/systemone", pack=PACK, workers=CONCURRENCY,
        requests_per_minute=10**7, cache=False, dedupe=False,
    )  # fmt: skip
    with client:
        got = client.classify(values, INSTRUCTIONS)
    assert len(got) == len(values) and all(a.error is None for a in got)


def toolnexus_sync(base_url: str, values: list[str]) -> None:
    asyncio.run(toolnexus_run(base_url, values))


class Floor:
    """The seeds' irreducible per-state work over ``values`` at ``PACK``, timed part by part
    (see the module docstring). The replies are the synthetic server's own, made once."""

    def __init__(self, values: list[str]) -> None:
        from toolnexus.core.canonical import canonical_json
        from toolnexus.core.jsonlimits import loads
        from toolnexus.core.questions import questions_to_wire
        from toolnexus.evaluate.packing import pack_questions, pack_state, state_weights
        from toolnexus.serve import synthesize

        self.canonical_json, self.loads, self.pack_state = canonical_json, loads, pack_state
        self.qs = create_classifier(api_key_env="BENCH_NO_KEY").prepare(QUESTIONS)
        self.wire = questions_to_wire(pack_questions(self.qs, PACK))
        self.packs = [values[i : i + PACK] for i in range(0, len(values), PACK)]
        self.weights = [state_weights(p, self.qs) for p in self.packs]
        self.replies = [
            json.dumps(synthesize(json.loads(self.body(p)))).encode() for p in self.packs
        ]
        self.states = len(values)

    def body(self, states: list[str]) -> bytes:
        request = {"model": "jev-latest", "questions": self.wire, "state": self.pack_state(states)}
        return self.canonical_json(request)

    def run(self) -> dict[str, float]:
        """CPU seconds of each part over every pack."""
        from toolnexus.core.validation import validate_decision
        from toolnexus.evaluate.packing import unpack_decisions

        t0 = time.process_time()
        for p in self.packs:
            self.body(p)
        t1 = time.process_time()
        decoded = [self.loads(r) for r in self.replies]
        t2 = time.process_time()
        for body, weights in zip(decoded, self.weights, strict=True):
            for d in unpack_decisions(body, self.qs, weights):
                assert not isinstance(d, Exception) and validate_decision(self.qs, d) is None
        t3 = time.process_time()
        return {"request bytes": t1 - t0, "reply decode": t2 - t1, "Decisions": t3 - t2}


def transport_floor(base_url: str, bodies: list[bytes]) -> None:
    """The same packed bodies POSTed through one bare aiohttp session, ``CONCURRENCY`` at a
    time, each reply read whole: the HTTP client alone, with no plan, scheduler, retry loop,
    decoding or Decision (what any client on aiohttp pays per request, this library's too)."""
    import aiohttp

    async def run() -> None:
        todo = list(bodies)
        headers = {"Content-Type": "application/json"}
        async with aiohttp.ClientSession() as session:

            async def worker() -> None:
                while todo:
                    body = todo.pop()
                    async with session.post(
                        f"{base_url}/systemone", data=body, headers=headers
                    ) as resp:
                        await resp.read()
                        assert resp.status == 200, resp.status

            await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))

    asyncio.run(run())


def cpu_of(run: Callable[[str, list[str]], None], base_url: str, values: list[str]) -> float:
    before = time.process_time()
    run(base_url, values)
    return time.process_time() - before


def cli_cpu(base_url: str, values: list[str]) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        qfile, src = Path(tmp) / "q.yaml", Path(tmp) / "in.jsonl"
        qfile.write_text(json.dumps({"questions": QUESTIONS}), encoding="utf-8")
        src.write_text(
            "".join(json.dumps({"id": f"t{i}", "state": v}) + "\n" for i, v in enumerate(values)),
            encoding="utf-8",
        )
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = str(Path(tmp) / "out.jsonl")
        cmd = [sys.executable, "-m", "toolnexus", "batch", str(qfile), str(src), "--id-field",
               "id", "--state-field", "state", "--pack", str(PACK), "--concurrency",
               str(CONCURRENCY), "-o", out, "--base-url", base_url]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def installed() -> str | None:
    try:
        import jev_ultralightspeed
    except ImportError:
        return None
    return str(jev_ultralightspeed.__version__)


def main() -> None:
    version = installed()
    server = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "loopback.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        values = items(STATES)
        clients: dict[str, Callable[[str, list[str]], None]] = {
            "toolnexus evaluate_batch": toolnexus_sync
        }
        if version is not None:
            clients[f"jev-ultralightspeed {version} Client.classify"] = ultralightspeed_run
        for run in clients.values():
            cpu_of(run, base_url, values)  # warm imports, connections and the server
        floor = Floor(values)
        floor.run()
        bodies = [floor.body(p) for p in floor.packs]
        wire: list[float] = []
        transport_floor(base_url, bodies)  # warm, as the clients are
        seconds: dict[str, list[float]] = {name: [] for name in clients}
        parts: dict[str, list[float]] = {}
        for _ in range(ROUNDS):
            for name, run in clients.items():
                seconds[name].append(cpu_of(run, base_url, values))
            for part, cpu in floor.run().items():
                parts.setdefault(part, []).append(cpu)
            before = time.process_time()
            transport_floor(base_url, bodies)
            wire.append(time.process_time() - before)
        per_state = {name: statistics.median(s) / STATES * 1e6 for name, s in seconds.items()}
        for name, us in per_state.items():
            spread = ", ".join(f"{s / STATES * 1e6:.0f}" for s in seconds[name])
            print(f"{name}, pack {PACK}: {us:.0f} us CPU per state (median of {ROUNDS}: {spread})")
        floors = {part: statistics.median(s) / STATES * 1e6 for part, s in parts.items()}
        least = sum(floors.values())
        shown = " + ".join(f"{part} {us:.1f}" for part, us in floors.items())
        print(
            f"floor (the seeds' own work, no I/O, same rounds): {shown} = {least:.1f} us per state"
        )
        http = statistics.median(wire) / STATES * 1e6
        print(
            f"transport floor (the same bodies through bare aiohttp, same rounds): {http:.1f} us "
            f"per state; with the seeds' floor {least + http:.1f} us"
        )
        cli = cli_cpu(base_url, values) / STATES * 1e6
        print(f"toolnexus batch --pack {PACK} (the CLI process, start-up included): {cli:.0f} us")
        if version is None:
            print("jev-ultralightspeed: not installed (pip install '.[bench]'), not measured")
            return
        ours, theirs = per_state.values()
        print(
            f"toolnexus / jev-ultralightspeed CPU per state: {ours / theirs:.2f}x "
            f"(target <= 1.0x); the floor alone is {least / theirs:.2f}x of "
            f"jev-ultralightspeed's whole cost; toolnexus spends {ours - least:.1f} us "
            "per state above it"
        )
        print(
            f"the seeds' floor plus the aiohttp floor is {(least + http) / theirs:.2f}x of "
            f"jev-ultralightspeed's whole cost; toolnexus's own plan, scheduler, retry loop and "
            f"batch loop: {ours - least - http:.1f} us per state"
        )
        if ours > theirs:
            sys.exit(1)
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(10)


if __name__ == "__main__":
    main()
