"""``toolnexus batch`` end to end: wall time against the ideal, and peak RSS as input grows.

1. 10,000 states from a JSONL file, the loopback server (its own process) answering after
   20 ms, ``--concurrency 32``: wall time against the ideal 10,000 x 20 ms / 32 = 6.25 s.
   Target: ratio <= 1.25.
2. Peak RSS of the batch process (``os.wait4``'s rusage of that one child) for 10,000 and for
   100,000 states, cache and --replay off. The 100k run uses latency 0 and a higher concurrency
   to stay quick; memory, not speed, is measured there. Target: the larger peak within 1.2x of
   the smaller.
3. The decision cache (issue 8: "a cold ``batch --cache`` run costs at most 1.10x the same run
   without --cache ... and a warm re-run sends 0 requests"): the 10,000 states of (1) without
   --cache and with --cache on an empty cache directory, alternated twice (the fastest of each
   is compared, so one noisy run on a shared machine does not decide), then a warm re-run on
   that cache, counting the requests the server saw during it. Targets: ratio <= 1.10; 0 sent.

Each batch runs as ``python -m toolnexus batch`` in a subprocess, exactly as a user runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import run_measured

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "questions" / "support-triage.yaml"


def write_states(path: Path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"t{i}", "text": f"ticket {i}: charged twice, refund?"}))
            f.write("\n")


def start_server(latency_ms: float) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "loopback.py"), "--latency-ms", str(latency_ms)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def requests_seen(server: subprocess.Popen[str]) -> int:
    """How many requests the loopback server (started by ``start_server``) has answered."""
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write("count\n")
    server.stdin.flush()
    return int(server.stdout.readline())


def run_batch(
    states: Path, out: Path, base_url: str, concurrency: int, cache_dir: Path | None = None
) -> tuple[float, int, float]:
    """(wall seconds, peak RSS in KiB, CPU seconds: user + system, every thread) of one batch
    process."""
    args = [
        sys.executable, "-m", "toolnexus", "batch", str(QUESTIONS), str(states),
        "--id-field", "id", "--state-field", "text", "--concurrency", str(concurrency),
        "--base-url", base_url, "--output", str(out),
    ]  # fmt: skip
    if cache_dir is not None:
        args += ["--cache", "--cache-dir", str(cache_dir)]
    run = run_measured(args, stdout=None)
    if run.code != 0:
        raise SystemExit(f"batch failed ({run.code}): {run.stderr}")
    print(f"   {run.stderr[-1] if run.stderr else ''}")
    return run.wall, run.maxrss_kib, run.cpu


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        small, large = d / "10k.jsonl", d / "100k.jsonl"
        write_states(small, 10_000)
        write_states(large, 100_000)

        server, url = start_server(20)
        try:
            wall, rss_small, _ = run_batch(small, d / "out-10k.jsonl", url, 32)
        finally:
            server.communicate("")
        ideal = 10_000 * 0.020 / 32
        print(
            f"10,000 states, 20 ms, concurrency 32: wall {wall:.2f} s (process start included), "
            f"ideal {ideal:.2f} s, ratio {wall / ideal:.2f} (target <= 1.25)"
        )

        server, url = start_server(0)
        try:
            wall_large, rss_large, _ = run_batch(large, d / "out-100k.jsonl", url, 64)
        finally:
            server.communicate("")
        print(f"100,000 states, 0 ms, concurrency 64: wall {wall_large:.2f} s")
        ratio = rss_large / rss_small
        print(
            f"peak RSS: 10,000 states {rss_small / 1024:.1f} MiB, 100,000 states "
            f"{rss_large / 1024:.1f} MiB, ratio {ratio:.2f} (target <= 1.2)"
        )
        cache_ratios(small, d)


def cache_ratios(states: Path, d: Path) -> None:
    server, url = start_server(20)
    try:
        plain, cold = [], []
        for rep in range(2):
            plain.append(run_batch(states, d / f"plain{rep}.jsonl", url, 32))
            cold.append(run_batch(states, d / f"cold{rep}.jsonl", url, 32, d / f"cache{rep}"))
        before = requests_seen(server)
        warm = run_batch(states, d / "warm.jsonl", url, 32, d / "cache1")[0]
        sent = requests_seen(server) - before
    finally:
        server.communicate("")
    wall_plain, wall_cold = min(r[0] for r in plain), min(r[0] for r in cold)
    cpu_plain, cpu_cold = min(r[2] for r in plain), min(r[2] for r in cold)
    print(
        f"cache, 10,000 states, 20 ms, concurrency 32: without --cache {wall_plain:.2f} s, "
        f"cold --cache {wall_cold:.2f} s, ratio {wall_cold / wall_plain:.2f} (target <= 1.10); "
        f"CPU {cpu_plain:.2f} s vs {cpu_cold:.2f} s, ratio {cpu_cold / cpu_plain:.2f}"
    )
    print(f"warm re-run: {warm:.2f} s, {sent} requests sent (target 0)")


if __name__ == "__main__":
    main()
