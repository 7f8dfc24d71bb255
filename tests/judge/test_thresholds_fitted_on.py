"""Issue 42 item 3: "A run is judged against any question file." ``report --gates`` and
``eval``/``batch --thresholds @FILE`` refuse a rule or a cut-point naming a question absent from
the run or the file, and warn in one line, with both digests, when the file is not the run's; a
thresholds file records the digest and the exact wording of each question it was fitted on, and
a file written before that still loads, with one line saying it cannot be checked."""

from __future__ import annotations

from pathlib import Path

from clirun import error_line, run_cli
from replayed import labelled_noul_run
from toolnexus.core.canonical import questions_sha256
from toolnexus.questionfile.load import load_question_set
from toolnexus.styles.recordings import write_recording

WORDING = "Does the change address the task?"
QUESTIONS = f"""\
model: m
questions:
  addresses_task: {{type: noul, instructions: {WORDING}}}
gates:
  merge:
    rules:
      - {{question: addresses_task, below: 0.5, action: hold}}
    default: permit
    thresholds: {{"yes": 0.8, "no": 0.2}}
"""
#: The same key, reworded: another question set.
REWORDED = QUESTIONS.replace(WORDING, "Does the change do what was asked?")
#: Another question file whose gate reads a question the run never answered.
OTHER = """\
questions:
  tests_pass: {type: noul, instructions: Do the tests pass?}
gates:
  ci:
    rules:
      - {question: tests_pass, below: 0.5, action: hold}
    default: permit
"""
SAMPLE = [(0.95, "permit", 30), (0.05, "hold", 30), (0.7, "permit", 10), (0.7, "hold", 2)]


def _run(tmp_path: Path) -> tuple[Path, Path, Path]:
    return labelled_noul_run(tmp_path, QUESTIONS, SAMPLE)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, "utf-8")
    return path


def test_report_refuses_gates_reading_a_question_the_run_never_answered(tmp_path: Path) -> None:
    """Issue 42 item 3: "report RUN --gates Q.yaml sweeps silently when a gate's rule names a
    question no record has (every row reads 'held 100%, caught by confidence')"."""
    _, run, labels = _run(tmp_path)
    other = _write(tmp_path, "other.yaml", OTHER)
    ran = run_cli("report", str(run), "--labels", str(labels), "--gates", str(other))
    assert ran.code == 2, ran.stderr
    line = error_line(ran.stderr)
    assert line.startswith(f"{other}: gate 'ci': rule 0 reads question 'tests_pass', which no ")
    assert "(its questions: addresses_task)" in line


def test_report_warns_with_both_digests_when_the_gates_file_is_not_the_runs(
    tmp_path: Path,
) -> None:
    """Issue 42 item 3: "... and accepts a file whose instructions were edited since the run"."""
    qpath, run, labels = _run(tmp_path)
    reworded = _write(tmp_path, "reworded.yaml", REWORDED)
    _, qs = load_question_set(qpath)
    _, qs2 = load_question_set(reworded)
    ran = run_cli("report", str(run), "--labels", str(labels), "--gates", str(reworded),
                  "--format", "json")  # fmt: skip
    assert ran.code == 0, ran.stderr
    warned = [x for x in ran.stderr.splitlines() if "question-set digest" in x]
    assert len(warned) == 1
    assert questions_sha256(qs) in warned[0] and questions_sha256(qs2) in warned[0]
    same = run_cli("report", str(run), "--labels", str(labels), "--gates", str(qpath),
                   "--format", "json")  # fmt: skip
    assert same.code == 0 and "question-set digest" not in same.stderr


def _fit(tmp_path: Path, *extra: str) -> Path:
    _, run, labels = _run(tmp_path)
    out = tmp_path / "t.yaml"
    ran = run_cli("report", str(run), "--labels", str(labels), "--target-accuracy", "0.9",
                  "--write-thresholds", str(out), "--format", "json", *extra)  # fmt: skip
    assert ran.code == 0, ran.stderr
    return out


