"""Issue 34 item 4, "Run time too": `eval` and `batch` warn once on stderr, before sending, when
a request will pass the token limits, and `batch --dry-run` reports the largest request against
the limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clirun import run_main
from loopback import Loopback

QUESTIONS = (
    "model: jev-1.13.0\nquestions:\n  late: {type: noul, instructions: Is the parcel late?}\n"
)
WARNING = "toolnexus: warning: "
BIG = "late parcel " * 3_800  # about 45k upper-bound tokens: over 32k, under 64k


@pytest.fixture
def qfile(tmp_path: Path) -> Path:
    path = tmp_path / "q.yaml"
    path.write_text(QUESTIONS, encoding="utf-8")
    return path


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(WARNING)]


@pytest.mark.parametrize(("state", "warned"), [(BIG, True), ("the parcel is late", False)])
def test_eval_warns_once_before_sending_a_request_over_the_limits(
    server: Loopback,
    qfile: Path,
    capfd: pytest.CaptureFixture[str],
    state: str,
    warned: bool,
) -> None:
    code, _, err = run_main(
        capfd, "eval", str(qfile), "--state-text", state, "--base-url", server.base_url
    )
    found = _warnings(err)
    assert len(found) == (1 if warned else 0), err
    if warned:
        assert "state plus the longest question ('late') about" in found[0]
        assert "over 32,000" in found[0] and "check-criteria --state FILE" in found[0]
    assert code == 0 and server.total == 1, "a warning, not a refusal: the request is sent"


def _input(tmp_path: Path, states: list[Any]) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": f"t{i}", "text": s}) + "\n" for i, s in
                            enumerate(states)), encoding="utf-8")  # fmt: skip
    return path


def test_batch_warns_once_when_the_question_set_alone_passes_the_limits(
    server: Loopback, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Today a 20 MB instruction goes out as one request per state, silently."""
    big = tmp_path / "big.yaml"
    big.write_text(
        "model: jev-1.13.0\nquestions:\n  k:\n    type: noul\n"
        f'    instructions: "Is it? {"word " * 15_000}"\n',
        encoding="utf-8",
    )
    inp = _input(tmp_path, ["one", "two", "three"])
    args = ["batch", str(big), str(inp), "--id-field", "id", "--state-field", "text"]
    _, _, err = run_main(capfd, *args, "--base-url", server.base_url, "-o", str(tmp_path / "o"))
    found = _warnings(err)
    assert len(found) == 1, err
    assert "every request (the question set alone) will pass" in found[0]
    _, _, err = run_main(
        capfd, *args, "--base-url", server.base_url, "--dry-run",
    )  # fmt: skip
    assert len(_warnings(err)) == 0, "a dry run sends nothing: it reports instead"


@pytest.mark.parametrize(("state", "over"), [(BIG, True), ("the parcel is late", False)])
def test_dry_run_reports_the_largest_request_against_the_limits(
    server: Loopback,
    qfile: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    state: str,
    over: bool,
) -> None:
    inp = _input(tmp_path, ["short", state])
    args = ["batch", str(qfile), str(inp), "--id-field", "id", "--state-field", "text"]
    base = ["--base-url", server.base_url, "--dry-run"]
    code, printed, _ = run_main(capfd, *args, *base, "--format", "json")
    assert code == 0 and server.total == 0
    result = json.loads(printed)
    assert result["largest_request_upper"] >= result["largest_request"] > 0
    assert (result["over_limit"] is not None) is over
    if over:
        assert result["largest_state_and_question_upper"] > 32_000
    _, text, _ = run_main(capfd, *args, *base)
    line = text.splitlines()[-1]
    assert line.startswith("largest request: about ")
    assert line.endswith(
        "the server will refuse it" if over else "(upper bounds): within the limits"
    )
