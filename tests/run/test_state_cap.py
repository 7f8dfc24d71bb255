"""Issue 30 (reader brief, item 2): "`toolnexus check-criteria --state /dev/zero` and
`toolnexus eval --state /dev/zero` (and stdin that never ends) fill memory in run/states.py.
Read at most a cap plus one byte ... and refuse in one line, exit 2, naming the file and what
to do." The cap is the question loader's (64 MiB): the wire bounds a state in tokens only."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import error_line
from paths import REPO
from toolnexus.core.errors import RunError
from toolnexus.questionfile import load as questionfile
from toolnexus.run import states

QUESTIONS = str(REPO / "questions" / "noul-small.yaml")
TOO_BIG = (
    "cannot read: over 64 MiB, more than a state may hold (a state and its longest question "
    "fit in 32,000 tokens): pass a smaller state"
)


def _limited() -> None:
    # Were the cap lost, the child fails at 1 GiB instead of filling the shared machine.
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize(
    ("args", "stdin", "name"),
    [
        pytest.param(
            ["check-criteria", QUESTIONS, "--state", "/dev/zero", "--as", "text"],
            subprocess.DEVNULL,
            "/dev/zero",
            id="check-criteria-state-dev-zero",
        ),
        pytest.param(
            ["eval", QUESTIONS, "/dev/zero", "--as", "text"],
            subprocess.DEVNULL,
            "/dev/zero",
            id="eval-state-dev-zero",
        ),
        pytest.param(["eval", QUESTIONS, "-"], "zero", "<stdin>", id="eval-stdin-never-ends"),
    ],
)
def test_an_endless_state_is_refused_in_one_line_exit_2(
    args: list[str], stdin: object, name: str
) -> None:
    """A state past the cap, or one that never ends, is one line naming it, exit 2."""
    with open("/dev/zero", "rb") as zero:
        ran = subprocess.run(
            [sys.executable, "-m", "toolnexus", *args],
            stdin=zero if stdin == "zero" else stdin,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=_limited,
        )
    assert ran.returncode == 2, ran.stderr
    assert error_line(ran.stderr) == f"{name}: {TOO_BIG}"


def test_the_cap_is_the_question_loaders() -> None:
    """Brief: use the same cap the question loader uses for files over 64 MiB."""
    assert states.MAX_STATE_BYTES == questionfile.MAX_FILE_BYTES == 64 << 20


def test_a_state_of_exactly_the_cap_is_read_and_one_byte_more_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cap plus one byte is read: a state of exactly the cap passes; CRLF still reads as LF."""
    monkeypatch.setattr(states, "MAX_STATE_BYTES", 8)
    fits = tmp_path / "fits.txt"
    fits.write_bytes(b"ab\r\ncdef")
    assert states.load_state(str(fits)) == "ab\ncdef"
    over = tmp_path / "over.txt"
    over.write_bytes(b"ab\r\ncdefg")
    with pytest.raises(RunError) as e:
        states.load_state(str(over))
    assert str(e.value).startswith(f"{over}: cannot read: over 0 MiB, more than a state")
