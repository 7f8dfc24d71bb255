"""``toolnexus filter`` in a pipe (issue 36, "Speed"), as a user runs it, against
``toolnexus serve --synthetic`` (its own process, one per measurement):

- lines per second, packed (``--pack auto``) over 1,000 lines and unpacked (``--pack 1``) over
  200 lines (the ratio is of rates; 1,000 unpacked would take 50 s at the limit and say nothing
  more), both at ``serve --rate-limit 1200/min``. Target: packed >= 15x unpacked.
- the first output line: after a warm-up line (start-up, the connection), 3 lines are written
  into a pipe that stays open against ``serve --latency-ms 100``; the time to the first line
  out. Target: within 2 request latencies plus ``FLUSH_DELAY``.
- peak RSS of the filter over 100,000 lines with no limit vs over 10,000. Target: <= 1.2x.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ratelimit import start_server, stop, toolnexus
from toolnexus.cli.filter_run import FLUSH_DELAY

LIMIT = "1200/min"
RATE_RUNS = (("auto", 1000), ("1", 200))
TARGET_RATIO = 15.0
LATENCY_MS = 100
RSS_RUNS = (10_000, 100_000)
TARGET_RSS = 1.2
QUESTIONS = {
    "questions": {
        "refund": {"type": "noul", "instructions": "Is the customer asking for money back?"},
        "desk": {
            "type": "choice",
            "instructions": "Which desk should own this ticket?",
            "criteria": {
                "billing": "own it here when the problem is money that moved",
                "technical": "own it here when the product itself fails",
            },
        },
    }
}
#: The filter's own peak RSS, in KiB, from a wrapper process (RUSAGE_CHILDREN is per process).
RSS_WRAPPER = (
    "import resource, subprocess, sys; "
    "r = subprocess.run(sys.argv[2:], stdin=open(sys.argv[1], 'rb'), stdout=subprocess.DEVNULL); "
    "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def _lines(path: Path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(f"ticket {i}: I was charged twice for invoice {i * 37}\n")


def _filter(qfile: Path, url: str, *more: str) -> list[str]:
    return [*toolnexus(), "filter", str(qfile), "--where", "refund >= 0",
            "--base-url", f"{url}/v1", "--concurrency", "64", *more]  # fmt: skip


def rate(qfile: Path, tmp: Path, pack: str, n: int, env: dict[str, str]) -> tuple[float, int]:
    src = tmp / f"rate-{pack}.txt"
    _lines(src, n)
    proc, url = start_server("--rate-limit", LIMIT, env=env)
    try:
        started = time.perf_counter()
        with open(src, "rb") as f:
            ran = subprocess.run(_filter(qfile, url, "--pack", pack, "-c"), stdin=f,
                                 capture_output=True, text=True, env=env, timeout=900)  # fmt: skip
        wall = time.perf_counter() - started
    finally:
        stop(proc)
    passed = int(ran.stdout.strip() or 0)
    return passed / wall, ran.returncode


def first_line(qfile: Path, env: dict[str, str]) -> float:
    proc, url = start_server("--latency-ms", str(LATENCY_MS), env=env)
    try:
        f = subprocess.Popen(_filter(qfile, url), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, env=env)  # fmt: skip
        assert f.stdin is not None and f.stdout is not None
        f.stdin.write(b"warm-up line\n")
        f.stdin.flush()
        f.stdout.readline()
        started = time.perf_counter()
        f.stdin.write(b"one\ntwo\nthree\n")
        f.stdin.flush()
        f.stdout.readline()
        took = time.perf_counter() - started
        f.stdin.close()
        f.stdout.read()
        f.wait(60)
        f.stdout.close()
    finally:
        stop(proc)
    return took


def rss(qfile: Path, tmp: Path, n: int, env: dict[str, str]) -> tuple[int, int]:
    src = tmp / f"rss-{n}.txt"
    _lines(src, n)
    proc, url = start_server(env=env)
    try:
        ran = subprocess.run([sys.executable, "-c", RSS_WRAPPER, str(src), *_filter(qfile, url)],
                             capture_output=True, text=True, env=env, timeout=1800)  # fmt: skip
    finally:
        stop(proc)
    code, kib = ran.stdout.split()
    return int(code), int(kib)


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        qfile = tmp / "questions.yaml"  # JSON is YAML
        qfile.write_text(json.dumps(QUESTIONS), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k != "TYPESAFE_API_KEY"}
        env["TYPESAFE_API_KEY"] = "bench-key"
        rates = [(pack, n, *rate(qfile, tmp, pack, n, env)) for pack, n in RATE_RUNS]
        took = first_line(qfile, env)
        sizes = [(n, *rss(qfile, tmp, n, env)) for n in RSS_RUNS]
    for pack, n, per_s, code in rates:
        print(f"--pack {pack:>4}: {n} lines at {LIMIT}, exit {code}, {per_s:.1f} lines/s")
    ratio = rates[0][2] / rates[1][2]
    print(f"packed / unpacked: {ratio:.1f}x lines per second (target: >= {TARGET_RATIO}x)")
    bound = 2 * LATENCY_MS / 1000 + FLUSH_DELAY
    print(f"first line out after {took * 1000:.0f} ms (target: <= {bound * 1000:.0f} ms)")
    for n, code, kib in sizes:
        print(f"{n} lines, no limit: exit {code}, peak RSS {kib / 1024:.1f} MiB")
    growth = sizes[1][2] / sizes[0][2]
    print(f"RSS {RSS_RUNS[1]} / {RSS_RUNS[0]} lines: {growth:.2f}x (target: <= {TARGET_RSS}x)")
    codes = [r[3] for r in rates] + [s[1] for s in sizes]
    if ratio < TARGET_RATIO or took > bound or growth > TARGET_RSS or any(codes):
        sys.exit(1)


if __name__ == "__main__":
    main()
