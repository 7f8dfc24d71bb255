"""``toolnexus batch`` as a newcomer and a hostile user tried it (issue 17): each test quotes the
item it holds, and failed before its fix."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cli.test_exit_codes import QUESTIONS  # the same two-question set
from clirun import run_main as _cli
from loopback import Loopback


@pytest.fixture
def qfile(tmp_path: Path) -> Path:
    path = tmp_path / "q.yaml"
    path.write_text(QUESTIONS, encoding="utf-8")
    return path


def _jsonl(tmp_path: Path, n: int, name: str = "in.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(
        "".join(json.dumps({"id": f"t{i}", "text": f"ticket {i}"}) + "\n" for i in range(n)),
        encoding="utf-8",
    )
    return path


def _ids(text: str) -> list[Any]:
    return [json.loads(line)["id"] for line in text.splitlines()]


FIELDS = ("--id-field", "id", "--state-field", "text")


# --- item 4: cached answers are not spent tokens ---------------------------------------------


def test_a_fully_cached_rerun_spends_no_tokens(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 §4: "a fully cached re-run sent 0 requests but the summary says 300 cached,
    tokens 109296 in / 6000 out. Spent and cached usage are separate figures everywhere"."""
    src = _jsonl(tmp_path, 5)
    args = ["batch", str(qfile), str(src), *FIELDS, "--cache", "--cache-dir", str(tmp_path / "c")]
    code, out, err = _cli(capfd, *args, "--base-url", server.base_url)
    assert code == 0, err
    spent = re.search(r"tokens (\d+) in / (\d+) out", err)
    assert spent is not None and int(spent.group(1)) > 0
    code, out, err = _cli(capfd, *args, "--base-url", server.base_url)
    assert code == 0 and server.total == 5
    assert "5 cached, tokens 0 in / 0 out" in err
    assert f"cached tokens {spent.group(1)} in / {spent.group(2)} out" in err
    assert all(json.loads(line)["cached"] is True for line in out.splitlines())


# --- item 5: inverted thresholds -------------------------------------------------------------


@pytest.mark.parametrize(
    "thresholds",
    [
        pytest.param("yes=0.2,no=0.8", id="both-given"),
        pytest.param("yes=0.1", id="yes-below-the-default-no"),
    ],
)
def test_inverted_thresholds_are_refused(
    qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], thresholds: str
) -> None:
    """Issue 17 §5: "Inverted thresholds are accepted (--thresholds yes=0.2,no=0.8): refuse
    no > yes"."""
    code, out, err = _cli(capfd, "batch", str(qfile), str(_jsonl(tmp_path, 1)), "--thresholds",
                          thresholds)  # fmt: skip
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--thresholds" in err and "no" in err and "yes" in err


# --- item 7: a UTF-8 byte-order mark ---------------------------------------------------------


