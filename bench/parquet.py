"""Parquet in and out of ``toolnexus batch`` and ``report`` against the JSONL path (issue 21).

1. ``batch`` over 100,000 states as a Parquet file with ``--format parquet -o run.parquet``,
   and over the same states as a JSONL file with ``-o run.jsonl``, against
   ``toolnexus serve --synthetic`` (its own process, no latency), ``--concurrency 64``: the
   two alternated twice and the fastest of each compared, so one noisy run on a shared
   machine does not decide. Targets: wall <= 1.05x and peak RSS (the rusage of the
   batch process) <= 1.2x of the JSONL run.
2. ``report`` on each output (``--format json``), alternated six times, the fastest compared.
   Target: the Parquet run <= 1.0x the JSONL run.

Each command runs as ``python -m toolnexus`` in a subprocess, exactly as a user runs it.
``--states N`` runs a smaller size (an A/B of two commits runs this bench six times; the
ratios are of one size, so both sides of an A/B must use the same N).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import run_measured

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "questions" / "support-triage.yaml"
N = 100_000
#: A report takes about half a second, so a neighbour's burst moves one run by 20 %: more
#: rounds of it, alternated, than of the batch.
REPORT_ROUNDS = 6


def write_states(jsonl: Path, parquet: Path, n: int) -> None:
    """The same states twice: JSONL lines and a Parquet table of the same columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = [f"t{i}" for i in range(n)]
    texts = [f"ticket {i}: charged twice, refund?" for i in range(n)]
    with open(jsonl, "w", encoding="utf-8") as f:
        for item_id, text in zip(ids, texts, strict=True):
            f.write(json.dumps({"id": item_id, "text": text}) + "\n")
    pq.write_table(pa.table({"id": ids, "text": texts}), parquet)


def start_server() -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "toolnexus", "serve", "--synthetic", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def measure(args: list[str]) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in KiB, the last stderr line) of one ``toolnexus`` process."""
    run = run_measured([sys.executable, "-m", "toolnexus", *args])
    if run.code != 0:
        raise SystemExit(f"toolnexus {args[0]} failed ({run.code}): {run.stderr}")
    return run.wall, run.maxrss_kib, run.stderr[-1] if run.stderr else ""


#: The least any Parquet batch holds: pyarrow itself, the input streamed by record batch, and
#: the first conversion of a Python list to an Arrow array, as the output writer makes.
FLOOR = """
import sys
import pyarrow as pa
import pyarrow.parquet as pq
for batch in pq.ParquetFile(sys.argv[1]).iter_batches(batch_size=1024):
    batch.column(0).to_pylist()
pa.array(["one"])
"""


def batch(states: Path, out: Path, url: str, fmt: str) -> tuple[float, int]:
    out.unlink(missing_ok=True)
    args = [
        "batch", str(QUESTIONS), str(states), "--id-field", "id", "--state-field", "text",
        "--concurrency", "64", "--base-url", url, "--format", fmt, "-o", str(out),
    ]  # fmt: skip
    wall, rss, summary = measure(args)
    print(f"   {fmt}: {summary}")
    return wall, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=int, default=N, help=f"states per run (default {N:,})")
    n = parser.parse_args().states
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        jsonl_in, parquet_in = d / "states.jsonl", d / "states.parquet"
        write_states(jsonl_in, parquet_in, n)
        jsonl_out, parquet_out = d / "run.jsonl", d / "run.parquet"
        server, url = start_server()
        try:
            runs: dict[str, list[tuple[float, int]]] = {"jsonl": [], "parquet": []}
            for _ in range(2):
                runs["jsonl"].append(batch(jsonl_in, jsonl_out, url, "jsonl"))
                runs["parquet"].append(batch(parquet_in, parquet_out, url, "parquet"))
        finally:
            server.kill()
            server.wait()
        wall = {k: min(r[0] for r in v) for k, v in runs.items()}
        rss = {k: min(r[1] for r in v) for k, v in runs.items()}
        print(
            f"batch, {n:,} states, concurrency 64: JSONL {wall['jsonl']:.2f} s, Parquet "
            f"{wall['parquet']:.2f} s, ratio {wall['parquet'] / wall['jsonl']:.3f} "
            "(target <= 1.05)"
        )
        print(
            f"peak RSS: JSONL {rss['jsonl'] / 1024:.1f} MiB, Parquet {rss['parquet'] / 1024:.1f} "
            f"MiB, ratio {rss['parquet'] / rss['jsonl']:.2f} (target <= 1.2)"
        )
        floor = run_measured([sys.executable, "-c", FLOOR, str(parquet_in)])
        pandas = "installed" if importlib.util.find_spec("pandas") else "not installed"
        print(
            f"  floor: a process that only imports pyarrow, reads the input by record batch and "
            f"converts one list (pandas {pandas}: pyarrow imports it then): "
            f"{floor.maxrss_kib / 1024:.1f} MiB, {floor.maxrss_kib / rss['jsonl']:.2f}x the JSONL "
            "run"
        )
        reports: dict[str, list[float]] = {"jsonl": [], "parquet": []}
        for _ in range(REPORT_ROUNDS):
            for fmt, out in (("jsonl", jsonl_out), ("parquet", parquet_out)):
                reports[fmt].append(measure(["report", str(out), "--format", "json"])[0])
        best = {k: min(v) for k, v in reports.items()}
        print(
            f"report, {n:,} records: JSONL {best['jsonl']:.2f} s, Parquet {best['parquet']:.2f} s, "
            f"ratio {best['parquet'] / best['jsonl']:.3f} (target <= 1.0)"
        )


if __name__ == "__main__":
    main()
