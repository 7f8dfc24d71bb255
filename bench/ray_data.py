"""(Named ``ray_data.py``, not ``ray.py``: run as a script, a ``bench/ray.py`` would be what
``import ray`` finds.)

Ray Data with 2 workers under ONE global limit vs a single-process ``toolnexus batch --rate``
at the same limit (issue 22: "throughput >= 0.9x of the limit: the global limiter must not be
the bottleneck"), and the Arrow seam's cost beside ``batch`` (evaluate_table, no limit).

The account is ``toolnexus serve --synthetic --rate-limit N/min`` in its own process, which
stamps every request it answers (``CLOCK_MONOTONIC``, shared by every process of the machine).
Throughput is what the ACCOUNT saw: requests per second between the first and the last answer
(each engine's start-up, Ray's actors included, is printed apart, as wall time). It prints the
ratio to the limit for both, the 429s the server sent, and asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from _common import QUESTIONS, states

REPO = Path(__file__).resolve().parents[1]
RATE_PER_MINUTE = 12_000
ROWS = 3_000
CONCURRENCY = 16


def server_main(rate: str) -> None:
    """The account: serve --synthetic with a rate limit, stamping each answered request; print
    the base URL; on a line on stdin print the stamps and /_stats since the last line."""
    from toolnexus.serve import ServeOptions, Server

    async def run() -> None:
        stamps: list[float] = []
        server = Server(ServeOptions(synthetic=True, rate_limit=rate))
        server.on_request = lambda _raw, _headers: stamps.append(time.monotonic())
        async with server:
            print(server.url, flush=True)
            loop = asyncio.get_running_loop()
            while await loop.run_in_executor(None, sys.stdin.readline):
                stats = server.traffic.body(server.in_flight)
                print(json.dumps({"stamps": stamps, "statuses": stats["statuses"]}), flush=True)
                stamps.clear()
                server.traffic.statuses.clear()

    asyncio.run(run())


class Account:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--server", f"{RATE_PER_MINUTE}/min"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.url = self.proc.stdout.readline().strip()

    def take(self) -> tuple[float, dict[str, int]]:
        """Requests per second the account answered since the last take, and the statuses."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        got = json.loads(self.proc.stdout.readline())
        stamps = sorted(got["stamps"])
        rps = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 else 0.0
        return rps, got["statuses"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)


def table_of(n: int) -> Any:
    import pyarrow as pa

    rows = states(n)
    return pa.table({"id": [str(s["ticket"]) for s in rows], "text": [s["message"] for s in rows]})


def single_process(url: str, work: Path) -> float:
    """``toolnexus batch --rate`` over the same rows; returns its wall time."""
    import yaml

    qfile, inputs = work / "q.yaml", work / "in.jsonl"
    qfile.write_text(yaml.safe_dump({"questions": QUESTIONS}), encoding="utf-8")
    with inputs.open("w", encoding="utf-8") as f:
        for s in states(ROWS):
            f.write(json.dumps({"id": str(s["ticket"]), "text": s["message"]}) + "\n")
    cmd = [sys.executable, "-m", "toolnexus", "batch", str(qfile), str(inputs),
           "--id-field", "id", "--state-field", "text", "--base-url", url,
           "--rate", str(RATE_PER_MINUTE), "--concurrency", str(CONCURRENCY),
           "-o", str(work / "out.jsonl")]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})
    return time.perf_counter() - start


def on_ray(url: str, temp: Path) -> float:
    """evaluate_dataset, 2 workers, one limit; returns its wall time (Ray's start excluded)."""
    import pyarrow as pa
    import ray

    from toolnexus.ray import evaluate_dataset

    table = table_of(ROWS)
    ds = ray.data.from_arrow([table.slice(i, 250) for i in range(0, ROWS, 250)])
    start = time.perf_counter()
    out = evaluate_dataset(ds, QUESTIONS, state_column="text", id_column="id",
                           rate_per_minute=RATE_PER_MINUTE, workers=2, concurrency=CONCURRENCY,
                           base_url=url)  # fmt: skip
    result = pa.concat_tables(ray.get(out.to_arrow_refs()))
    wall = time.perf_counter() - start
    assert result.num_rows == ROWS and result.column("error").null_count == ROWS
    return wall


def arrow_vs_batch(work: Path) -> None:
    """The Arrow seam's overhead: evaluate_table vs the library's states(...).evaluate on the
    same rows, no limit, against an unlimited serve in-process (both pay it alike)."""
    from toolnexus import create_classifier
    from toolnexus.arrow import evaluate_table_async
    from toolnexus.serve import ServeOptions, Server

    n = 2000
    table = table_of(n)
    texts = table.column("text").to_pylist()

    async def go() -> tuple[float, float]:
        async with Server(ServeOptions(synthetic=True)) as server:
            async with create_classifier(base_url=server.url) as judge:
                await judge.states(texts[:200]).evaluate(**QUESTIONS)  # warm
                t0 = time.perf_counter()
                await judge.states(texts).evaluate(**QUESTIONS)
                plain = time.perf_counter() - t0
            t0 = time.perf_counter()
            await evaluate_table_async(table, QUESTIONS, state_column="text", base_url=server.url)
            arrow = time.perf_counter() - t0
        return plain, arrow

    plain, arrow = asyncio.run(go())
    print(f"arrow: evaluate_table {n} rows {arrow:5.2f} s vs states().evaluate {plain:5.2f} s "
          f"(ratio {arrow / plain:4.2f}x)")  # fmt: skip


def main() -> None:
    warnings.filterwarnings("ignore", category=DeprecationWarning, module="ray.data.context")
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    limit = RATE_PER_MINUTE / 60
    print(f"{ROWS} rows at a limit of {RATE_PER_MINUTE}/min ({limit:.0f}/s), "
          f"{CONCURRENCY} in flight per process", flush=True)  # fmt: skip
    account = Account()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            wall = single_process(account.url, work)
            rps, statuses = account.take()
            print(f"single process (batch --rate): {rps:6.1f} req/s = {rps / limit:4.2f}x of "
                  f"the limit; wall {wall:5.1f} s; statuses {statuses}", flush=True)  # fmt: skip
            t0 = time.perf_counter()
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                     _temp_dir=str(work / "ray"), configure_logging=False)  # fmt: skip
            started = time.perf_counter() - t0
            try:
                wall = on_ray(account.url, work)
            finally:
                ray.shutdown()
            rps, statuses = account.take()
            print(f"ray, 2 workers, one limit:     {rps:6.1f} req/s = {rps / limit:4.2f}x of "
                  f"the limit; wall {wall:5.1f} s (+ ray.init {started:.1f} s); "
                  f"statuses {statuses}", flush=True)  # fmt: skip
            arrow_vs_batch(work)
    finally:
        account.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--server"]:
        server_main(sys.argv[2])
    else:
        main()
