"""Gate floors and the accuracy / risk targets of ``report --write-thresholds`` (issue 35 item 4:
"``--write-thresholds`` (and its file, read by ``--thresholds @FILE`` as today) covers noul (both
sides), choice and score confidence floors and gate floors, for a target (precision of a side,
accuracy at a coverage, a maximum risk)")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import error_line, run_cli
from replayed import labelled_noul_run
from toolnexus import NoulAnswer, Policy, Rule
from toolnexus.calibration.oobselect import NOT_ANSWERED, RIGHT, WRONG, oob_selective
from toolnexus.questionfile.load import load_question_set
from toolnexus.report.sweep import at_floor
from toolnexus.styles.recordings import write_recording

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
MERGE = Policy([Rule("addresses_task", "hold", below=0.5)], "permit",
               thresholds={"yes": 0.8, "no": 0.2})  # fmt: skip
#: (p, outcome, how many). At floors up to 0.70 every record is decided, 0.829 of them
#: rightly (coverage 1); at 0.75..0.85 the 0.7s escalate: 0.96 at coverage 250/350; at 0.90
#: and 0.95 the 0.85s too: 1.0 at coverage 200/350.
SAMPLE = [
    (0.95, "permit", 100),
    (0.05, "hold", 100),
    (0.7, "permit", 50),
    (0.7, "hold", 50),
    (0.85, "permit", 40),
    (0.85, "hold", 10),
]


def _gated_run(tmp_path: Path) -> tuple[Path, Path, Path]:
    return labelled_noul_run(tmp_path, QUESTIONS, SAMPLE, digest=False)


def _states(floors: list[int]) -> list[list[int]]:
    """The sample's states at each floor, written out from the rule (no report code)."""
    out = []
    for f in floors:
        line = []
        for p, outcome, n in SAMPLE:
            decided = p >= f / 100 or p <= (100 - f) / 100
            action = "hold" if p < 0.5 else "permit"
            line += [NOT_ANSWERED if not decided else RIGHT if action == outcome else WRONG] * n
        out.append(line)
    return out


FLOORS = list(range(50, 100, 5))


@pytest.mark.parametrize(
    ("target", "floor", "coverage"),
    [
        pytest.param(0.9, 0.75, 250 / 350, id="accuracy-0.9-largest-coverage"),
        pytest.param(0.99, 0.9, 200 / 350, id="accuracy-0.99-fewer-answered"),
        pytest.param(0.8, 0.5, 1.0, id="accuracy-0.8-everything"),
    ],
)
def test_the_floor_is_the_largest_coverage_reaching_the_accuracy(
    target: float, floor: float, coverage: float
) -> None:
    """The brief: "choose the floor that meets accuracy >= A at the largest coverage"; of
    equal coverage the lowest floor."""
    guard = oob_selective(_states(FLOORS), [f / 100 for f in FLOORS], target)
    assert guard.accepted and guard.floor == floor
    assert guard.in_sample_coverage == pytest.approx(coverage)
    assert guard.estimate is not None and guard.estimate >= target
    assert guard.coverage is not None and abs(guard.coverage - coverage) < 0.05
    assert (guard.resamples, guard.seed, guard.min_n) == (200, 0, 5)


def test_risk_words_the_same_floor_as_one_minus_risk() -> None:
    """ "a maximum risk": risk is 1 - accuracy of what is answered, so risk <= 0.1 is accuracy
    >= 0.9: the same floor, said in risk."""
    guard = oob_selective(_states(FLOORS), [f / 100 for f in FLOORS], 0.9)
    assert guard.text(risk=True).startswith("floor 0.75: out-of-bag risk 0.0")
    assert guard.text().startswith("floor 0.75: out-of-bag accuracy 0.9")


def test_the_guard_refuses_what_the_in_sample_estimate_accepts() -> None:
    """Acceptance: "the out-of-bag guard is shown refusing a floor on a small sample that the
    in-sample estimate would accept". Twelve answers: at 0.9 the five answered are right (in
    sample 1.0), but out of bag fewer than min n 5 are ever answered there, and below it the
    accuracy misses 0.9."""
    conf = [0.95, 0.95, 0.93, 0.91, 0.9, 0.8, 0.8, 0.7, 0.7, 0.6, 0.6, 0.55]
    right = [1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 0]
    grid = [0.5, 0.6, 0.7, 0.8, 0.9]
    states = [[(RIGHT if r else WRONG) if c >= f else NOT_ANSWERED
               for c, r in zip(conf, right, strict=True)] for f in grid]  # fmt: skip
    in_sample = [sum(s == RIGHT for s in line) / sum(s != NOT_ANSWERED for s in line)
                 for line in states]  # fmt: skip
    assert in_sample[-1] == 1.0  # 0.9 meets the target on all the rows
    guard = oob_selective(states, grid, 0.9)
    assert not guard.accepted
    assert guard == oob_selective(states, grid, 0.9)  # a fixed seed: the same numbers


