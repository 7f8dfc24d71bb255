"""Issue 31, acceptance: "Then attack again: every recovery path after each kind of stop
(fail-fast on a key, on a missing field, on a refused connection; a budget stop; Ctrl-C;
kill -9) followed by `--resume` and by `--retry-errors`; the CSV dialects Excel writes (UTF-8
with BOM, cp1252, semicolon, tab). What breaks gets a test."

Each stop is made against the loopback ``toolnexus serve`` (tests/loopback.py); then each
recovery path, against a healthy server, must end with every id exactly once and no error
record, its summary counting what it did, and the exit codes the README documents (4 fail
fast, 5 a spend cap, 130 SIGINT; a ``--resume`` that leaves error records exits 3 or 2).
``--retry-errors`` alone sends only the errors: its summary counts the states it leaves unsent
("N not in the output ... add --resume") and the ``--resume`` after it sends them. Every path
held when this matrix was written (after issue 31 items 2, 3 and 18): it guards them.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clirun import run_main
from loopback import Fault, Loopback
from paths import TESTS
from toolnexus.run.pace import STATE_FIELD_PROBE

N = 30
QUESTIONS = (
    "questions:\n  urgent:\n    type: noul\n    instructions: Does this need a human today?\n"
)


class _Server(Loopback):
    """The loopback server with two switches a test flips between runs: ``status`` answers
    every request with that HTTP status (a wrong key), ``hold_after`` stalls every request
    past that many (so a run is mid-way, provably, when the test signals it)."""

    def __init__(self) -> None:
        super().__init__()
        self.status: int | None = None
        self.hold_after: int | None = None

    def _pick_fault(self, raw: bytes, headers: Mapping[str, str]) -> Fault | None:
        if self.status is not None:
            return Fault.http(self.status)
        if self.hold_after is not None and self.total > self.hold_after:
            return Fault.stall(60)
        return super()._pick_fault(raw, headers)


@pytest.fixture
def server() -> Iterator[_Server]:
    with _Server() as s:
        yield s


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


@dataclass
class Run:
    tmp: Path
    server: _Server
    ids: list[str]

    def write_input(self, n: int) -> None:
        self.ids = [f"t{i}" for i in range(n)]
        lines = (json.dumps({"id": i, "text": f"ticket {i}"}) + "\n" for i in self.ids)
        (self.tmp / "in.jsonl").write_text("".join(lines), "utf-8")

    @property
    def out(self) -> Path:
        return self.tmp / "out.jsonl"

    def args(self, *extra: str, field: str = "text", url: str | None = None) -> list[str]:
        return [
            "batch", str(self.tmp / "q.yaml"), str(self.tmp / "in.jsonl"), "--id-field", "id",
            "--state-field", field, "-o", str(self.out), "--retries", "0", "--no-progress",
            "--base-url", url or self.server.base_url, *extra,
        ]  # fmt: skip


@pytest.fixture
def run(tmp_path: Path, server: _Server) -> Run:
    (tmp_path / "q.yaml").write_text(QUESTIONS, encoding="utf-8")
    r = Run(tmp_path, server, [])
    r.write_input(N)
    return r


def _signalled(r: Run, sig: int, after: int, *extra: str) -> tuple[int, str]:
    """A ``python -m toolnexus batch`` subprocess, signalled once it has written ``after``
    more records to ``-o`` and every later request is held by the server (no race: the run
    cannot finish)."""
    lines = r.out.read_bytes().count(b"\n") if r.out.exists() else 0
    r.server.hold_after = r.server.total + after
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolnexus", *r.args("--concurrency", "1", *extra)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        held = r.server.total > r.server.hold_after
        if held and r.out.read_bytes().count(b"\n") >= lines + after:
            break
        time.sleep(0.01)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    r.server.hold_after = None
    return proc.returncode, err


def stop_key(r: Run, capfd: pytest.CaptureFixture[str]) -> tuple[int, str]:
    r.server.status = 401
    code, _, err = run_main(capfd, *r.args())
    r.server.status = None
    return code, err


def stop_field(r: Run, capfd: pytest.CaptureFixture[str]) -> tuple[int, str]:
    # The stop needs STATE_FIELD_PROBE records without the field (a shorter input is not
    # stopped: each record gets its malformed_input record, issue 31 item 2).
    r.write_input(STATE_FIELD_PROBE + 10)
    code, _, err = run_main(capfd, *r.args(field="body"))
    return code, err


def stop_refused(r: Run, capfd: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code, _, err = run_main(capfd, *r.args(url="http://127.0.0.1:9/v1"))
    return code, err


def stop_budget(r: Run, capfd: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code, _, err = run_main(capfd, *r.args("--max-requests", "10", "--concurrency", "1"))
    return code, err


def stop_sigint(r: Run, capfd: pytest.CaptureFixture[str]) -> tuple[int, str]:
    return _signalled(r, signal.SIGINT, 5)


def stop_kill(r: Run, capfd: pytest.CaptureFixture[str]) -> tuple[int, str]:
    return _signalled(r, signal.SIGKILL, 5)


STOPS = [
    pytest.param(stop_key, 4, id="fail-fast-on-a-key"),
    pytest.param(stop_field, 4, id="fail-fast-on-a-missing-field"),
    pytest.param(stop_refused, 4, id="fail-fast-on-a-refused-connection"),
    pytest.param(stop_budget, 5, id="budget-stop"),
    pytest.param(stop_sigint, 130, id="ctrl-c"),
    pytest.param(stop_kill, -9, id="kill-9"),
]
#: The first command after a stop; the other of --resume and --retry-errors follows it.
RECOVERIES = [("--resume",), ("--resume", "--retry-errors"), ("--retry-errors",)]


def _summary(err: str) -> dict[str, int]:
    """The figures of the summary line: states, ok, failed, skipped, not in the output, and
    the error records a run leaves."""
    line = next(x for x in err.splitlines() if re.match(r"toolnexus: batch( stopped| inter)?", x))
    found = {
        name: int(m.group(1)) if (m := re.search(pattern, line)) else 0
        for name, pattern in (
            ("states", r"(\d+) states"), ("ok", r"(\d+) ok"), ("failed", r"(\d+) failed"),
            ("skipped", r"(\d+) skipped"), ("not_in_output", r"(\d+) not in the output"),
            ("left", r"(\d+) error records already in the output"),
        )
    }  # fmt: skip
    return found


def _split(records: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    ok = {r["id"] for r in records if not r.get("error")}
    return ok, {r["id"] for r in records if r.get("error")}


@pytest.mark.parametrize(("stop", "stopped"), STOPS)
def test_every_stop_recovers_to_every_id_once(
    run: Run, capfd: pytest.CaptureFixture[str], stop: Any, stopped: int
) -> None:
    """The stop, then from the file it left each recovery path in turn against a healthy
    server (the cause fixed: the key accepted, the right --state-field, the server listening,
    no cap), each followed by the other command: every id exactly once, no error record, each
    summary counting what its run sent, skipped and left, each exit code the README's."""
    code, err = stop(run, capfd)
    assert code == stopped, err
    left_by_stop = run.out.read_bytes() if run.out.exists() else b""
    written = _records(run.out) if left_by_stop else []
    ok0, failed0 = _split(written)
    assert len(written) == len(ok0 | failed0)  # one record per id, even when stopped
    if code != -signal.SIGKILL:  # the stopped run's summary counts what it wrote
        told = _summary(err)
        assert (told["states"], told["ok"], told["failed"]) == (
            len(written), len(ok0), len(failed0)
        )  # fmt: skip
    codes = {r["error"]["code"] for r in written if r.get("error")}
    error_exit = 2 if codes == {"malformed_input"} else 3
    for recovery in RECOVERIES:
        run.out.write_bytes(left_by_stop)
        ok, failed, unsent = ok0, failed0, set(run.ids) - ok0 - failed0
        other = ("--retry-errors",) if recovery == ("--resume",) else ("--resume",)
        for step in (recovery, other):
            sent_before = run.server.total
            code, _, err = run_main(capfd, *run.args(*step))
            told, why = _summary(err), f"{' '.join(step)} after {' '.join(recovery)}: {err}"
            if step == ("--resume",):
                sends, left, skipped = unsent, failed, len(ok | failed)
            elif step == ("--retry-errors",):
                sends, left, skipped = failed, set(), len(ok)
            else:
                sends, left, skipped = unsent | failed, set(), len(ok)
            assert code == (error_exit if left else 0), why
            assert told["states"] == told["ok"] == len(sends), why
            assert run.server.total - sent_before == len(sends), why  # each sent once
            assert told["skipped"] == skipped, why
            assert told["left"] == len(left), why
            assert told["not_in_output"] == (len(unsent) if step == ("--retry-errors",) else 0)
            ok, failed, unsent = ok | sends, left, unsent - sends
            assert Counter(r["id"] for r in _records(run.out)) == Counter(ok | failed), why
        final = _records(run.out)
        assert Counter(r["id"] for r in final) == Counter(run.ids), recovery
        assert [r for r in final if r.get("error")] == [], recovery


