"""Client CPU per state of a packed run (issue 32 item 5), as a library user and as a CLI user.

3,200 states at ``pack=32`` (100 requests), concurrency 16, against ``tests/loopback.py`` in
its own process (its CPU is not counted):

- through the library: ``evaluate_batch`` in-process, ``time.process_time`` of THIS process
  around the second of two runs (the first warms imports and the server);
- through the CLI: ``toolnexus batch --pack 32`` as a child process, its user + system CPU
  (``resource.getrusage(RUSAGE_CHILDREN)``), start-up included;
- not yet: ``jev-ultralightspeed`` in-process beside it (the issue's bar: toolnexus at most
  1.0x its CPU per state). It is not installed here and not a dependency of this project; the
  bench says so rather than print a figure it did not measure.

Measured in alternating runs on a busy 2-core machine, before and after estimating each
request once (``packplan.Planned``): 217-246 -> 123-155 us per state through the library,
511-529 -> 423-442 us for the CLI process. The figures depend on the machine: the bench prints
them and asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import QUESTIONS, states
from toolnexus import BatchOptions, create_classifier

REPO = Path(__file__).resolve().parents[1]
STATES = 3200
PACK = 32


async def library(base_url: str, values: list[dict[str, object]]) -> None:
    async with create_classifier(base_url=base_url, api_key_env="BENCH_NO_KEY") as judge:
        options = BatchOptions(concurrency=16, pack=PACK)
        await judge.evaluate_batch(values, QUESTIONS, options=options)


def cli_cpu(base_url: str, values: list[dict[str, object]]) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        qfile, src = Path(tmp) / "q.yaml", Path(tmp) / "in.jsonl"
        qfile.write_text(json.dumps({"questions": QUESTIONS}), encoding="utf-8")
        src.write_text(
            "".join(json.dumps({"id": f"t{i}", "state": v}) + "\n" for i, v in enumerate(values)),
            encoding="utf-8",
        )
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        cmd = [sys.executable, "-m", "toolnexus", "batch", str(qfile), str(src), "--id-field",
               "id", "--state-field", "state", "--pack", str(PACK), "-o",
               str(Path(tmp) / "out.jsonl"), "--base-url", base_url]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    server = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "loopback.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        values = states(STATES)
        asyncio.run(library(base_url, values))  # warm imports, connections and the server
        cpu0 = time.process_time()
        asyncio.run(library(base_url, values))
        per_state = (time.process_time() - cpu0) / STATES * 1e6
        print(f"toolnexus evaluate_batch, pack {PACK}: {per_state:.0f} us CPU per state")
        cli = cli_cpu(base_url, values) / STATES * 1e6
        print(f"toolnexus batch --pack {PACK} (the CLI process, start-up included): {cli:.0f} us")
        found = importlib.util.find_spec("jev_ultralightspeed") is not None
        print(f"jev-ultralightspeed: {'installed' if found else 'not installed'}, not measured")
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(10)


if __name__ == "__main__":
    main()
