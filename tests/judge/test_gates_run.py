"""``eval`` and ``batch`` apply every gate of the question file (issue 35 item 2: "records
carry each gate's action, whether it escalated, and the reason (tables show them)")."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from clirun import error_line, run_cli
from toolnexus.questionfile.load import load_question_set
from toolnexus.records.csvcodec import (
    CsvCodec,
    read_csv_header,
)
from toolnexus.styles.recordings import write_recording

QUESTIONS = """\
model: m
questions:
  addresses_task: {type: noul, instructions: Does the change address the task?}
  needs_clarification: {type: noul, instructions: Does the task need clarification?}
gates:
  merge:
    rules:
      - {question: addresses_task, below: 0.5, action: hold}
      - {question: needs_clarification, at_least: 0.5, action: clarify}
    default: permit
    thresholds: {"yes": 0.8, "no": 0.2}
  strict:
    rules:
      - {question: addresses_task, below: 0.5, action: hold}
"""
#: state -> (addresses_task, needs_clarification), and what each gate must say of it
STATES: dict[str, tuple[float, float]] = {
    "good": (0.8, 0.2),  # at both inclusive cuts: permit; strict: bands say 0.8 > 0.7 yes
    "bad": (0.1, 0.1),
    "vague": (0.9, 0.85),
    "unsure": (0.5, 0.1),
}
WANT = {
    "good": {
        "merge": {"action": "permit", "escalated": False, "reason": "no rule fired"},
        "strict": {"action": "needs_input", "escalated": True, "reason": "no rule fired"},
    },
    "bad": {
        "merge": {"action": "hold", "escalated": False, "reason": '"addresses_task" below 0.5'},
        "strict": {"action": "hold", "escalated": False, "reason": '"addresses_task" below 0.5'},
    },
    "vague": {
        "merge": {
            "action": "clarify",
            "escalated": False,
            "reason": '"needs_clarification" at_least 0.5',
        },
        "strict": {"action": "needs_input", "escalated": True, "reason": "no rule fired"},
    },
    "unsure": {
        "merge": {
            "action": "needs_input",
            "escalated": True,
            "reason": 'uncertain answer "addresses_task"',
        },
        "strict": {
            "action": "needs_input",
            "escalated": True,
            "reason": 'uncertain answer "addresses_task"',
        },
    },
}


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    qpath = tmp_path / "q.yaml"
    qpath.write_text(QUESTIONS, "utf-8")
    _, qs = load_question_set(qpath)
    rec = tmp_path / "rec"
    for state, (a, n) in STATES.items():
        body = {
            "model": "m",
            "answers": {
                "addresses_task": {"type": "noul", "noul": a},
                "needs_clarification": {"type": "noul", "noul": n},
            },
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        write_recording(rec, model="m", endpoint="e", state=state, questions=qs, response=body)
    return qpath, rec


@pytest.mark.parametrize("state", list(STATES))
def test_eval_records_and_shows_every_gate(tmp_path: Path, state: str) -> None:
    qpath, rec = _setup(tmp_path)
    ran = run_cli(
        "eval", str(qpath), "--state-text", state, "--replay", str(rec), "--format", "json"
    )
    assert ran.code == 0, ran.stderr
    record = json.loads(ran.out)
    assert record["gates"] == WANT[state]
    assert list(record)[-1] == "gates"  # after invalid: records without gates keep their bytes
    table = run_cli(
        "eval", str(qpath), "--state-text", state, "--replay", str(rec), "--format", "table"
    )
    for name, g in WANT[state].items():
        said = "escalated: " if g["escalated"] else ""
        assert f"gate {name}: {g['action']} ({said}{g['reason']})" in table.out


def test_a_file_without_gates_writes_no_gates_key(tmp_path: Path) -> None:
    _, rec = _setup(tmp_path)
    plain = tmp_path / "plain.yaml"
    plain.write_text(QUESTIONS.split("gates:")[0], "utf-8")
    ran = run_cli(
        "eval", str(plain), "--state-text", "bad", "--replay", str(rec), "--format", "json"
    )
    assert ran.code == 0, ran.stderr
    assert "gates" not in json.loads(ran.out)


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_batch_records_carry_every_gate_and_read_back(tmp_path: Path, fmt: str) -> None:
    qpath, rec = _setup(tmp_path)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": s, "text": s}) + "\n" for s in STATES), "utf-8")
    out = tmp_path / f"out.{fmt}"
    ran = run_cli(
        "batch", str(qpath), str(src), "--id-field", "id", "--state-field", "text",
        "--replay", str(rec), "--format", fmt, "--output", str(out), "--ordered",
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    got: dict[str, Any] = {}
    if fmt == "parquet":  # no column of its own: kept in extra, read back whole
        from toolnexus.report.runs import iter_records

        got = {obj["id"]: obj["gates"] for _, obj in iter_records(str(out))}
        assert got == WANT
        return
    lines = out.read_bytes().splitlines()
    if fmt == "jsonl":
        for line in lines:
            obj = json.loads(line)
            got[obj["id"]] = obj["gates"]
    else:
        header = read_csv_header(next(csv.reader([lines[0].decode("utf-8")])))
        assert "gates.merge.escalated" in header
        codec = CsvCodec(header)
        for line in lines[1:]:
            record = codec.decode(line)
            assert record is not None
            got[str(record.id)] = record.to_object()["gates"]
    assert got == WANT


def test_batch_review_out_queues_what_the_gates_held_or_escalated(tmp_path: Path) -> None:
    """Issue 35 item 6: "``batch --review-out FILE`` ... writes the records a gate escalated or
    held ... as a CSV a person can open"."""
    qpath, rec = _setup(tmp_path)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": s, "text": s}) + "\n" for s in STATES), "utf-8")
    review = tmp_path / "review.csv"
    base = ["batch", str(qpath), str(src), "--id-field", "id", "--state-field", "text"]
    refused = run_cli(*base, "--replay", str(rec), "--review-out", str(review))
    assert refused.code == 2 and "give -o FILE" in refused.stderr
    ran = run_cli(
        *base, "--replay", str(rec), "-o", str(tmp_path / "out.jsonl"), "--ordered",
        "--review-out", str(review),
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    assert f"{review}: 4 records to review" in ran.stderr
    with review.open(encoding="utf-8", newline="") as f:
        rows = {r[0]: r for r in csv.reader(f)}
    assert rows["good"][1] == "strict escalated"
    assert rows["bad"][1] == "merge held; strict held"
    assert rows["unsure"][1].startswith("merge escalated; strict escalated")
    assert rows["id"][-4:] == ["addresses_task", "needs_clarification", "merge", "strict"]


def test_batch_emit_cases_writes_the_queue_as_golden_cases(tmp_path: Path) -> None:
    """Issue 35 item 6: "``--emit-cases FILE`` writes golden cases (state, questions, expected
    action) for regression tests": one JSONL line per record the review queue would hold
    (``--emit-cases-all``: every record), ``{"id", "questions", "state", "expect": {"gates":
    {GATE: ACTION}}}`` with the question file relative to the cases file, the shape ``pytest
    --toolnexus-cases`` reads."""
    _, rec = _setup(tmp_path)
    only_merge = tmp_path / "merge.yaml"
    only_merge.write_text(QUESTIONS.split("  strict:")[0], "utf-8")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": s, "text": s}) + "\n" for s in STATES), "utf-8")
    cases = tmp_path / "cases.jsonl"
    base = ["batch", str(only_merge), str(src), "--id-field", "id", "--state-field", "text",
            "--replay", str(rec), "--ordered"]  # fmt: skip
    ran = run_cli(*base, "-o", str(tmp_path / "out.jsonl"), "--emit-cases", str(cases))
    assert ran.code == 0, ran.stderr
    got = [json.loads(line) for line in cases.read_text("utf-8").splitlines()]
    # good is permitted with certain answers: not queued; the others are held or escalated
    assert got == [
        {"id": s, "questions": "merge.yaml", "state": s,
         "expect": {"gates": {"merge": WANT[s]["merge"]["action"]}}}
        for s in ("bad", "vague", "unsure")
    ]  # fmt: skip
    assert f"{cases}: 3 golden cases" in ran.stderr
    ran = run_cli(*base, "-o", str(tmp_path / "all.jsonl"), "--emit-cases", str(cases),
                  "--emit-cases-all")  # fmt: skip
    assert ran.code == 0, ran.stderr
    assert [json.loads(line)["id"] for line in cases.read_text("utf-8").splitlines()] == list(
        STATES
    )


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        pytest.param(("--emit-cases", "C"), "give -o FILE", id="no-output"),
        pytest.param(("-o", "O", "--emit-cases-all"), "goes with --emit-cases", id="all-alone"),
        pytest.param(("-o", "O", "--emit-cases", "C", "STDIN"), "not from stdin", id="stdin"),
        pytest.param(("-o", "O", "--emit-cases", "C", "NOGATES"), "has no gates", id="no-gates"),
    ],
)
def test_batch_emit_cases_refusals_are_one_line(
    tmp_path: Path, extra: tuple[str, ...], fragment: str
) -> None:
    qpath, rec = _setup(tmp_path)
    plain = tmp_path / "plain.yaml"
    plain.write_text(QUESTIONS.split("gates:")[0], "utf-8")
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "good", "text": "good"}) + "\n", "utf-8")
    names = {"C": str(tmp_path / "c.jsonl"), "O": str(tmp_path / "o.jsonl")}
    questions = plain if "NOGATES" in extra else qpath
    inputs = [str(src), "-"] if "STDIN" in extra else [str(src)]
    args = [names.get(a, a) for a in extra if a not in ("STDIN", "NOGATES")]
    ran = run_cli("batch", str(questions), *inputs, "--id-field", "id", "--state-field", "text",
                  "--replay", str(rec), *args)  # fmt: skip
    assert ran.code == 2, ran.stderr
    assert fragment in error_line(ran.stderr)
    assert not (tmp_path / "o.jsonl").exists()