def test_a_retry_killed_mid_way_leaves_a_file_the_next_recovery_completes(
    run: Run, capfd: pytest.CaptureFixture[str]
) -> None:
    """The recovery itself stopped: a ``--retry-errors`` run killed (-9) after two of its
    records, its output holding an id twice (the error, then the answer appended after it, not
    yet compacted); ``--resume --retry-errors`` then counts the last record of each id, retries
    only what is still an error, sends the rest once, and leaves every id exactly once."""
    code, err = stop_key(run, capfd)
    assert code == 4, err
    failed = {r["id"] for r in _records(run.out)}
    assert len(failed) >= 3
    code, err = _signalled(run, signal.SIGKILL, 2, "--retry-errors")
    assert code == -signal.SIGKILL, err
    twice = [i for i, n in Counter(r["id"] for r in _records(run.out)).items() if n == 2]
    assert len(twice) == 2
    sent_before = run.server.total
    code, _, err = run_main(capfd, *run.args("--resume", "--retry-errors"))
    assert code == 0, err
    told = _summary(err)
    assert told["states"] == told["ok"] == run.server.total - sent_before == N - 2, err
    assert told["skipped"] == 2, err
    final = _records(run.out)
    assert Counter(r["id"] for r in final) == Counter(run.ids)
    assert [r for r in final if r.get("error")] == []