def _eval(tmp_path: Path, qpath: Path, t: Path) -> tuple[int, str]:
    """eval against a recording (no network); the answer is asked of ``qpath``'s questions."""
    _, qs = load_question_set(qpath)
    rec = tmp_path / f"rec-{qpath.stem}"
    body = {"model": "m", "answers": {"addresses_task": {"type": "noul", "noul": 0.9}},
            "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    write_recording(rec, model="m", endpoint="e", state="x", questions=qs, response=body)
    ran = run_cli("eval", str(qpath), "--state-text", "x", "--replay", str(rec),
                  "--format", "json", "--thresholds", f"@{t}")  # fmt: skip
    return ran.code, ran.stderr


def test_a_thresholds_file_records_its_question_set_and_eval_warns_by_key(
    tmp_path: Path,
) -> None:
    """Issue 42 item 3: "A thresholds file records the question file's digest and the exact
    wording of each question it was fitted on; eval/batch --thresholds @FILE warn by key when
    the wording changed", with both digests."""
    out = _fit(tmp_path, "--questions", str(tmp_path / "q.yaml"))
    qpath = tmp_path / "q.yaml"
    _, qs = load_question_set(qpath)
    text = out.read_text("utf-8")
    assert f'questions_sha256: "{questions_sha256(qs)}"' in text
    assert f'wording:\n  "addresses_task": "{WORDING}"\n' in text
    code, stderr = _eval(tmp_path, qpath, out)
    assert code == 0 and "warning" not in stderr, stderr
    reworded = _write(tmp_path, "reworded.yaml", REWORDED)
    code, stderr = _eval(tmp_path, reworded, out)
    assert code == 0, stderr
    warned = [x for x in stderr.splitlines() if x.startswith("toolnexus: warning:")]
    assert len(warned) == 2, stderr
    _, qs2 = load_question_set(reworded)
    assert questions_sha256(qs) in warned[0] and questions_sha256(qs2) in warned[0]
    assert "question 'addresses_task': its wording changed since" in warned[1]
    assert WORDING in warned[1]


def test_a_cut_point_for_a_question_the_file_lacks_is_refused(tmp_path: Path) -> None:
    """Issue 42 item 3: eval/batch --thresholds @FILE "refuse a rule or a cut-point naming a
    question absent from ... the file (as an unknown gate is refused today)"; before anything
    is sent (the base URL is a closed port)."""
    qpath, _, _ = _run(tmp_path)
    t = _write(tmp_path, "t.yaml", 'questions:\n  tests_pass: {"yes": 0.9, "no": 0.1}\n')
    for command in (
        ("eval", str(qpath), "--state-text", "x"),
        ("batch", str(qpath), "-", "--id-field", "id", "--state-field", "text"),
    ):
        ran = run_cli(*command, "--base-url", "http://127.0.0.1:9/v1", "--thresholds", f"@{t}",
                      input='{"id": "a", "text": "x"}\n')  # fmt: skip
        assert ran.code == 2, ran.stderr
        line = error_line(ran.stderr)
        assert line.startswith(f"--thresholds @{t}:2: question 'tests_pass' is not a question")
        assert f"of {qpath} (its questions: addresses_task)" in line


def test_a_thresholds_file_from_before_still_loads_with_one_line(tmp_path: Path) -> None:
    """Issue 42 item 3: "A thresholds file written before this change still loads, with one
    line saying it cannot be checked"."""
    qpath, _, _ = _run(tmp_path)
    old = _write(tmp_path, "old.yaml", 'questions:\n  "addresses_task":\n    yes: 0.75\n')
    code, stderr = _eval(tmp_path, qpath, old)
    assert code == 0, stderr
    warned = [x for x in stderr.splitlines() if x.startswith("toolnexus: warning:")]
    assert len(warned) == 1 and "cannot be checked" in warned[0]


def test_write_thresholds_refuses_a_questions_file_that_is_not_the_runs(tmp_path: Path) -> None:
    """The wording recorded must be the run's: another file's would vouch for other questions."""
    _, run, labels = _run(tmp_path)
    reworded = _write(tmp_path, "reworded.yaml", REWORDED)
    out = tmp_path / "t.yaml"
    ran = run_cli("report", str(run), "--labels", str(labels), "--target-accuracy", "0.9",
                  "--write-thresholds", str(out), "--questions", str(reworded))  # fmt: skip
    assert ran.code == 2
    assert ran.stderr.splitlines()[-1].startswith(f"toolnexus: {reworded}: question-set digest ")
    assert not out.exists()
