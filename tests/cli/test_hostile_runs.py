"""Hostile runs (issue 9, "No Python traceback reaches a user"): a full disk, a closed stdin,
absurd options, unreadable files and damaged caches each end as ONE line and a documented exit
code, in real processes where the process matters (``/dev/full``, a closed fd 0).
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import error_line, run_cli
from hostile_server import HostileServer, qfile_fixture, server_fixture

KEY = "tn-runs-key-0123456789"
QUESTIONS = "questions:\n  q: {type: noul, instructions: Is it so?}\n"


server = server_fixture(KEY)


qfile = qfile_fixture(QUESTIONS)


def _process(*args: str, stdout: int | None = None, shell_prefix: str = "") -> tuple[int, str]:
    """``python -m toolnexus *args`` as a real process: (exit code, stderr)."""
    cmd = [sys.executable, "-m", "toolnexus", *args]
    if shell_prefix:
        quoted = " ".join(f"'{a}'" for a in cmd)
        proc = subprocess.run(
            ["sh", "-c", f"{shell_prefix} exec {quoted}"],
            stdout=stdout if stdout is not None else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    else:
        proc = subprocess.run(
            cmd,
            stdout=stdout if stdout is not None else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
    return proc.returncode, proc.stderr.decode()


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_on_stdout_is_one_line_not_a_traceback(server: HostileServer, qfile: Path):
    """Issue 9: "disk full on -o or stdout (ENOSPC)"."""
    with open("/dev/full", "wb") as full:
        code, err = _process(
            "eval", str(qfile), "--state-text", "x", "--format", "json",
            "--base-url", server.base_url, stdout=full.fileno(),
        )  # fmt: skip
    assert code == 2, err
    line = error_line(err)
    assert "stdout" in line and "No space left on device" in line


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_on_output_is_one_line_not_a_traceback(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    states = tmp_path / "s.jsonl"
    states.write_text('"a"\n"b"\n')
    code, err = _process(
        "batch", str(qfile), str(states), "-o", "/dev/full", "--base-url", server.base_url
    )
    assert code == 2, err
    line = error_line(err)
    assert "/dev/full" in line and "No space left on device" in line


def test_a_closed_stdin_is_one_line(server: HostileServer, qfile: Path) -> None:
    """Issue 9: "a closed stdin"."""
    code, err = _process(
        "eval", str(qfile), "-", "--base-url", server.base_url, shell_prefix="exec 0<&-;"
    )
    assert code == 2, err
    assert "stdin" in error_line(err)
    assert server.seen == []


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["batch", "{q}", "-"], id="batch"),
        pytest.param(["check-criteria", "-"], id="check-criteria"),
    ],
)
def test_a_closed_stdin_is_one_line_in_every_command_that_reads_it(
    server: HostileServer, qfile: Path, args: list[str]
) -> None:
    full = [a.replace("{q}", str(qfile)) for a in args]
    code, err = (
        _process(*full, "--base-url", server.base_url, shell_prefix="exec 0<&-;")
        if (args[0] == "batch")
        else _process(*full, shell_prefix="exec 0<&-;")
    )
    assert code == 2, err
    assert "stdin is closed" in error_line(err)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(["--timeout", "inf"], "timeout", id="timeout-inf"),
        pytest.param(["--timeout", "nan"], "timeout", id="timeout-nan"),
        pytest.param(["--base-url", "http://[::1/v1"], "not a valid URL", id="bad-ipv6-url"),
        pytest.param(["--base-url", "ftp://host/v1"], "http:// or https://", id="not-http"),
        pytest.param(["--base-url", "no scheme"], "http:// or https://", id="no-scheme"),
    ],
)
def test_absurd_options_are_one_line_exit_2(
    server: HostileServer, qfile: Path, args: list[str], expected: str
) -> None:
    """Issue 9: "--timeout inf, a malformed --base-url such as http://[::1/v1"."""
    full = ["--base-url", server.base_url, *args] if "--base-url" not in args else args
    ran = run_cli("eval", str(qfile), "--state-text", "x", *full)
    assert ran.code == 2, ran.stderr
    assert expected in error_line(ran.stderr)
    assert server.seen == []


def test_check_criteria_reports_an_unreadable_file_and_goes_on(tmp_path: Path) -> None:
    """Issue 9: "an unreadable question file (printed Click's usage block; check-criteria must
    report it and go on to the other files)"."""
    gone = tmp_path / "gone.yaml"
    gone.symlink_to(tmp_path / "nowhere.yaml")  # unreadable even for root
    bad = tmp_path / "bad.yaml"
    bad.write_text("questions:\n  q: {type: choise, instructions: x}\n")
    ran = run_cli("check-criteria", str(gone), str(bad))
    assert ran.code == 2
    assert "Usage" not in ran.stderr and "Traceback" not in ran.stderr
    assert str(gone) in ran.stderr
    assert f"{bad}:2" in ran.out, "the other file was still checked"


def test_a_cache_dir_that_cannot_be_opened_is_one_line(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    """Issue 9: "a cache directory that cannot be opened"."""
    states = tmp_path / "s.jsonl"
    states.write_text('"a"\n')
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    for cache_dir in (blocker, blocker / "sub"):
        ran = run_cli(
            "batch", str(qfile), str(states), "--cache", "--cache-dir", str(cache_dir),
            "--base-url", server.base_url,
        )  # fmt: skip
        assert ran.code == 2, ran.stderr
        assert str(blocker) in error_line(ran.stderr)
    for sub in (["stats"], ["clear"]):
        ran = run_cli("cache", *sub, "--cache-dir", str(blocker / "sub"))
        assert ran.code == 2
        error_line(ran.stderr)


def _damage(cache_dir: Path) -> Path:
    cache_dir.mkdir(parents=True, exist_ok=True)
    db = cache_dir / "decisions.sqlite3"
    db.write_bytes(b"this is not a database, it is damage " * 200)
    return db


def test_a_damaged_cache_is_one_line_naming_the_file_and_the_fix(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    """Issue 9: "A damaged cache file: one line naming the file and the fix; toolnexus cache
    clear works on a damaged file; stats do not claim entries that cannot be read"."""
    cache_dir = tmp_path / "cache"
    db = _damage(cache_dir)
    states = tmp_path / "s.jsonl"
    states.write_text('"a"\n')
    ran = run_cli(
        "batch", str(qfile), str(states), "--cache", "--cache-dir", str(cache_dir),
        "--base-url", server.base_url,
    )  # fmt: skip
    assert ran.code == 2
    line = error_line(ran.stderr)
    assert str(db) in line and "toolnexus cache clear" in line
    ran = run_cli("cache", "stats", "--cache-dir", str(cache_dir))
    assert ran.code == 2 and ran.out == ""
    assert "toolnexus cache clear" in error_line(ran.stderr)
    ran = run_cli("cache", "clear", "--cache-dir", str(cache_dir))
    assert ran.code == 0, ran.stderr
    assert str(db) in ran.stderr
    ran = run_cli("cache", "stats", "--cache-dir", str(cache_dir), "--format", "json")
    assert ran.code == 0 and '"entries": 0' in ran.out


def test_a_cache_with_an_unreadable_table_is_not_counted(tmp_path: Path) -> None:
    """Stats do not claim entries that cannot be read: a database without our table."""
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    db = cache_dir / "decisions.sqlite3"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE entries (nonsense TEXT)")
    conn.execute("INSERT INTO entries VALUES ('x')")
    conn.commit()
    conn.close()
    ran = run_cli("cache", "stats", "--cache-dir", str(cache_dir))
    assert ran.code == 2
    assert "toolnexus cache clear" in error_line(ran.stderr)
