"""The steps ``toolnexus batch`` took around a library run are the run's own (issue 30 item 1:
"``cli/batch`` keeps ONLY flags -> RunConfig, the progress display, the summary line and the exit
code; ``run_batch(config)`` does everything ``toolnexus batch`` does"): a thresholds file's gate
floors, ``--review-out``, ``--emit-cases`` and ``--otel`` are ``RunConfig`` fields, and a
library run writes the CLI's bytes for each."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from replayed import replayed_batch
from toolnexus.core.errors import ClassifierError, RunError
from toolnexus.questionfile.thresholds import GateFloor
from toolnexus.run import RunConfig, RunEnded, RunNote, RunProgress, arun_batch, run_batch
from toolnexus.styles.recordings import load_recordings

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
    return replayed_batch(tmp_path, QUESTIONS, STATES)


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


# -- the steps after the run: --review-out and --emit-cases ----------------------------------


def _heard(qpath: Path, src: Path, rec: Path, out: Path, **fields: Any) -> list[Any]:
    """What ``on_progress`` heard in a library run, but the per-record counts."""
    heard: list[Any] = []
    cfg = RunConfig.from_question_file(
        qpath, str(src), classifier=_replaying(rec), id_field="id", state_fields=("text",),
        output=str(out), ordered=True, **fields,
    )  # fmt: skip
    summary = run_batch(cfg, on_progress=heard.append)
    assert summary.exit_code() == 0
    return [e for e in heard if not isinstance(e, RunProgress)]


@pytest.mark.parametrize(
    "flags, fields, files, said",
    [
        pytest.param(("--review-out", "{d}/REVIEW.csv"), {"review_out": "{d}/REVIEW.csv"},
                     ("REVIEW.csv",), ["{d}/REVIEW.csv: 2 records to review"], id="review-out"),
        pytest.param(("--emit-cases", "{d}/CASES.jsonl"), {"emit_cases": "{d}/CASES.jsonl"},
                     ("CASES.jsonl",), ["{d}/CASES.jsonl: 2 golden cases"], id="emit-cases"),
        pytest.param(("--emit-cases", "{d}/CASES.jsonl", "--emit-cases-all"),
                     {"emit_cases": "{d}/CASES.jsonl", "emit_cases_all": True},
                     ("CASES.jsonl",), ["{d}/CASES.jsonl: 3 golden cases"], id="emit-cases-all"),
        pytest.param(("--review-out", "{d}/REVIEW.csv", "--emit-cases", "{d}/CASES.jsonl"),
                     {"review_out": "{d}/REVIEW.csv", "emit_cases": "{d}/CASES.jsonl"},
                     ("REVIEW.csv", "CASES.jsonl"),
                     ["{d}/REVIEW.csv: 2 records to review", "{d}/CASES.jsonl: 2 golden cases"],
                     id="both-in-batchs-order"),
    ],
)  # fmt: skip
def test_a_library_run_writes_the_steps_files_and_lines_of_batch(
    flags: tuple[str, ...],
    fields: dict[str, Any],
    files: tuple[str, ...],
    said: list[str],
    tmp_path: Path,
) -> None:
    """Issue 30 item 1: "``--emit-cases`` / ``--emit-cases-all``, ``--review-out`` ... Make each a
    RunConfig field ... that ``run_batch`` carries out, with the same bytes, messages ... and
    file outputs as the CLI today". The library's notes are ``done`` RunNotes after RunEnded;
    batch prints them after its summary line, as it did."""
    qpath, rec, src = _setup(tmp_path)
    cli_dir, lib_dir = tmp_path / "cli", tmp_path / "lib"
    cli_dir.mkdir()
    lib_dir.mkdir()
    ran = _cli(qpath, src, rec, cli_dir / "out.jsonl", *(f.format(d=cli_dir) for f in flags))
    assert ran.code == 0, ran.stderr
    lines = ran.stderr.splitlines()
    summary_at = next(i for i, x in enumerate(lines) if x.startswith("toolnexus: batch: "))
    assert lines[summary_at + 1 :] == ["toolnexus: " + s.format(d=cli_dir) for s in said]
    heard = _heard(qpath, src, rec, lib_dir / "out.jsonl",
                   **{k: v.format(d=lib_dir) if isinstance(v, str) else v for k, v in
                      fields.items()})  # fmt: skip
    assert isinstance(heard[0], RunEnded)
    assert heard[1:] == [RunNote(s.format(d=lib_dir), "done") for s in said]
    for name in files:
        assert (lib_dir / name).read_bytes() == (cli_dir / name).read_bytes()
    assert (lib_dir / "out.jsonl").read_bytes() == (cli_dir / "out.jsonl").read_bytes()


def test_the_cases_name_the_question_file_and_hold_the_states(tmp_path: Path) -> None:
    """The cases a library run writes are the shape ``pytest --toolnexus-cases`` reads (issue 35
    item 6): the question file relative to the cases file, the state as sent, each gate's
    action."""
    qpath, rec, src = _setup(tmp_path)
    cases = tmp_path / "cases" / "c.jsonl"
    cases.parent.mkdir()
    _heard(qpath, src, rec, tmp_path / "out.jsonl", emit_cases=cases)
    got = [json.loads(x) for x in cases.read_text("utf-8").splitlines()]
    expect = {"gates": {"merge": "needs_input", "strict": "permit"}}
    assert got[0] == {"id": "edge", "questions": "../q.yaml", "state": "edge", "expect": expect}
    assert [c["id"] for c in got] == ["edge", "low"]


def test_a_cancelled_async_run_skips_the_steps_after_it(tmp_path: Path) -> None:
    """Issue 30 item 1: "task cancellation stop[s] the library run as [it stops] the CLI": an
    interrupted ``batch`` writes no review queue and no cases (they would hold a part of the run
    as if it were the whole), so a cancelled ``arun_batch`` re-raises ``CancelledError`` before
    its steps: neither file exists and ``on_progress`` never hears ``RunEnded``. The task is
    cancelled at the first record (a count, not a clock)."""
    qpath, rec, src = _setup(tmp_path)
    review, cases = tmp_path / "REVIEW.csv", tmp_path / "CASES.jsonl"
    cfg = RunConfig.from_question_file(
        qpath, str(src), classifier=_replaying(rec), id_field="id", state_fields=("text",),
        output=str(tmp_path / "out.jsonl"), ordered=True, review_out=str(review),
        emit_cases=str(cases), concurrency=1,
    )  # fmt: skip
    heard: list[Any] = []

    async def cancelled_at_first() -> str:
        task = asyncio.current_task()
        assert task is not None

        def hear(event: Any) -> None:
            heard.append(event)
            if isinstance(event, RunProgress) and event.states == 1:
                task.cancel()

        try:
            await arun_batch(cfg, on_progress=hear)
        except asyncio.CancelledError:
            return "cancelled"
        return "finished"

    assert asyncio.run(cancelled_at_first()) == "cancelled"
    assert not review.exists() and not cases.exists()
    assert not any(isinstance(e, (RunEnded, RunNote)) for e in heard), heard
    # the control: the same run, not cancelled, writes both (so the check above can fail)
    assert run_batch(replace(cfg, resume=True)).exit_code() == 0
    assert review.exists() and cases.exists()


def test_a_step_that_cannot_write_raises_after_the_run_ended(tmp_path: Path) -> None:
    """A step's failure is the run's error, after ``RunEnded``: the records stay, and ``batch``
    prints its summary line and then the one error line, exit 2, as it did."""
    qpath, rec, src = _setup(tmp_path)
    review = tmp_path / "missing" / "r.csv"
    heard: list[Any] = []
    cfg = RunConfig.from_question_file(
        qpath, str(src), classifier=_replaying(rec), id_field="id", state_fields=("text",),
        output=str(tmp_path / "lib.jsonl"), review_out=str(review),
    )  # fmt: skip
    with pytest.raises(ClassifierError) as e:  # report's own error, as batch met it
        run_batch(cfg, on_progress=heard.append)
    said = f"{review}: cannot write: No such file or directory; nothing was written"
    assert str(e.value) == said
    ended = [x for x in heard if isinstance(x, RunEnded)]
    assert len(ended) == 1 and ended[0].summary.ok == 3
    assert len((tmp_path / "lib.jsonl").read_text("utf-8").splitlines()) == 3
    ran = _cli(qpath, src, rec, tmp_path / "cli.jsonl", "--review-out", str(review))
    assert ran.code == 2
    assert ran.stderr.splitlines()[-2].startswith("toolnexus: batch: 3 states, 3 ok")
    assert ran.stderr.splitlines()[-1] == f"toolnexus: {said}"


@pytest.mark.parametrize(
    "fields, said",
    [
        pytest.param({"review_out": "R", "output": None},
                     "--review-out reads the records the run wrote: give -o FILE",
                     id="review-no-o"),
        pytest.param({"emit_cases": "C", "output": None},
                     "--emit-cases reads the records the run wrote: give -o FILE",
                     id="cases-no-o"),
        pytest.param({"emit_cases_all": True}, "--emit-cases-all goes with --emit-cases FILE",
                     id="all-alone"),
        pytest.param({"emit_cases": "C", "inputs": ("IN", "-")}, "--emit-cases reads the inputs "
                     "again for their states: not from stdin (give a file)", id="stdin"),
        pytest.param({"emit_cases": "C", "gates": {}}, "--emit-cases: Q has no gates: a case's "
                     "expected value is each gate's action", id="no-gates"),
        pytest.param({"emit_cases": "C", "questions_path": None}, "--emit-cases: each case names "
                     "its question file: build the run with RunConfig.from_question_file (or "
                     "give questions_path)", id="no-question-file"),
    ],
)  # fmt: skip
def test_what_a_step_cannot_do_is_refused_before_anything_is_sent(
    fields: dict[str, Any], said: str, tmp_path: Path
) -> None:
    """batch's refusals (tests/judge/test_gates_run.py), word for word, from the library; no
    output is created and no request sent."""
    import dataclasses

    qpath, _, src = _setup(tmp_path)
    out = tmp_path / "out.jsonl"
    base = RunConfig.from_question_file(
        qpath, str(src), classifier={"base_url": "http://127.0.0.1:9/v1"}, id_field="id",
        state_fields=("text",), output=str(out),
    )  # fmt: skip
    names = {"R": str(tmp_path / "r.csv"), "C": str(tmp_path / "c.jsonl"), "IN": str(src)}
    given = {k: names.get(v, v) if isinstance(v, str) else v for k, v in fields.items()}
    if "inputs" in given:
        given["inputs"] = tuple(names.get(x, x) for x in given["inputs"])
    with pytest.raises(RunError) as e:
        run_batch(dataclasses.replace(base, **given))
    assert str(e.value) == said.replace("Q", str(qpath))
    assert not out.exists() and not (tmp_path / "c.jsonl").exists()
    assert not (tmp_path / "r.csv").exists()


# -- --otel: the run's span ------------------------------------------------------------------

_LIBRARY_RUNS = """\
import os, sys
from toolnexus.run import RunConfig, run_batch
def run(out, otel):
    cfg = RunConfig.from_question_file(sys.argv[1], sys.argv[2], output=out, otel=otel,
                                       classifier={"base_url": sys.argv[3]}, id_field="id",
                                       state_fields=("text",))
    assert run_batch(cfg).exit_code() == 0
