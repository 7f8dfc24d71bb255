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


@pytest.mark.parametrize("pack", [pytest.param("1", id="pack-1"), pytest.param("2", id="pack-2")])
def test_batch_warns_once_before_sending_a_state_over_the_limits(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], pack: str
) -> None:
    """Issue 34 item 4: "`batch` warn[s] once on stderr, before sending, when a request will
    pass the token limits": a single state over them, not only the question set. The warning
    names the first such state's id and line and the limit; the summary counts them all."""
    inp = _input(tmp_path, ["short", BIG, "short again", BIG + "!"])
    args = ["batch", str(qfile), str(inp), "--id-field", "id", "--state-field", "text"]
    code, _, err = run_main(
        capfd, *args, "--base-url", server.base_url, "-o", str(tmp_path / "o.jsonl"),
        "--concurrency", "1", "--pack", pack,
    )  # fmt: skip
    found = _warnings(err)
    assert len(found) == 1, err
    assert f"state 't1' ({inp}:2) will pass the wire's token limits" in found[0]
    assert "state plus the longest question about" in found[0] and "over 32000" in found[0]
    assert "2 over the wire's token limits (see the warning)" in err
    assert code == 0 and server.total >= 4, "a warning, not a refusal: every state is sent"


def test_batch_under_the_limits_warns_nothing_and_counts_nothing(
    server: Loopback, qfile: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    inp = _input(tmp_path, ["short", "late parcel " * 1_000])
    args = ["batch", str(qfile), str(inp), "--id-field", "id", "--state-field", "text"]
    code, _, err = run_main(capfd, *args, "--base-url", server.base_url, "-o", str(tmp_path / "o"))
    assert code == 0 and not _warnings(err) and "token limits" not in err, err


def test_the_over_limit_check_reuses_its_estimate(
    server: Loopback,
    qfile: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "Must not slow the batch": the estimate made for the check is the one the request is
    admitted with (a spend cap reads it), never a second one made by the transport."""
    import toolnexus.transport.retry as retry

    made: list[int] = []
    real = retry.estimate_tokens

    def counted(body: Any, *a: Any) -> Any:
        made.append(len(body))
        return real(body, *a)

    monkeypatch.setattr(retry, "estimate_tokens", counted)
    inp = _input(tmp_path, [BIG, "short"])
    args = ["batch", str(qfile), str(inp), "--id-field", "id", "--state-field", "text"]
    code, _, err = run_main(
        capfd, *args, "--base-url", server.base_url, "-o", str(tmp_path / "o"),
        "--max-tokens", "10000000", "--concurrency", "1",
    )  # fmt: skip
    assert code == 0 and len(_warnings(err)) == 1, err
    assert len(made) == 1 and made[0] < 1_000, "only the short state is estimated there"


def test_no_request_at_most_the_safe_size_can_pass_a_limit() -> None:
    """The byte gate under which a batch checks nothing: worst-case text (one-byte pieces,
    the most upper-bound units per byte) at that size stays under both limits."""
    from toolnexus.scheduler.tokens import (
        LIMIT_SAFE_BYTES,
        STATE_AND_QUESTION_TOKENS,
        estimate_tokens,
        request_limit,
    )

    worst = (b"1a" * LIMIT_SAFE_BYTES)[:LIMIT_SAFE_BYTES]
    assert estimate_tokens(worst).upper + 64 <= STATE_AND_QUESTION_TOKENS
    over = (b"1a" * LIMIT_SAFE_BYTES)[: LIMIT_SAFE_BYTES + 64]
    assert request_limit(over, lambda: over)[1] is not None, "the gate is tight, not loose"