def test_a_short_input_without_the_field_says_which_field_none_has(
    run: Run, capfd: pytest.CaptureFixture[str]
) -> None:
    """A --state-field none of a short input's records has does not stop the run (issue 31
    item 2: "one error record per line"), but its stderr said only "30 failed
    (malformed_input 30)": a note now names the field and the recovery, which then works."""
    code, _, err = run_main(capfd, *run.args(field="body"))
    assert code == 2 and "stopped" not in err
    assert (
        f"toolnexus: note: --state-field 'body': none of the {N} input records has that field; "
        "check its spelling, then run again with --resume --retry-errors\n"
    ) in err
    code, _, err = run_main(capfd, *run.args("--resume", "--retry-errors"))
    assert code == 0, err
    final = _records(run.out)
    assert Counter(r["id"] for r in final) == Counter(run.ids)
    assert [r for r in final if r.get("error")] == []


# --- the CSV dialects Excel writes ------------------------------------------------------------

#: Ids a spreadsheet's table holds: accents, a space, the delimiters, a formula's first sign.
ROWS = [("T-1", "charged twice"), ("Café-2", "prix 3,50 €; rendu"), ("T 3", 'a "quoted"\nline'),
        ("=4", "x"), ("5", "tab\there"), ("a,b;c", "six")]  # fmt: skip


def _table(path: Path, encoding: str, delimiter: str, bom: bytes = b"", note: str = "note") -> Path:
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator="\r\n")  # as Excel ends rows
    writer.writerows([("id", "text", note), *((i, t, "") for i, t in ROWS)])
    path.write_bytes(bom + buf.getvalue().encode(encoding))
    return path


BOM = b"\xef\xbb\xbf"
#: A column name with a comma, which Excel leaves unquoted in a ;- or tab-separated file.
COMMA = "Preis, brutto"
READ = [
    pytest.param("in.csv", ",", BOM, "note", id="csv-utf8-with-bom"),
    pytest.param("in.csv", ";", BOM, "note", id="semicolon-utf8-with-bom"),
    pytest.param("in.csv", ";", b"", "note", id="semicolon"),
    pytest.param("in.csv", ";", BOM, COMMA, id="semicolon-a-column-named-with-a-comma"),
    pytest.param("in.csv", "\t", b"", "note", id="tab-named-csv"),
    pytest.param("in.csv", "\t", b"", COMMA, id="tab-a-column-named-with-a-comma"),
    pytest.param("in.tsv", "\t", b"", COMMA, id="tab-named-tsv"),
]


