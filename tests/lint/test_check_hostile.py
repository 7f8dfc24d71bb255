"""``check-criteria`` attacked as a hostile user would: enormous files, deep nesting, bytes that
are not UTF-8, symlink loops under a directory, a file named twice. Each gives one line naming
the file (and line:col where there is one) and what to do; no traceback (issue 34's lint, and
the house rule "every user-facing failure is one line")."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import error_line, run_cli
from toolnexus.cli.lintrun import Controls, check_text
from toolnexus.questionfile import load as questionfile

HEAD = "questions:\n  q:\n    type: noul\n    instructions: "
FLOATING = (
    "model: jev-latest\nquestions:\n  wants_refund:\n    type: noul\n"
    "    instructions: Is the customer asking for money back?\n"
)


@pytest.mark.parametrize(
    ("data", "where", "advice"),
    [
        pytest.param(
            (HEAD + "Est-ce que le café est prêt?\n").encode("cp1252"),
            "4:36",
            "save it as UTF-8 (from Windows-1252: iconv -f cp1252 -t utf-8)",
            id="cp1252",
        ),
        pytest.param(
            (HEAD + "Is it ready?\n").encode("utf-16"),
            "1:1",
            "it is UTF-16; save it as UTF-8 (iconv -f utf-16 -t utf-8)",
            id="utf-16",
        ),
        pytest.param(
            bytes(range(256)),
            "2:118",
            "save it as UTF-8 (from Windows-1252: iconv -f cp1252 -t utf-8)",
            id="binary",
        ),
    ],
)
def test_a_file_that_is_not_utf8_says_where_and_how_to_mend_it(
    tmp_path: Path, data: bytes, where: str, advice: str
) -> None:
    """Tried: a question file saved as Windows-1252, one saved as UTF-16 (a BOM), a binary
    file. check-criteria reports TN900 at the first bad byte with the mend; eval's loader
    (canonical) refuses it with the same one line."""
    path = tmp_path / "q.yaml"
    path.write_bytes(data)
    ran = run_cli("check-criteria", str(path))
    assert ran.code == 1 and ran.stderr == ""
    assert ran.out == f"{path}:{where}: TN900 not UTF-8 text: {advice}\n"
    ran = run_cli("canonical", str(path))
    assert ran.code == 2
    assert error_line(ran.stderr) == f"{path}:{where}: not UTF-8 text: {advice}"


DEEP = "YAML nested more than 64 levels deep (the most toolnexus reads): flatten it"


def _block(levels: int) -> str:
    lines = [HEAD.rstrip(" ")]
    indent = "      "
    for i in range(levels):
        lines.append(f"{indent}k{i}:")
        indent += " "
    return "\n".join([*lines, indent + "x"]) + "\n"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        pytest.param(HEAD + "[" * 100_000 + "]" * 100_000 + "\n", (4, 81), id="flow-100k"),
        pytest.param(HEAD + "{a: " * 5_000 + "x" + "}" * 5_000 + "\n", (4, 267), id="flow-maps"),
        pytest.param(_block(3_000), (67, 69), id="block-3000"),
        pytest.param(HEAD + "[" * 300 + "]" * 300 + "\n", (4, 81), id="flow-300"),
    ],
)
def test_deep_nesting_is_located_at_the_first_level_too_deep(
    text: str, where: tuple[int, int]
) -> None:
    """Tried: 100,000 nested flow sequences, 5,000 flow mappings, 3,000 block mappings. The
    composer recursed too deep to say where (the finding was at 1:1, "nested too deeply"); the
    first collection past 64 levels is named (the 62nd bracket here: the file's three mappings
    come first), whichever loader gave up."""
    found = check_text(text, "f.yaml", Controls())
    assert [(f.line, f.col, f.code, f.message) for f in found] == [(*where, "TN900", DEEP)]


def test_deep_nesting_is_one_line_on_the_command_line(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(HEAD + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    ran = run_cli("canonical", str(path))
    assert ran.code == 2
    assert error_line(ran.stderr) == f"{path}:4:81: {DEEP}"


def test_a_symlink_loop_under_a_directory_is_one_line_not_a_silent_pass(tmp_path: Path) -> None:
    """Tried: a directory holding a .yaml link to itself, a .yaml link to nothing, and a link
    back up to the directory. The two dead links were skipped in silence (exit 0, as if the
    directory were clean); each is now one line on stderr and the run exits 2, while the real
    file is still checked and the directory link is not followed round."""
    root = tmp_path / "sets"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "real.yaml").write_text(FLOATING, encoding="utf-8")
    (root / "self.yaml").symlink_to("self.yaml")
    (root / "gone.yaml").symlink_to(tmp_path / "nowhere.yaml")
    (root / "sub" / "up").symlink_to("..")
    ran = run_cli("check-criteria", str(root))
    assert ran.code == 2
    assert "Traceback" not in ran.stderr
    assert ran.stderr.splitlines() == [
        f"toolnexus: {root / 'gone.yaml'}: cannot read: No such file or directory",
        f"toolnexus: {root / 'self.yaml'}: cannot read: Too many levels of symbolic links "
        "(a symlink loop): point the link at a file, or remove it",
    ]
    assert [line.split(": ")[0] for line in ran.out.splitlines()] == [
        f"{root / 'sub' / 'real.yaml'}:1:8"
    ]


def test_a_file_named_twice_is_checked_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tried: the directory and a file in it, the same file by a relative and an absolute name
    (a hook given both). Each finding was printed once per name; now once. Two files with the
    same question keys are two question sets: each is reported on its own."""
    (tmp_path / "sets").mkdir()
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / "sets" / name).write_text(FLOATING, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    ran = run_cli(
        "check-criteria", "sets", "sets/a.yaml", str(tmp_path / "sets" / "a.yaml"), "./sets"
    )
    assert ran.code == 1, ran.stderr
    assert ran.out.splitlines() == [
        f"{os.path.join('sets', name)}:1:8: TN070 model 'jev-latest' is a floating alias: pin "
        "a version (e.g. jev-1.13.0) so tuned thresholds keep meaning the same"
        for name in ("a.yaml", "b.yaml")
    ]


def test_an_endless_or_enormous_file_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tried: /dev/zero as the question file (it was read until memory ran out), and a file
    past the cap. A question file over 64 MiB could never be sent; it is one line, exit 2."""
    # In a child held to 1 GiB of memory: were the cap lost, it fails there instead of
    # filling the shared machine's memory.
    ran = subprocess.run(
        [sys.executable, "-m", "toolnexus", "check-criteria", "/dev/zero"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)),
    )
    assert ran.returncode == 2
    assert error_line(ran.stderr) == (
        "/dev/zero: cannot read: over 64 MiB, more than a question file may hold (a request "
        "is at most 64,000 tokens): split the question set"
    )
    monkeypatch.setattr(questionfile, "MAX_FILE_BYTES", 1 << 20)
    big = tmp_path / "big.yaml"
    big.write_text(HEAD + '"' + "word " * 220_000 + '"\n', encoding="utf-8")
    ran = run_cli("canonical", str(big))
    assert ran.code == 2
    assert error_line(ran.stderr).startswith(f"{big}: cannot read: over 1 MiB, more than")
    ran = run_cli("canonical", "-", input=big.read_bytes())
    assert error_line(ran.stderr).startswith("-: cannot read: over 1 MiB, more than")


def test_a_file_name_cannot_break_a_line_or_drive_the_terminal(tmp_path: Path) -> None:
    """Tried: a question file whose name holds a newline, and a dangling .yaml link whose name
    holds an OSC sequence (it retitles a terminal). The finding was split over two lines, and
    the unreadable file's line wrote the ESC and BEL raw to stderr; both are now shown as
    escapes, one line each."""
    root = tmp_path / "names"
    root.mkdir()
    (root / "a\nb.yaml").write_text(FLOATING, encoding="utf-8")
    (root / "d\x1b]0;pwned\x07.yaml").symlink_to(tmp_path / "nowhere")
    ran = run_cli("check-criteria", str(root))
    assert ran.code == 2
    assert error_line(ran.stderr) == (
        f"{root}/d\\x1b]0;pwned\\x07.yaml: cannot read: No such file or directory"
    )
    assert ran.out.splitlines() == [
        f"{root}/a\\nb.yaml:1:8: TN070 model 'jev-latest' is a floating alias: pin a version "
        "(e.g. jev-1.13.0) so tuned thresholds keep meaning the same"
    ]
