"""``toolnexus report --format json`` over 100,000 labelled records, against ``json.loads``.

Issue 12: "100,000 records with labels through report --format json in at most 2.0x the time of
json.loads over the same lines (measured in the same run), with peak RSS under 150 MiB (the
report keeps counters and the (probability, label) pairs, never the records)."

The records are what ``toolnexus batch`` writes (``decision_record`` of decoded decisions for a
noul, a 3-option choice and a 3-level score question, with varied probabilities), and a CSV
labels file labels every question of every record. The report runs as ``python -m toolnexus``
in a subprocess, as a user runs it (its start-up included, and its default ``--jobs``: one
process per CPU counts the run's chunks); its peak RSS and CPU time are ``os.wait4``'s rusage
of that child (with the workers it reaped). The target is wall time; the CPU ratio is printed
beside it, so what the parallel count costs is in plain view. The baseline reads the same
file and ``json.loads`` every line, in this process. The two alternate, four rounds, and the
best of each is compared.

Issue 24: "100,000 labelled records with intervals on, still <= 2.0x json.loads (or intervals
opt-in behind a flag, with the bench printing both)". The report's default computes every
ECE's bootstrap interval and noise floor for a question of at most 20,000 labelled answers, so
at 100,000 they are off by default; a third process per round runs ``--intervals`` (forced
on), and its ratio is printed beside.

Issue 47: "report --labels with every definition option on and --no-intervals over 100,000
records stays <= 2.0x json.loads". ``python bench/report.py --only definitions`` runs that case
alone, once (:data:`DEFINITIONS`: the costliest choice of each option).
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from _common import run_measured

N = 100_000
TARGET_RATIO = 2.0
TARGET_RSS_MIB = 150
ROUNDS = 4
QUESTIONS = {
    "urgent": {"type": "noul", "instructions": "Does this need a human today?"},
    "desk": {
        "type": "choice",
        "instructions": "Which desk owns it?",
        "criteria": {
            "billing": "money moved",
            "shipping": "a parcel is late",
            "technical": "the product errors",
        },
    },
    "impact": {
        "type": "score",
        "instructions": "How much is down?",
        "criteria": ["nothing", "some of it", "all of it"],
    },
}
DESKS = ("billing", "shipping", "technical")
#: Every definition option of issue 47 on, each at its costliest choice (class ECE: one ECE per
#: class; equal-mass bins: quantiles; a floor: every row renormalised; a refit temperature per
#: question and pooled).
DEFINITIONS = (
    "--ece-bins", "15", "--ece-scheme", "mass", "--ece-edges", "right", "--ece-of", "class",
    "--log-floor", "1e-6", "--floor-draws", "200", "--seed", "1", "--fit-temperature", "--pool",
    "--no-intervals",
)  # fmt: skip


def _split(rng: random.Random, n: int) -> list[float]:
    raw = [rng.random() ** 2 for _ in range(n)]
    total = sum(raw)
    values = [round(r / total, 2) for r in raw]
    values[0] = round(1.0 - sum(values[1:]), 2)
    return values


def write_inputs(run: Path, labels: Path) -> None:
    from toolnexus.cli.render import decision_record
    from toolnexus.core.decision import parse_decision
    from toolnexus.core.questions import normalize_questions

    questions = normalize_questions(QUESTIONS)
    rng = random.Random(12)
    with open(run, "w", encoding="utf-8") as out, open(labels, "w", encoding="utf-8") as lab:
        lab.write("id,urgent,desk,impact\n")
        for i in range(N):
            desk = dict(zip(DESKS, _split(rng, 3), strict=True))
            impact = _split(rng, 3)
            pick = max(desk, key=desk.__getitem__)
            body = {
                "model": "jev-1.13.0",
                "answers": {
                    "urgent": {"type": "noul", "noul": round(rng.random(), 2)},
                    "desk": {
                        "type": "choice",
                        "choice": pick,
                        "confidence": round(rng.uniform(0.3, 1.0), 2),
                        "probabilities": desk,
                    },
                    "impact": {
                        "type": "score",
                        "score": round(sum(k * p for k, p in enumerate(impact)), 2),
                        "confidence": round(rng.uniform(0.3, 1.0), 2),
                        "legend": {"0": "nothing", "1": "some of it", "2": "all of it"},
                        "probabilities": {str(k): p for k, p in enumerate(impact)},
                    },
                },
                "usage": {"input_tokens": 600 + i % 50, "output_tokens": 90},
            }
            record = {"id": f"t{i}", **decision_record(parse_decision(body, questions), questions)}
            out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
            lab.write(
                f"t{i},{'yes' if rng.random() < 0.5 else 'no'},{rng.choice(DESKS)},"
                f"{rng.randrange(3)}\n"
            )


def loads_seconds(run: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of json.loads over every line."""
    loads = json.loads
    started, cpu = time.perf_counter(), time.process_time()
    with open(run, "rb") as f:
        for line in f:
            loads(line)
    return time.perf_counter() - started, time.process_time() - cpu