def test_write_thresholds_writes_gate_floors_that_batch_and_eval_apply(tmp_path: Path) -> None:
    """Round trip: ``report --gates --write-thresholds`` writes ``gates: {merge: {floor}}`` and
    ``eval``/``batch --thresholds @FILE`` set the gate's cut-points by it (issue 35 item 4)."""
    qpath, run, labels = _gated_run(tmp_path)
    out = tmp_path / "t.yaml"
    ran = run_cli(
        "report", str(run), "--labels", str(labels), "--gates", str(qpath),
        "--target-accuracy", "0.9", "--write-thresholds", str(out), "--format", "json",
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    text = out.read_text("utf-8")
    assert '  "merge":\n    floor: 0.75\n    # floor 0.75: out-of-bag accuracy' in text
    assert "gate 'strict': no floor written: the labels have no column 'strict'" in ran.stderr
    assert '  "addresses_task":\n    yes: ' in text  # the question's symmetric floor too
    # eval and batch read it: 0.78 is uncertain at the file's yes 0.8, decided at 0.75
    _, qs = load_question_set(qpath)
    rec = tmp_path / "rec"
    for state, p in (("edge", 0.78), ("low", 0.1)):
        body = {"model": "m", "answers": {"addresses_task": {"type": "noul", "noul": p}},
                "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
        write_recording(rec, model="m", endpoint="e", state=state, questions=qs, response=body)
    base = ("eval", str(qpath), "--state-text", "edge", "--replay", str(rec), "--format", "json")
    plain = json.loads(run_cli(*base).out)["gates"]["merge"]
    floored = run_cli(*base, "--thresholds", f"@{out}")
    assert floored.code == 0, floored.stderr
    assert plain["action"] == "needs_input"
    want = at_floor(MERGE, 75).decide({"addresses_task": NoulAnswer(0.78)})
    assert json.loads(floored.out)["gates"]["merge"] == {
        "action": want.action, "escalated": want.escalated, "reason": want.reason,
    }  # fmt: skip
    assert want.action == "permit"
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "a", "text": "edge"}\n{"id": "b", "text": "low"}\n', "utf-8")
    batch = run_cli(
        "batch", str(qpath), str(src), "--id-field", "id", "--state-field", "text",
        "--replay", str(rec), "--thresholds", f"@{out}", "-o", str(tmp_path / "o.jsonl"),
        "--ordered",
    )  # fmt: skip
    assert batch.code == 0, batch.stderr
    records = [json.loads(x) for x in (tmp_path / "o.jsonl").read_text("utf-8").splitlines()]
    assert [r["gates"]["merge"]["action"] for r in records] == ["permit", "hold"]


def test_target_risk_writes_the_same_floors_in_words_of_risk(tmp_path: Path) -> None:
    qpath, run, labels = _gated_run(tmp_path)
    out = tmp_path / "t.yaml"
    ran = run_cli(
        "report", str(run), "--labels", str(labels), "--gates", str(qpath),
        "--target-risk", "0.1", "--write-thresholds", str(out), "--format", "json",
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    text = out.read_text("utf-8")
    assert text.startswith("# toolnexus report --target-risk 0.1: per labelled question and per")
    assert '  "merge":\n    floor: 0.75\n    # floor 0.75: out-of-bag risk 0.0' in text


def test_a_missed_target_is_refused_with_the_numbers_and_not_written(tmp_path: Path) -> None:
    qpath, run, labels = _gated_run(tmp_path)
    out = tmp_path / "t.yaml"
    ran = run_cli(
        "report", str(run), "--labels", str(labels), "--gates", str(qpath),
        "--target-accuracy", "1.0", "--floors", "0.5:0.85:0.05",
        "--write-thresholds", str(out), "--format", "json",
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    assert (
        "warning: " in ran.stderr and "gate 'merge': no floor written: only 0 of 200" in ran.stderr
    )
    assert "gates:" not in out.read_text("utf-8")


def test_precision_target_adds_gate_floors_read_as_accuracy(tmp_path: Path) -> None:
    """As for choice and score, ``--target-precision`` is read as a gate's accuracy."""
    qpath, run, labels = _gated_run(tmp_path)
    out = tmp_path / "t.yaml"
    ran = run_cli(
        "report", str(run), "--labels", str(labels), "--gates", str(qpath),
        "--target-precision", "0.9", "--write-thresholds", str(out), "--format", "json",
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    text = out.read_text("utf-8")
    assert "# Per gate: the floor of the largest coverage with the target read as accuracy" in text
    assert text.endswith("\n") and '\ngates:\n  "merge":\n    floor: 0.75\n' in text


@pytest.mark.parametrize(
    ("section", "said"),
    [
        pytest.param("gates:\n  merge: {floor: 0.8}\n  nope: {floor: 0.9}\n",
                     ":4: gate 'nope' is not a gate of", id="unknown-gate"),
        pytest.param("gates:\n  merge: {floor: 0.805}\n",
                     ":3: gate 'merge': floor must be in 0.50..1.00 in hundredths, got 0.805",
                     id="not-hundredths"),
        pytest.param("gates:\n  merge: {floor: 0.3}\n",
                     ":3: gate 'merge': floor must be in 0.50..1.00", id="below-half"),
        pytest.param("gates:\n  merge: {yes: 0.8}\n",
                     ":3: gate 'merge': expected {floor: F}", id="not-a-floor"),
    ],
)  # fmt: skip
def test_a_wrong_gates_section_is_one_line_naming_file_line_and_gate(
    tmp_path: Path, section: str, said: str
) -> None:
    """The brief: "a clear one-line error for a gate name the question file does not define"."""
    qpath, _, _ = _gated_run(tmp_path)
    t = tmp_path / "t.yaml"
    t.write_text("questions: {}\n" + section, "utf-8")
    for command in (
        ("eval", str(qpath), "--state-text", "x"),
        ("batch", str(qpath), "-", "--id-field", "id", "--state-field", "text"),
    ):
        ran = run_cli(*command, "--base-url", "http://127.0.0.1:9/v1", "--thresholds", f"@{t}",
                      input='{"id": "a", "text": "x"}\n')  # fmt: skip
        assert ran.code == 2, ran.stderr
        line = error_line(ran.stderr)
        assert f"--thresholds @{t}{said}" in line
        if "nope" in said:
            assert f"{qpath} (its gates: merge, strict); write the floors again" in line


@pytest.mark.parametrize(
    ("args", "said"),
    [
        pytest.param(("--target-accuracy", "0.9"), "--target-accuracy chooses the floors",
                     id="accuracy-without-file"),
        pytest.param(("--target-accuracy", "1.5", "--write-thresholds", "t.yaml"),
                     "--target-accuracy takes an accuracy in (0, 1], got 1.5", id="range"),
        pytest.param(("--target-accuracy", "0.9", "--target-precision", "0.9",
                      "--write-thresholds", "t.yaml"), "for one target", id="two-targets"),
        pytest.param(("--write-thresholds", "t.yaml"), "needs a target", id="no-target"),
    ],
)  # fmt: skip
def test_target_flags_refuse_with_one_line(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    _, run, labels = _gated_run(tmp_path)
    ran = run_cli("report", str(run), "--labels", str(labels), *args)
    assert ran.code == 2 and said in error_line(ran.stderr)


def test_target_accuracy_writes_a_choice_min_confidence(tmp_path: Path) -> None:
    """Item 4's "choice and score confidence floors" for accuracy at a coverage: right at 0.9,
    wrong at 0.6, so every floor above 0.6 answers the same half; the lowest is written."""
    from calibration.test_oob_floors import _choice_run

    run, labels = _choice_run(tmp_path, "c", [(0.9, True)] * 100 + [(0.6, False)] * 100)
    out = tmp_path / "t.yaml"
    ran = run_cli(
        "report", str(run), "--labels", str(labels), "--target-accuracy", "0.95",
        "--write-thresholds", str(out), "--format", "json",
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    assert (
        '  "desk":\n    min_confidence: 0.65\n    # floor 0.65: out-of-bag accuracy 1 [1, 1] at'
        in (out.read_text("utf-8"))
    )