run(sys.argv[4], False)
print("imported when off:", "opentelemetry" in sys.modules, flush=True)
os.environ["OTEL_TRACES_EXPORTER"] = "console"  # where the SDK's configurator exports to
run(sys.argv[5], True)
"""


def test_a_library_run_opens_batchs_run_span(tmp_path: Path) -> None:
    """Issue 30 item 1: "``--otel`` (the run span around a run)" is ``RunConfig(otel=True)``:
    ``run_batch`` in a script makes the span tree ``batch --otel`` makes (tests/run/
    test_batch_otel.py), flushed at its end; off (and no ``OTEL_*`` exporter set),
    "OpenTelemetry stays an optional extra": nothing of it is imported."""
    import subprocess
    import sys

    pytest.importorskip("opentelemetry.sdk", reason="platform: opentelemetry-sdk is not installed")
    from test_batch_otel import _check_tree, _env, _files, _spans

    from loopback import Loopback

    q, inp = _files(tmp_path, 4)
    with Loopback() as server:
        outs = [str(tmp_path / "off.jsonl"), str(tmp_path / "on.jsonl")]
        done = subprocess.run(
            [sys.executable, "-c", _LIBRARY_RUNS, str(q), str(inp), server.base_url, *outs],
            capture_output=True, text=True, env=_env(OTEL_TRACES_EXPORTER="none"), timeout=60,
        )  # fmt: skip
        assert server.total == 8
    assert done.returncode == 0, done.stderr
    said, spans = done.stdout.split("\n", 1)
    assert said == "imported when off: False"
    _check_tree(_spans(spans), 4)


_WITHOUT = """\
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None  # what an environment without that distribution gives: ImportError
sys.argv = ["toolnexus", *sys.argv[2:]]
from toolnexus.cli import main
main()
"""


@pytest.mark.parametrize(
    "missing, said",
    [
        pytest.param("opentelemetry", "--otel needs opentelemetry-api: pip install "
                     "'toolnexus-classifier[otel]'", id="no-api"),
        pytest.param("opentelemetry.sdk,opentelemetry.sdk._configuration", "--otel needs "
                     "opentelemetry-sdk and an exporter: pip install 'toolnexus-classifier[otel]' "
                     "opentelemetry-sdk", id="no-sdk"),
    ],
)  # fmt: skip
def test_otel_without_the_extra_is_one_line_naming_it(
    missing: str, said: str, tmp_path: Path
) -> None:
    """OpenTelemetry stays an optional extra: ``RunConfig(otel=True)`` (``batch --otel``) in an
    environment without the API or the SDK is one line naming the extra, exit 2, no traceback,
    before any output is created: from the library (a ``RunError``) and from ``batch``."""
    import subprocess
    import sys

    qpath, rec, src = _setup(tmp_path)
    out = tmp_path / "out.jsonl"
    ran = subprocess.run(
        [sys.executable, "-c", _WITHOUT, missing, "batch", str(qpath), str(src), "--id-field",
         "id", "--state-field", "text", "--replay", str(rec), "-o", str(out), "--otel"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (ran.returncode, ran.stderr) == (2, f"toolnexus: {said}\n")
    assert not out.exists()
    lib = (
        "import sys\nfor n in sys.argv[1].split(','): sys.modules[n] = None\n"
        "from toolnexus.core.errors import RunError\n"
        "from toolnexus.run.otel import prepare_telemetry\n"
        "try:\n    prepare_telemetry(True)\nexcept RunError as e:\n    print(e)\n"
    )
    ran = subprocess.run([sys.executable, "-c", lib, missing], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, said + "\n", "")
