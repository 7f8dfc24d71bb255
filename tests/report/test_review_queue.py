"""The review queue (issue 35 item 6): "``report --review-out`` writes the records a gate
escalated or held (or whose band is uncertain or flagged) as a CSV a person can open, with the
answers, the action, the reason and empty label columns; the filled file is a ``--labels`` file
(``report --labels run-labels.csv --labels review.csv`` merges them, 0 requests)"."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from clirun import run_cli
from toolnexus import Decision, NoulAnswer, NoulQuestion, Policy, Rule
from toolnexus.records.decision import decision_record
from toolnexus.records.model import DecisionRecord

QS = {"addresses_task": NoulQuestion("Does it address the task?")}
GATES = {"merge": Policy([Rule("addresses_task", "hold", below=0.5)], default="permit")}
GATES_YAML = """\
questions:
  addresses_task: {type: noul, instructions: Does it address the task?}
gates:
  merge:
    rules:
      - {question: addresses_task, below: 0.5, action: hold}
    default: permit
"""
#: id -> p; bands 0.30 / 0.70 (exclusive): 0.9 permit, 0.1 hold, 0.5 escalates
PS = {"a": 0.9, "b": 0.1, "c": 0.5, "d": 0.95}


def _rows(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.reader(f))


def _run(tmp_path: Path) -> Path:
    lines = []
    for item, p in PS.items():
        body = decision_record(Decision("m", {"addresses_task": NoulAnswer(p)}), QS, gates=GATES)
        lines.append(json.dumps(DecisionRecord.from_body(item, None, body).to_object()))
    run = tmp_path / "run.jsonl"
    run.write_text("\n".join(lines) + "\n", "utf-8")
    return run


def test_the_queue_holds_what_a_person_must_see_and_folds_back_as_labels(tmp_path: Path) -> None:
    run = _run(tmp_path)
    gates = tmp_path / "gates.yaml"
    gates.write_text(GATES_YAML, "utf-8")
    review = tmp_path / "review.csv"
    ran = run_cli(
        "report", str(run), "--gates", str(gates), "--review-out", str(review), "--format", "json"
    )
    assert ran.code == 0, ran.stderr
    assert f"{review}: 2 records to review" in ran.stderr
    rows = _rows(review)
    assert rows[0] == [
        "id", "#why", "#addresses_task", "#merge action", "#merge reason",
        "addresses_task", "merge",
    ]  # fmt: skip
    assert rows[1] == [
        "b", "merge held", "0.1 (no)", "hold", '"addresses_task" below 0.5', "", "",
    ]  # fmt: skip
    assert rows[2][:2] == ["c", "merge escalated; addresses_task uncertain"]
    assert rows[2][3:5] == ["needs_input", 'uncertain answer "addresses_task"']
    # A person fills the label columns; the filled file is a labels file, merged with another.
    rows[1][-2:] = ["false", "hold"]
    rows[2][-2:] = ["true", "permit"]
    with review.open("w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    first = tmp_path / "run-labels.csv"
    first.write_text("id,addresses_task,merge\na,true,permit\nc,false,hold\n", "utf-8")
    ran = run_cli(
        "report", str(run), "--labels", str(first), "--labels", str(review), "--format", "json"
    )
    assert ran.code == 0, ran.stderr
    assert "matches no question key" not in ran.stderr  # the #... columns are comments
    report = json.loads(ran.out)
    assert report["labelled"] == 3  # a, b, c: the review's c overrides the first file's
    merge = report["gates"]["merge"]
    assert (merge["labelled"], merge["agreed"]) == (3, 2)  # c: labelled permit, escalated
    assert merge["outcomes"] == {"hold": {"hold": 1}, "permit": {"needs_input": 1, "permit": 1}}


def test_without_gates_file_a_held_record_is_not_queued_but_an_escalated_one_is(
    tmp_path: Path,
) -> None:
    review = tmp_path / "review.csv"
    ran = run_cli("report", str(_run(tmp_path)), "--review-out", str(review), "--format", "json")
    assert ran.code == 0, ran.stderr
    assert [r[0] for r in _rows(review)] == ["id", "c"]
