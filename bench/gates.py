"""Gates on the hot paths (issue 35, Speed): what two gates cost a batch record, and the whole
report with two gates and outcome labels against ``json.loads`` of the same file.

Issue 35: "``report`` with two gates and outcome labels over 100,000 labelled records: <= 2.0x
``json.loads`` of the same file without a target (today's report is 1.38-1.77x without gates);
gates add <= 5% to ``batch``'s CPU per record."

Measured over ``ROUNDS`` interleaved rounds (a machine that slows down mid-run slows both
sides alike): the batch figures are their medians (the machine is shared: one quiet or busy
round moves a median less than a best), the report's the best:

- ``toolnexus batch`` end to end against ``serve --synthetic`` (``N_BATCH`` states, four noul
  questions), the batch process's CPU without and with the two gates: the issue's target;

- per record, the CPU ``batch`` spends on a reply once it has it: decode the wire body
  (``parse_decision``), build the typed record (``records.decision.record``, what
  ``run/stream.py`` calls) and encode its JSON line (``JsonlCodec.encode``, which writes the
  gates' prepared text), for four noul questions, without and with two gates (the issue's
  merge gate, four rules on inclusive thresholds, and a one-rule gate on the default bands)
  compiled once for the run
  (``GateSet``, as ``batch`` does). The HTTP, the scheduler and the write are left out, so the
  share printed is an upper bound of what gates add to a batch's CPU per record; the share of
  evaluating the gates alone (``gate_records`` over decoded answers) is printed beside it;
- ``toolnexus report RUN --labels L --format json`` as a user runs it (a subprocess, its
  start-up and default ``--jobs`` included; labels for the four questions and a column per
  gate holding its outcome), wall time against ``json.loads`` of every line in this process,
  and its CPU (the workers included) beside it. The gates are counted in the report's one pass
  over the run.
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import run_measured

N = 100_000
N_BATCH = 20_000
ROUNDS = 3
REPORT_ROUNDS = 3
TARGET_REPORT = 2.0
TARGET_BATCH = 0.05
KEYS = ("addresses_task", "evidence_supports", "unrelated_changes", "needs_clarification")


def _gates() -> dict[str, object]:
    from toolnexus import Policy, Rule

    return {
        "merge": Policy(
            [
                Rule("addresses_task", "hold", below=0.5),
                Rule("evidence_supports", "hold", below=0.5),
                Rule("unrelated_changes", "hold", at_least=0.5),
                Rule("needs_clarification", "clarify", at_least=0.5),
            ],
            default="permit",
            thresholds={"yes": 0.8, "no": 0.2},
        ),
        "strict": Policy([Rule("addresses_task", "hold", below=0.5)], default="permit"),
    }


def batch_share() -> None:
    from toolnexus import NoulQuestion
    from toolnexus.core.decision import parse_decision
    from toolnexus.records.codec import JsonlCodec
    from toolnexus.records.decision import record
    from toolnexus.records.gates import GateSet, gate_records

    questions = {k: NoulQuestion(f"Is it so: {k}?") for k in KEYS}
    gates = GateSet(_gates())  # type: ignore[arg-type]
    rng = random.Random(35)
    bodies = [
        {
            "model": "jev-1.13.0",
            "answers": {k: {"type": "noul", "noul": rng.randint(0, 100) / 100} for k in KEYS},
            "usage": {"input_tokens": 600, "output_tokens": 90},
        }
        for _ in range(N)
    ]
    encode = JsonlCodec().encode

    def per_record(with_gates: bool) -> float:
        g = gates if with_gates else None
        start = time.process_time()
        for i, body in enumerate(bodies):
            decision = parse_decision(body, questions)
            encode(record(i, "0" * 64, decision, questions, validated=True, gates=g))
        return time.process_time() - start

    decided = [parse_decision(body, questions).answers for body in bodies]

    def evaluation() -> float:
        start = time.process_time()
        for answers in decided:
            gate_records(gates, answers, None)
        return time.process_time() - start

    plain, gated, alone = [], [], []
    for _ in range(ROUNDS):
        plain.append(per_record(False))
        gated.append(per_record(True))
        alone.append(evaluation())
    base, with_gates = statistics.median(plain), statistics.median(gated)
    print(
        f"batch per record (decode + record + JSON line) x {N:,}: {base:.2f} s, with two gates "
        f"{with_gates:.2f} s: gates add {(with_gates / base - 1) * 100:+.1f}% (target <= "
        f"{TARGET_BATCH * 100:.0f}%), of which evaluating them "
        f"{statistics.median(alone) / base * 100:.1f}% "
        "(the rest is their fields in the record and its JSON)"
    )


def report_ratio() -> None:
    from toolnexus import Decision, NoulAnswer, NoulQuestion
    from toolnexus.records.decision import decision_record
    from toolnexus.records.model import DecisionRecord

    questions = {k: NoulQuestion(f"Is it so: {k}?") for k in KEYS}
    gates = _gates()
    rng = random.Random(35)
    with tempfile.TemporaryDirectory() as tmp:
        run, labels, out = Path(tmp) / "run.jsonl", Path(tmp) / "labels.csv", Path(tmp) / "r.json"
        plain, plain_out = Path(tmp) / "plain.jsonl", Path(tmp) / "plain.json"
        with (
            run.open("w", encoding="utf-8") as f,
            plain.open("w", encoding="utf-8") as pf,
            labels.open("w", encoding="utf-8") as lab,
        ):
            lab.write(f"id,{','.join(KEYS)},merge,strict\n")
            for i in range(N):
                d = Decision("m", {k: NoulAnswer(rng.randint(0, 100) / 100) for k in KEYS})
                body = decision_record(d, questions, validated=True, gates=gates)  # type: ignore[arg-type]
                f.write(json.dumps(DecisionRecord.from_body(f"t{i}", None, body).to_object()))
                f.write("\n")
                del body["gates"]
                pf.write(json.dumps(DecisionRecord.from_body(f"t{i}", None, body).to_object()))
                pf.write("\n")
                truth = ",".join(rng.choice(("yes", "no")) for _ in KEYS)
                outcome = rng.choice(("permit", "hold", "clarify"))
                lab.write(f"t{i},{truth},{outcome},{rng.choice(('permit', 'hold'))}\n")

        def loads(path: Path = run) -> tuple[float, float]:
            started, cpu = time.perf_counter(), time.process_time()
            with path.open("rb") as f:
                for line in f:
                    json.loads(line)
            return time.perf_counter() - started, time.process_time() - cpu

        def report(path: Path = run) -> tuple[float, float]:
            args = [
                sys.executable, "-m", "toolnexus", "report", str(path), "--labels", str(labels),
                "--format", "json", "-o", str(out if path == run else plain_out),
            ]  # fmt: skip
            got = run_measured(args, stdout=None)
            if got.code != 0:
                raise SystemExit(f"report exited {got.code}: {got.stderr}")
            return got.wall, got.cpu

        bases, reports, plain_bases, plains = [], [], [], []
        for _ in range(REPORT_ROUNDS):
            bases.append(loads())
            reports.append(report())
            plain_bases.append(loads(plain))
            plains.append(report(plain))
        data = json.loads(out.read_text("utf-8"))
        assert sorted(data["gates"]) == ["merge", "strict"], "both gates reported"
        assert data["gates"]["merge"]["labelled"] == N, "every record's outcome joined"
    base, wall = min(w for w, _ in bases), min(w for w, _ in reports)
    cpu = min(c for _, c in reports) / min(c for _, c in bases)
    plain_ratio = min(w for w, _ in plains) / min(w for w, _ in plain_bases)
    print(
        f"report --labels (two gates, outcome labels) x {N:,}: {wall:.2f} s; json.loads "
        f"{base:.2f} s; ratio {wall / base:.2f} (target <= {TARGET_REPORT}); CPU {cpu:.2f}x; "
        f"the same records without gates: ratio {plain_ratio:.2f}"
    )


QUESTION_FILE = """\
model: jev-1.13.0
questions:
  addresses_task: {type: noul, instructions: Does the change address the task?}
  evidence_supports: {type: noul, instructions: Does the evidence support it?}
  unrelated_changes: {type: noul, instructions: Are there unrelated changes?}
  needs_clarification: {type: noul, instructions: Does the task need clarification?}