@pytest.mark.parametrize(("name", "delimiter", "bom", "note"), READ)
def test_a_spreadsheet_table_is_read_stopped_and_resumed_to_every_id_once(
    run: Run, capfd: pytest.CaptureFixture[str], name: str, delimiter: str, bom: bytes,
    note: str,
) -> None:  # fmt: skip
    """Issue 31's attack: "the CSV dialects Excel writes (UTF-8 with BOM, ..., semicolon,
    tab)": a run stopped by a cap and resumed reads each id exactly as written, once. A .tsv
    was read as JSON Lines; a ;- or tab-separated header with a comma in a column name was
    read as comma-separated (the delimiter is now the more frequent, outside quotes)."""
    src = _table(run.tmp / name, "utf-8", delimiter, bom, note)
    args = [a if a != str(run.tmp / "in.jsonl") else str(src) for a in run.args()]
    code, _, err = run_main(capfd, *args, "--max-requests", "2", "--concurrency", "1")
    assert code == 5, err
    if note == COMMA and name.endswith(".csv"):  # the note says why, truly
        kind = "semicolon" if delimiter == ";" else "tab"
        assert f"the header has more {kind}s than commas; read as {kind}-separated" in err
    code, _, err = run_main(capfd, *args, "--resume")
    assert code == 0, err
    assert Counter(r["id"] for r in _records(run.out)) == Counter(i for i, _ in ROWS)
    assert "error" not in run.out.read_text(encoding="utf-8")


REFUSED = [
    pytest.param("in.csv", "cp1252", ",", "3: not UTF-8 (byte 4)", "iconv -f cp1252", id="cp1252"),
    pytest.param(
        "in.csv", "cp1252", ";", "3: not UTF-8 (byte 4)", "iconv -f cp1252", id="cp1252-semicolon"
    ),
    pytest.param(
        "in.csv",
        "utf-16",
        "\t",
        "1: not UTF-8 (byte 1)",
        "iconv -f utf-16",
        id="unicode-text-named-csv",
    ),
    pytest.param(
        "in.txt", "utf-16", "\t", "1: not UTF-8 (byte 1)", "iconv -f utf-16", id="unicode-text"
    ),
    pytest.param(
        "in.txt",
        "cp1252",
        "\t",
        "1: not JSON but tab-separated text",
        ".tsv",
        id="text-tab-delimited",
    ),
]


@pytest.mark.parametrize(("name", "encoding", "delimiter", "where", "hint"), REFUSED)
def test_a_table_batch_cannot_read_is_refused_once_saying_how_to_save_it(
    run: Run, capfd: pytest.CaptureFixture[str], name: str, encoding: str, delimiter: str,
    where: str, hint: str,
) -> None:  # fmt: skip
    """Issue 31's attack: "the CSV dialects Excel writes (... cp1252, ... tab)": what cannot be
    read as UTF-8 CSV is refused in one line at its first bad line, naming the export that
    made it and how to convert it, before anything is sent or written. Excel's "Unicode Text"
    (UTF-16) was told the cp1252 advice, and a "Text (Tab delimited)" .txt was read as JSON
    Lines, one error record per row."""
    src = _table(run.tmp / name, encoding, delimiter)
    args = [a if a != str(run.tmp / "in.jsonl") else str(src) for a in run.args()]
    code, out, err = run_main(capfd, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"toolnexus: {src}:{where}"), err
    assert hint in err
    assert run.server.total == 0 and not run.out.exists()


def test_report_names_a_utf16_labels_file(tmp_path: Path) -> None:
    """The same for ``report --labels``: a UTF-16 labels file is named as such."""
    from clirun import run_cli

    golden = TESTS / "golden" / "report-inputs"
    labels = tmp_path / "labels.csv"
    labels.write_bytes((golden / "labels.csv").read_text(encoding="utf-8").encode("utf-16"))
    ran = run_cli("report", str(golden / "run.jsonl"), "--labels", str(labels))
    assert ran.code == 2
    assert f"{labels}:1: not UTF-8 text" in ran.stderr and "iconv -f utf-16" in ran.stderr
