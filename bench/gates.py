"""Gates on the hot paths (issue 35, Speed): what two gates cost a batch record, and what the
report's gate pass costs against ``json.loads`` of the same run.

Issue 35: "``report`` with two gates and outcome labels over 100,000 labelled records: <= 2.0x
``json.loads`` of the same file without a target (today's report is 1.38-1.77x without gates);
gates add <= 5% to ``batch``'s CPU per record."

Measured here, in this process, as CPU time (best of ``ROUNDS``):

- per record, ``decision_record`` of a decoded decision (four noul questions), without and with
  two gates (the issue's merge gate, four rules on inclusive thresholds, and a one-rule gate on
  the default bands): the ratio is what gates add to building a record, an upper bound of what
  they add to a batch's CPU per record (which also decodes, validates, encodes and writes);
- the report's second pass over a gated run with labels (``report.judged.judge_section``),
  against ``json.loads`` of every line of the same file: add it to ``bench/report.py``'s ratio
  for the whole report with gates.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

N = 100_000
ROUNDS = 3


def main() -> int:
    from toolnexus import Decision, NoulAnswer, NoulQuestion, Policy, Rule
    from toolnexus.records.decision import decision_record
    from toolnexus.records.model import DecisionRecord
    from toolnexus.report.judged import judge_section
    from toolnexus.report.labels import read_labels

    keys = ("addresses_task", "evidence_supports", "unrelated_changes", "needs_clarification")
    questions = {k: NoulQuestion(f"Is it so: {k}?") for k in keys}
    gates = {
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
    rng = random.Random(35)
    decisions = [
        Decision("m", {k: NoulAnswer(rng.randint(0, 100) / 100) for k in keys}) for _ in range(N)
    ]

    def build(with_gates: bool) -> float:
        start = time.process_time()
        for d in decisions:
            decision_record(d, questions, validated=True, gates=gates if with_gates else None)
        return time.process_time() - start

    plain = min(build(False) for _ in range(ROUNDS))
    gated = min(build(True) for _ in range(ROUNDS))
    print(
        f"decision_record x {N:,}: {plain:.2f} s, with two gates {gated:.2f} s "
        f"(+{(gated / plain - 1) * 100:.0f}% of building a record)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        run, labels = Path(tmp) / "run.jsonl", Path(tmp) / "labels.csv"
        with run.open("w", encoding="utf-8") as f:
            for i, d in enumerate(decisions):
                body = decision_record(d, questions, validated=True, gates=gates)
                f.write(json.dumps(DecisionRecord.from_body(f"t{i}", None, body).to_object()))
                f.write("\n")
        labels.write_text(
            "id,merge,strict\n" + "".join(f"t{i},permit,hold\n" for i in range(N)), "utf-8"
        )

        def loads() -> float:
            start = time.process_time()
            with run.open("rb") as f:
                for line in f:
                    json.loads(line)
            return time.process_time() - start

        def gate_pass() -> float:
            read = read_labels(str(labels))
            start = time.process_time()
            judge_section([str(run)], read)
            return time.process_time() - start

        base = min(loads() for _ in range(ROUNDS))
        extra = min(gate_pass() for _ in range(ROUNDS))
        print(
            f"json.loads x {N:,}: {base:.2f} s; the report's gate pass {extra:.2f} s = "
            f"{extra / base:.2f}x json.loads (add to bench/report.py's ratio; target <= 2.0x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