"""
GATES_SECTION = """\
gates:
  merge:
    rules:
      - {question: addresses_task, below: 0.5, action: hold}
      - {question: evidence_supports, below: 0.5, action: hold}
      - {question: unrelated_changes, at_least: 0.5, action: hold}
      - {question: needs_clarification, at_least: 0.5, action: clarify}
    default: permit
    thresholds: {"yes": 0.8, "no": 0.2}
  strict:
    rules:
      - {question: addresses_task, below: 0.5, action: hold}
    default: permit
"""


def batch_end_to_end() -> None:
    """``toolnexus batch`` against ``serve --synthetic`` (its own process, not measured): the
    batch process's CPU (rusage) over ``N_BATCH`` states, with the question file without and
    with the two gates. What the issue's target is about."""
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        plain, gated, states = d / "plain.yaml", d / "gated.yaml", d / "states.jsonl"
        plain.write_text(QUESTION_FILE, "utf-8")
        gated.write_text(QUESTION_FILE + GATES_SECTION, "utf-8")
        states.write_text(
            "".join(
                json.dumps({"id": f"t{i}", "text": f"change {i}"}) + "\n" for i in range(N_BATCH)
            ),
            "utf-8",
        )
        server = subprocess.Popen(
            [sys.executable, "-m", "toolnexus", "serve", "--synthetic", "--port", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert server.stdout is not None
        url = server.stdout.readline().strip()

        def cpu(questions: Path) -> float:
            out = d / "out.jsonl"
            out.unlink(missing_ok=True)
            args = [
                sys.executable, "-m", "toolnexus", "batch", str(questions), str(states),
                "--id-field", "id", "--state-field", "text", "--concurrency", "64",
                "--base-url", url, "-o", str(out),
            ]  # fmt: skip
            got = run_measured(args)
            if got.code != 0:
                raise SystemExit(f"batch exited {got.code}: {got.stderr}")
            return got.cpu

        try:
            without, with_gates = [], []
            for _ in range(ROUNDS):
                without.append(cpu(plain))
                with_gates.append(cpu(gated))
        finally:
            server.kill()
            server.wait()
    a, b = statistics.median(without), statistics.median(with_gates)
    print(
        f"batch against serve --synthetic, {N_BATCH:,} states, CPU of the batch process: "
        f"{a:.2f} s ({a / N_BATCH * 1e6:.0f} us per record), with two gates {b:.2f} s: gates add "
        f"{(b / a - 1) * 100:+.1f}% (target <= {TARGET_BATCH * 100:.0f}%)"
    )


def main() -> int:
    batch_end_to_end()
    batch_share()
    report_ratio()
    return 0


if __name__ == "__main__":
    sys.exit(main())
