"""Issue 31 items 2, 3, 11 and 18: the documented recovery after each kind of stop, against a
``toolnexus serve --script`` backend (``HostileServer``).

Item 2: "A state of a stopped run that was never sent gets no record (a per-line input error
keeps its record, as today); a resumed run's summary counts the error records already in the
output and says how to retry them, and it exits with the code the worst remaining record
implies (3 for a backend error, 2 for an input error), never 0. With fewer than 100 lines and
none having the field, the run does not stop either (one error record per line)."
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from clirun import error_line, run_cli
from hostile_server import HostileServer, Reply, qfile_fixture, server_fixture, valid_answer

KEY = "tn-recovery-key-0123456789"
QUESTIONS = "questions:\n  q: {type: noul, instructions: Is it so?}\n"

server = server_fixture(KEY)
qfile = qfile_fixture(QUESTIONS)


def _ok(req: Any) -> Reply:
    return Reply(200, json.dumps(valid_answer(req.json)).encode())


def _rejected(req: Any) -> Reply:
    return Reply(401, b'{"error": {"message": "invalid api key"}}')


def _inputs(path: Path, n: int, field: str = "text") -> Path:
    path.write_text("".join(json.dumps({"id": f"s{i}", field: f"t{i}"}) + "\n"
                            for i in range(n)))  # fmt: skip
    return path


def _batch(server: HostileServer, qfile: Path, inp: Path, out: Path, *extra: str,
           field: str = "text") -> Any:  # fmt: skip
    return run_cli(
        "batch", str(qfile), str(inp), "--id-field", "id", "--state-field", field,
        "--base-url", server.base_url, "--retries", "0", "-o", str(out), *extra,
    )  # fmt: skip


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_after_a_fail_fast_stop_resume_counts_the_errors_left_and_exits_3(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    """Item 2: a rejected key stops the run (exit 4); only the states sent have a record; the
    fixed ``--resume`` reports the error records still in the output and exits 3, not 0; and
    ``--retry-errors`` then finishes the run with exit 0."""
    inp, out = _inputs(tmp_path / "in.jsonl", 40), tmp_path / "out.jsonl"
    server.answer = _rejected
    stopped = _batch(server, qfile, inp, out)
    assert stopped.code == 4, stopped.stderr
    assert len(_lines(out)) == len(server.seen)  # never sent: no record
    errors = len(server.seen)
    assert "--resume --retry-errors" in stopped.stderr

    server.answer = _ok
    resumed = _batch(server, qfile, inp, out, "--resume")
    assert resumed.code == 3, resumed.stderr
    assert f"{errors} error records already in the output (backend_http {errors}): re-run " \
           "them with --retry-errors" in resumed.stderr  # fmt: skip
    retried = _batch(server, qfile, inp, out, "--resume", "--retry-errors")
    assert retried.code == 0, retried.stderr
    assert "error records already" not in retried.stderr
    records = _lines(out)
    assert len(records) == 40 and not any("error" in r for r in records)


def test_a_misspelled_state_field_keeps_its_input_errors_and_resume_exits_2(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    """Item 2: "a misspelled --state-field on 2,000 lines (exit 4, 'nothing was sent', yet 99
    error records are written) ... --resume prints '1901 ok, 0 failed', exits 0"."""
    inp, out = _inputs(tmp_path / "in.jsonl", 150), tmp_path / "out.jsonl"
    server.answer = _ok
    stopped = _batch(server, qfile, inp, out, field="txt")
    assert stopped.code == 4, stopped.stderr
    assert not server.seen
    kept = len(_lines(out))
    assert kept and all(r["error"]["code"] == "malformed_input" for r in _lines(out))
    resumed = _batch(server, qfile, inp, out, "--resume")
    assert resumed.code == 2, resumed.stderr
    assert f"{kept} error records already in the output (malformed_input {kept})" in \
           resumed.stderr  # fmt: skip