def test_a_csv_with_a_byte_order_mark_is_read(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 §7: "A CSV with a UTF-8 byte-order mark (Excel's default export) is refused by
    batch ... Accept it"."""
    src = tmp_path / "excel.csv"
    src.write_bytes(b"\xef\xbb\xbfid,text\r\nT-1,charged twice\r\n")
    code, out, err = _cli(capfd, "batch", str(qfile), str(src), *FIELDS, "--base-url",
                          server.base_url)  # fmt: skip
    assert code == 0, err
    assert _ids(out) == ["T-1"]


def test_a_column_message_shows_invisible_characters(
    qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 §7: "show invisible characters in such messages"."""
    src = tmp_path / "in.csv"
    src.write_text("i\u200bd,te\u202ext\nT-1,x\n", encoding="utf-8")
    code, _, err = _cli(capfd, "batch", str(qfile), str(src), *FIELDS)
    assert code == 2 and err.count("\n") == 1
    assert "\\u200b" in err and "\\u202e" in err and "\u202e" not in err


# --- item 8: CSV limits and line numbers -----------------------------------------------------


def test_a_csv_cell_has_the_jsonl_budget(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 §8: "a cell over 131,072 characters fails with Python's field larger than field
    limit (131072) ... give CSV the same state budget as JSONL"."""
    src = tmp_path / "big.csv"
    src.write_text("id,text\nT-1," + "x" * 200_000 + "\n", encoding="utf-8")
    code, out, err = _cli(capfd, "batch", str(qfile), str(src), *FIELDS, "--base-url",
                          server.base_url)  # fmt: skip
    assert code == 0, err
    assert _ids(out) == ["T-1"] and "error" not in out


def test_a_latin1_byte_is_reported_at_its_row_once_for_the_file(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 §8: "a Latin-1 byte on row 2 is reported as latin.csv:1: bad CSV header"; and
    issue 31 item 14: "a cp1252 CSV fails row by row ('not UTF-8 (byte 7)') with no file-level
    hint": the file is refused once, at its row, saying what to do, before anything is sent."""
    src = tmp_path / "latin.csv"
    src.write_bytes(b"id,text\nT-1,caf\xe9\nT-2,fine\n")
    code, out, err = _cli(capfd, "batch", str(qfile), str(src), *FIELDS, "--ordered",
                          "--base-url", server.base_url)  # fmt: skip
    assert code == 2
    assert out == ""
    assert err.startswith(f"toolnexus: {src}:2: not UTF-8 (byte 8): the whole file must be UTF-8")
    assert "save it as 'CSV UTF-8'" in err and err.count("\n") == 1


# --- item 9: what a directory yields ---------------------------------------------------------


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "tickets"
    (d / "sub").mkdir(parents=True)
    (d / "a.txt").write_text("charged twice", encoding="utf-8")
    (d / "tool.py").write_text("print('not a state')", encoding="utf-8")
    (d / "notes.bin").write_bytes(b"\x00\x01")
    (d / "sub" / "b.md").write_text("parcel lost", encoding="utf-8")
    secret = tmp_path / "passwd.txt"
    secret.write_text("root:x:0:0", encoding="utf-8")
    (d / "z.txt").symlink_to(secret)
    return d


def test_a_directory_yields_the_suffixes_eval_reads_without_recursion(
    server: Loopback, qfile: Path, state_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 §9: "batch q.yaml dir/ sends .py files and files eval refuses, recurses into
    subfolders, and follows a symlink to /etc/passwd ... (the same suffixes eval reads, no
    recursion unless asked, symlinks leaving the directory refused with one line)"."""
    code, out, err = _cli(capfd, "batch", str(qfile), str(state_dir), "--ordered", "--base-url",
                          server.base_url)  # fmt: skip
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in records] == [str(state_dir / "a.txt"), str(state_dir / "z.txt")]
    assert "error" not in records[0]
    assert records[1]["error"]["code"] == "malformed_input"
    assert "symlink" in records[1]["error"]["message"]
    assert server.total == 1  # neither tool.py nor the symlink's target was sent
    assert "root:x" not in out + err
    assert code == 2


def test_recursion_is_asked_for(
    server: Loopback, qfile: Path, state_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 §9: "no recursion unless asked"."""
    (state_dir / "z.txt").unlink()
    code, out, err = _cli(capfd, "batch", str(qfile), str(state_dir), "--recursive", "--ordered",
                          "--base-url", server.base_url)  # fmt: skip
    assert code == 0, err
    assert _ids(out) == [str(state_dir / "a.txt"), str(state_dir / "sub" / "b.md")]


# --- item 11: an existing output -------------------------------------------------------------


def test_an_existing_output_is_refused_without_resume_or_overwrite(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 §11: "Without --resume/--retry-errors, an existing non-empty -o is refused with
    a one-line hint (--resume to continue, --overwrite to start over)"."""
    src, out = _jsonl(tmp_path, 3), tmp_path / "out.jsonl"
    args = ["batch", str(qfile), str(src), *FIELDS, "-o", str(out), "--base-url", server.base_url]
    assert _cli(capfd, *args)[0] == 0
    before = out.read_bytes()
    code, _, err = _cli(capfd, *args)
    assert code == 2 and err.count("\n") == 1
    assert "--resume" in err and "--overwrite" in err
    assert out.read_bytes() == before
    code, _, err = _cli(capfd, *args, "--overwrite")
    assert code == 0, err
    assert sorted(_ids(out.read_text(encoding="utf-8"))) == ["t0", "t1", "t2"]


def test_overwrite_keeps_the_old_output_until_the_new_run_replaces_it(
    qfile: Path, tmp_path: Path
) -> None:
    """Issue 17 §11: "with --overwrite, the old file stays intact until the new run replaces it
    atomically" (a run killed mid-way leaves the old file whole)."""
    src, out = _jsonl(tmp_path, 40), tmp_path / "out.jsonl"
    old = b'{"id":"old","error":{"code":"backend_http","message":"x"}}\n' * 50
    out.write_bytes(old)
    with Loopback() as server:
        server.hold(4)  # the run cannot end before the kill, whatever the machine's speed
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolnexus", "batch", str(qfile), str(src), *FIELDS,
             "--concurrency", "2", "-o", str(out), "--overwrite", "--base-url", server.base_url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while server.total < 4 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)
        assert out.read_bytes() == old  # the new records go elsewhere until the run ends
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    assert out.read_bytes() == old


# --- item 12: the progress bar and records on one terminal -----------------------------------


def _on_a_pty(args: list[str], *, stdout_too: bool, tmp_path: Path) -> str:
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolnexus", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave if stdout_too else subprocess.DEVNULL,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode("utf-8", errors="replace")


@pytest.mark.parametrize(
    ("extra", "stdout_too"),
    [
        pytest.param([], True, id="records-on-the-same-terminal"),
        pytest.param(["--no-progress"], False, id="no-progress"),
    ],
)
def test_no_bar_glued_onto_records(
    server: Loopback,
    qfile: Path,
    tmp_path: Path,
    extra: list[str],
    stdout_too: bool,
) -> None:
    """Issue 17 §12: "Records on stdout and a live bar on stderr must not interleave on one
    terminal (no bar when stdout is the same terminal ...); add --progress/--no-progress"."""
    server.latency = 0.02
    src = _jsonl(tmp_path, 20)
    args = ["batch", str(qfile), str(src), *FIELDS, "--concurrency", "2", "--base-url",
            server.base_url, *extra]  # fmt: skip
    if not stdout_too:
        args += ["-o", str(tmp_path / "out.jsonl")]
    screen = _on_a_pty(args, stdout_too=stdout_too, tmp_path=tmp_path)
    assert not re.search(r"\d+ failed, \d+ cached, [\d.]+/s", screen), screen
    assert "20 states, 20 ok" in screen
    if stdout_too:
        assert screen.count('{"id":') == 20
        assert all(line.startswith(('{"id":', "toolnexus: ")) for line in screen.splitlines())


# --- item 13: the summaries say what to do ---------------------------------------------------


def test_fail_on_names_the_count_and_first_ids(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 §13: "--fail-on met: near-uniform gives no count and no ids: name the count per
    condition and the first ids"."""
    src = _jsonl(tmp_path, 7)
    # yes=1,no=0: every answer strictly between is uncertain.
    code, _, err = _cli(capfd, "batch", str(qfile), str(src), *FIELDS, "--ordered", "--fail-on",
                        "uncertain", "--thresholds", "yes=1,no=0", "--base-url",
                        server.base_url)  # fmt: skip
    assert code == 1, err
    line = next(x for x in err.splitlines() if "--fail-on met" in x)
    assert re.search(r"uncertain 7 \(t0, t1, t2, t3, t4, \.\.\.\)", line), line


def test_the_interrupt_summary_says_how_to_resume(qfile: Path, tmp_path: Path) -> None:
    """Issue 17 §13: "The interrupt summary says how to resume"."""
    src, out = _jsonl(tmp_path, 100), tmp_path / "out.jsonl"
    with Loopback() as server:
        server.hold(2)  # the run cannot end before the signal, whatever the machine's speed
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolnexus", "batch", str(qfile), str(src), *FIELDS,
             "-o", str(out), "--base-url", server.base_url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while server.total < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "batch interrupted by SIGINT" in err
    assert "--resume" in err.splitlines()[-1]


def test_the_shard_summary_counts_the_states_it_skipped(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 §13: "The shard summary says how many states this shard skipped"."""
    src = _jsonl(tmp_path, 30)
    code, out, err = _cli(capfd, "batch", str(qfile), str(src), *FIELDS, "--shard", "1/3",
                          "--base-url", server.base_url)  # fmt: skip
    assert code == 0
    mine = len(out.splitlines())
    assert f"{30 - mine} in other shards" in err


# --- item 14: the suggestion for an unknown option -------------------------------------------


def test_an_unknown_option_suggests_only_related_ones(
    qfile: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 §14: "No such option: --cache (Possible options: --backend, --help) suggests
    unrelated options" (eval has no --cache; batch has)."""
    code, _, err = _cli(capfd, "eval", str(qfile), "x", "--cache")
    assert code == 2 and err.count("\n") == 1
    assert "--backend" not in err and "Possible options: --help" not in err
    assert "batch" in err


# --- item 15: a whole object is sent ---------------------------------------------------------


def test_a_whole_object_sent_is_said_once(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Issue 17 §15: "JSONL objects without --state-field are sent whole, id included, silently:
    say so once on stderr"."""
    src = _jsonl(tmp_path, 3)
    code, _, err = _cli(capfd, "batch", str(qfile), str(src), "--id-field", "id", "--base-url",
                        server.base_url)  # fmt: skip
    assert code == 0
    notes = [x for x in err.splitlines() if "--state-field" in x]
    assert len(notes) == 1 and "'id'" in notes[0]
    code, _, err = _cli(capfd, "batch", str(qfile), str(src), *FIELDS, "--base-url",
                        server.base_url)  # fmt: skip
    assert "--state-field" not in err


# --- item 18: the README's CSV columns -------------------------------------------------------


def test_the_readme_lists_every_csv_column() -> None:
    """Issue 17 §18: "The CSV column list omits questions_sha256"."""
    from paths import docs_text

    readme = docs_text()
    section = readme[readme.index("**CSV** is one shape") :]
    section = section[: section.index("\n\n")]
    assert "`questions_sha256`" in section


def _interrupted_overwrite(qfile: Path, src: Path, out: Path) -> tuple[int, str]:
    """``batch --overwrite`` onto ``out``, sent SIGINT once two requests are in: its exit code
    and stderr."""
    with Loopback() as server:
        server.hold(2)  # the run cannot end before the signal, whatever the machine's speed
        proc = subprocess.Popen(
            [sys.executable, "-m", "toolnexus", "batch", str(qfile), str(src), *FIELDS,
             "-o", str(out), "--overwrite", "--base-url", server.base_url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while server.total < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    return proc.returncode, err


def test_an_interrupted_overwrite_keeps_the_old_output_and_says_so(
    qfile: Path, tmp_path: Path
) -> None:
    """Issue 17 §11 and §13: an interrupted --overwrite leaves the old file whole, and its
    summary says that (not --resume, which would continue the old file)."""
    src, out = _jsonl(tmp_path, 100), tmp_path / "out.jsonl"
    old = b'{"id":"old","error":{"code":"backend_http","message":"x"}}\n'
    out.write_bytes(old)
    code, err = _interrupted_overwrite(qfile, src, out)
    assert code == 130
    assert out.read_bytes() == old
    assert "left as it was" in err.splitlines()[-1] and "--resume" not in err.splitlines()[-1]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".toolnexus")] == []


def test_an_interrupted_overwrite_onto_a_new_file_says_resume(qfile: Path, tmp_path: Path) -> None:
    """Issue 17 §13: "The interrupt summary says how to resume": with nothing to keep, an
    --overwrite run wrote its records in place, and --resume continues them."""
    src, out = _jsonl(tmp_path, 100), tmp_path / "new.jsonl"
    code, err = _interrupted_overwrite(qfile, src, out)
    assert code == 130
    assert "--resume" in err.splitlines()[-1]


def test_the_batch_summary_totals_costs_exactly() -> None:
    """Issue 20 item 4: the summary's cost is the Decimal total of what each response
    reported (0.1 + 0.2 is 0.3), never a float sum."""
    from toolnexus.run.summary import RunSummary as BatchSummary

    summary = BatchSummary()
    for cost in (0.1, 0.2):
        summary.add_cost(cost)
    assert "cost 0.3" in summary.line() and "0.30000000000000004" not in summary.line()