def report_seconds(run: Path, labels: Path, out: Path, *extra: str) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the report and its workers, peak RSS in KiB of the largest
    of them) of one ``toolnexus report`` process: wait4's rusage counts the children it
    reaped."""
    args = [
        sys.executable, "-m", "toolnexus", "report", str(run), "--labels", str(labels),
        "--format", "json", "-o", str(out), *extra,
    ]  # fmt: skip
    run_ = run_measured(args, stdout=None)
    if run_.code != 0:
        raise SystemExit(f"report exited {run_.code}: {run_.stderr}")
    return run_.wall, run_.cpu, run_.maxrss_kib


def definitions_case() -> None:
    """Issue 47's case, once: the report with every definition option on."""
    with tempfile.TemporaryDirectory() as tmp:
        run, labels = Path(tmp) / "run.jsonl", Path(tmp) / "labels.csv"
        out = Path(tmp) / "report.json"
        write_inputs(run, labels)
        baseline, _ = loads_seconds(run)
        wall, _, rss = report_seconds(run, labels, out, *DEFINITIONS)
        data = json.loads(out.read_text(encoding="utf-8"))
        assert data["pooled"]["labelled"] == 3 * N and data["definitions"]["ece_bins"] == 15
    ratio = wall / baseline
    print(
        f"report --labels with every definition option on ({' '.join(DEFINITIONS)}) over "
        f"{N:,} records: {wall:.2f} s; json.loads {baseline:.2f} s; ratio {ratio:.2f} "
        f"(target <= {TARGET_RATIO}); peak RSS {rss / 1024:.0f} MiB"
    )
    if ratio > TARGET_RATIO:
        print("ABOVE TARGET")


def main() -> None:
    if sys.argv[1:] == ["--only", "definitions"]:
        definitions_case()
        return
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run.jsonl"
        labels = Path(tmp) / "labels.csv"
        out = Path(tmp) / "report.json"
        write_inputs(run, labels)
        size = run.stat().st_size
        # Interleaved, so a machine that slows down mid-run slows both sides alike.
        baselines, reports, plain = [], [], []
        for _ in range(ROUNDS):
            baselines.append(loads_seconds(run))
            reports.append(report_seconds(run, labels, out))
            plain.append(report_seconds(run, labels, Path(tmp) / "on.json", "--intervals"))
        baseline = min(w for w, _ in baselines)
        wall = min(w for w, _, _ in reports)
        cpu_ratio = min(c for _, c, _ in reports) / min(c for _, c in baselines)
        rss_mib = max(r for _, _, r in reports) / 1024
        data = json.loads(out.read_text(encoding="utf-8"))
        assert data["records"] == N and data["labelled"] == N, "every record labelled"
        on = json.loads((Path(tmp) / "on.json").read_text(encoding="utf-8"))
        assert "ece_uncertainty" in on["questions"]["urgent"]["metrics"], "--intervals on"
    ratio = wall / baseline
    plain_wall = min(w for w, _, _ in plain)
    print(
        f"report --format json over {N:,} labelled records ({size / 2**20:.0f} MiB): "
        f"{wall:.2f} s; json.loads over the same lines {baseline:.2f} s; "
        f"ratio {ratio:.2f} (target <= {TARGET_RATIO})"
    )
    print(
        f"  with intervals (--intervals): {plain_wall:.2f} s, ratio "
        f"{plain_wall / baseline:.2f}; the intervals cost {plain_wall - wall:+.2f} s"
    )
    print(
        f"  rounds (s): json.loads {' '.join(f'{w:.2f}' for w, _ in baselines)}; "
        f"report {' '.join(f'{w:.2f}' for w, _, _ in reports)}; "
        f"--intervals {' '.join(f'{w:.2f}' for w, _, _ in plain)}"
    )
    print(
        f"  CPU, all of the report's processes against json.loads: {cpu_ratio:.2f}x "
        f"({os.cpu_count()} CPUs; the report counts chunks side by side, --jobs)"
    )
    print(f"peak RSS {rss_mib:.0f} MiB (target < {TARGET_RSS_MIB} MiB)")
    if ratio > TARGET_RATIO or rss_mib >= TARGET_RSS_MIB:
        print("ABOVE TARGET")


if __name__ == "__main__":
    main()
