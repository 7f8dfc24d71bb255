"""The steps ``toolnexus batch`` took around a library run are the run's own (issue 30 item 1:
"``cli/batch`` keeps ONLY flags -> RunConfig, the progress display, the summary line and the exit
code; ``run_batch(config)`` does everything ``toolnexus batch`` does"): a thresholds file's gate
floors, ``--review-out``, ``--emit-cases`` and ``--otel`` are ``RunConfig`` fields, and a
library run writes the CLI's bytes for each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from toolnexus.errors import RunError
from toolnexus.questionfile.thresholds import GateFloor
from toolnexus.recordings import load_recordings, write_recording
from toolnexus.run import RunConfig, run_batch

QUESTIONS = """\
model: m
questions:
  addresses_task: {type: noul, instructions: Does the change address the task?}
gates:
  merge:
    rules:
      - {question: addresses_task, below: 0.5, action: hold}
    default: permit
    thresholds: {"yes": 0.8, "no": 0.2}
  strict:
    rules:
      - {question: addresses_task, below: 0.5, action: hold}
    default: permit
"""
#: state -> the recorded noul: 0.78 is uncertain at the gate's yes 0.8 and decided at a 0.75
#: floor; 0.1 holds either way; 0.95 permits either way.
STATES = {"edge": 0.78, "low": 0.1, "high": 0.95}


def _setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The question file, a replay directory answering every state, and the inputs."""
    from toolnexus.cli.questionfile import load_question_set

    qpath = tmp_path / "q.yaml"
    qpath.write_text(QUESTIONS, "utf-8")
    _, qs = load_question_set(qpath)
    rec = tmp_path / "rec"
    for state, p in STATES.items():
        body = {"model": "m", "answers": {"addresses_task": {"type": "noul", "noul": p}},
                "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
        write_recording(rec, model="m", endpoint="e", state=state, questions=qs, response=body)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": s, "text": s}) + "\n" for s in STATES), "utf-8")
    return qpath, rec, src


def _replaying(rec: Path) -> dict[str, Any]:
    """``create_classifier`` options of ``--replay REC`` (what ``cli/backend`` builds)."""
    decisions = [r.to_recorded_decision() for r in load_recordings(rec) if r.askable()]
    return {"style": "static", "model": "m", "decisions": decisions}


def _cli(qpath: Path, src: Path, rec: Path, out: Path, *more: str) -> Any:
    return run_cli(
        "batch", str(qpath), str(src), "--id-field", "id", "--state-field", "text",
        "--replay", str(rec), "-o", str(out), "--ordered", *more,
    )  # fmt: skip


def _lib(qpath: Path, src: Path, rec: Path, out: Path, **fields: Any) -> Any:
    cfg = RunConfig.from_question_file(
        qpath, str(src), classifier=_replaying(rec), id_field="id", state_fields=("text",),
        output=str(out), ordered=True, **fields,
    )  # fmt: skip
    return run_batch(cfg)


def _actions(out: Path) -> list[str]:
    return [json.loads(x)["gates"]["merge"]["action"] for x in out.read_text("utf-8").splitlines()]


# -- a thresholds file's gate floors ---------------------------------------------------------


@pytest.mark.parametrize(
    "how",
    [
        pytest.param("file", id="from_question_file-thresholds-file"),
        pytest.param("floors", id="gate_floors-field"),
    ],
)
def test_a_thresholds_files_gate_floors_gate_a_library_run_as_batch(
    how: str, tmp_path: Path
) -> None:
    """Issue 30 item 1: "a thresholds file's gate floors ... ``RunConfig.from_question_file(path,
    inputs, thresholds=...)`` must apply them too, so a script gets the same gates": the same
    records, byte for byte, as ``batch --thresholds @FILE`` (issue 35 item 4's round trip)."""
    qpath, rec, src = _setup(tmp_path)
    t = tmp_path / "t.yaml"
    t.write_text("gates:\n  merge: {floor: 0.75}\n", "utf-8")
    ran = _cli(qpath, src, rec, tmp_path / "cli.jsonl", "--thresholds", f"@{t}")
    assert ran.code == 0, ran.stderr
    fields: dict[str, Any] = (
        {"thresholds": t} if how == "file" else {"gate_floors": {"merge": 0.75}}
    )
    summary = _lib(qpath, src, rec, tmp_path / "lib.jsonl", **fields)
    assert summary.exit_code() == ran.code
    assert (tmp_path / "lib.jsonl").read_bytes() == (tmp_path / "cli.jsonl").read_bytes()
    # without the floor, 0.78 is uncertain at the gate's own yes 0.8
    assert _actions(tmp_path / "lib.jsonl") == ["permit", "hold", "permit"]
    _lib(qpath, src, rec, tmp_path / "plain.jsonl")
    assert _actions(tmp_path / "plain.jsonl") == ["needs_input", "hold", "permit"]


@pytest.mark.parametrize(
    "floors, said",
    [
        pytest.param({"nope": 0.75}, "gate_floors: gate 'nope' is not a gate of {q} (its gates: "
                     "merge, strict); write the floors again with report --gates {q}",
                     id="unknown-gate"),
        pytest.param({"merge": 0.755}, "gate_floors: gate 'merge': floor must be in 0.50..1.00 "
                     "in hundredths, got 0.755", id="not-hundredths"),
        pytest.param({"merge": 0.4}, "gate_floors: gate 'merge': floor must be in 0.50..1.00 "
                     "in hundredths, got 0.4", id="below-half"),
    ],
)  # fmt: skip
def test_a_wrong_gate_floor_is_one_line_before_anything_is_sent(
    floors: dict[str, float], said: str, tmp_path: Path
) -> None:
    """The CLI's lines for a wrong ``gates:`` floor (tests/judge/test_gate_floors.py), named by
    the field a script gave; no output is left behind."""
    qpath, rec, src = _setup(tmp_path)
    out = tmp_path / "out.jsonl"
    with pytest.raises(RunError) as e:
        _lib(qpath, src, rec, out, gate_floors=floors)
    assert str(e.value) == said.format(q=qpath)
    assert e.value.exit_code == 2
    assert not out.exists()


def test_gate_floors_are_parsed_and_frozen(tmp_path: Path) -> None:
    """ "Make each a RunConfig field (typed, parsed, frozen)": a floor given as a number is a
    ``GateFloor`` in hundredths."""
    qpath, _, src = _setup(tmp_path)
    cfg = RunConfig.from_question_file(qpath, str(src), gate_floors={"merge": 0.75})
    assert cfg.gate_floors == {"merge": GateFloor(75, "gate_floors")}
    t = tmp_path / "t.yaml"
    t.write_text("yes: 0.7\ngates:\n  merge: {floor: 0.9}\n", "utf-8")
    cfg = RunConfig.from_question_file(qpath, str(src), thresholds=str(t))
    assert cfg.gate_floors == {"merge": GateFloor(90, f"--thresholds @{t}:3")}
    assert cfg.thresholds == {"yes": 0.7}
    assert cfg.floored_gates()["merge"].thresholds == {"yes": 0.9, "no": 0.1,
                                                         "min_confidence": 0.9}  # fmt: skip