def test_a_short_input_without_the_field_writes_one_error_per_line_and_does_not_stop(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    """Item 2: "With fewer than 100 lines and none having the field, the run does not stop
    either (one error record per line)"."""
    inp, out = _inputs(tmp_path / "in.jsonl", 20), tmp_path / "out.jsonl"
    ran = _batch(server, qfile, inp, out, field="txt")
    assert ran.code == 2, ran.stderr
    assert "stopped" not in ran.stderr
    assert [r["error"]["code"] for r in _lines(out)] == ["malformed_input"] * 20


@pytest.mark.parametrize(
    "content",
    [pytest.param(None, id="missing"), pytest.param(b"", id="empty")],
)
def test_retry_errors_on_an_output_with_no_records_is_refused_and_writes_nothing(
    server: HostileServer, qfile: Path, tmp_path: Path, content: bytes | None
) -> None:
    """Item 3: "--retry-errors on a missing or empty output prints '40 skipped (already in the
    output)', exits 0 and writes an empty file"."""
    inp, out = _inputs(tmp_path / "in.jsonl", 40), tmp_path / "out.jsonl"
    if content is not None:
        out.write_bytes(content)
    ran = _batch(server, qfile, inp, out, "--retry-errors")
    assert ran.code == 2
    line = error_line(ran.stderr)
    assert "holds no records" in line and "skipped" not in line
    assert out.exists() == (content is not None)
    assert not server.seen


def test_retry_errors_alone_does_not_call_unsent_states_already_in_the_output(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    """Item 3: the honest count: states the output has no record of were not sent, and are
    not "already in the output"."""
    inp, out = _inputs(tmp_path / "in.jsonl", 5), tmp_path / "out.jsonl"
    _inputs(tmp_path / "two.jsonl", 2)
    assert _batch(server, qfile, tmp_path / "two.jsonl", out).code == 0
    ran = _batch(server, qfile, inp, out, "--retry-errors")
    assert ran.code == 0, ran.stderr
    assert "2 skipped (already in the output)" in ran.stderr
    assert "3 not in the output" in ran.stderr and "add --resume" in ran.stderr


# --- item 18: a refused run leaves no file ---------------------------------------------------


def test_an_unset_key_leaves_no_empty_output_file(
    qfile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 18: "A refused run leaves a 0-byte -o file (unset key; ...)"."""
    monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    monkeypatch.delenv("TYPESAFE_BASE_URL", raising=False)
    out = tmp_path / "out.jsonl"
    ran = run_cli("batch", str(qfile), str(_inputs(tmp_path / "in.jsonl", 3)), "--id-field", "id",
                  "--state-field", "text", "-o", str(out))  # fmt: skip
    assert ran.code == 2
    assert "$TYPESAFE_API_KEY is not set" in error_line(ran.stderr)
    assert not out.exists()


def test_a_refused_calibration_leaves_no_empty_output_file(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    """Item 18: "... refused calibration". A map fitted at pack 20 is refused for an unpacked
    run before anything is sent."""
    from toolnexus.calibration.maps import (
        CalibrationFile,
        MapFit,
        Provenance,
        QuestionMap,
    )
    from toolnexus.questionfile.load import load_question_set
    from toolnexus.report.fitting import save_calibration
    from toolnexus.run.ids import question_set_sha256

    sha = question_set_sha256(load_question_set(qfile)[1])
    fit = MapFit("platt", {"slope": 1.0, "intercept": 0.0}, 60, {}, {})
    where = Provenance(sha, "jev-1.13.0", "systemone", 20)
    save_calibration(tmp_path / "cal.json", CalibrationFile({"q": QuestionMap("noul", where, fit)}))
    out = tmp_path / "out.jsonl"
    ran = _batch(server, qfile, _inputs(tmp_path / "in.jsonl", 3), out,
                 "--calibration", str(tmp_path / "cal.json"))  # fmt: skip
    assert ran.code == 2
    assert "pack size 20" in error_line(ran.stderr)
    assert not out.exists() and not server.seen


def test_dry_run_onto_an_output_with_records_reports_the_refusal_of_the_real_run(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    """Item 18: "--dry-run -o existing.jsonl without --resume reports 2,000 to send though the
    real run would be refused"."""
    inp, out = _inputs(tmp_path / "in.jsonl", 3), tmp_path / "out.jsonl"
    assert _batch(server, qfile, inp, out).code == 0
    before = out.read_bytes()
    real = _batch(server, qfile, inp, out)
    dry = _batch(server, qfile, inp, out, "--dry-run")
    assert (dry.code, error_line(dry.stderr)) == (real.code, error_line(real.stderr))
    assert "already holds records" in error_line(dry.stderr)
    assert out.read_bytes() == before
    assert os.path.getsize(out) > 0
