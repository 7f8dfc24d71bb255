"""Issue 43 item 9: "`filter` skips the checks `eval`/`batch` make: a 50 MB state is sent with no
warning about the 64,000-token request limit. On SIGINT the in-flight lines are dropped with only
'interrupted': say how many requests were sent and paid but not written."

Against ``httpx.MockTransport`` (the classifier the CLI builds, with the transport swapped): the
interrupt happens by construction, raised by the fake server once both requests are in flight.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from clirun import run_cli
from toolnexus.core.failures import (
    EXIT_INTERRUPTED,
    EXIT_OK,
)

KEY_ENV = "FILTER_CHECKS_SECRET"
QUESTIONS = (
    "questions:\n  refund: {type: noul, instructions: Is the customer asking for money back?}\n"
)

Handler = Callable[[httpx.Request], Awaitable[httpx.Response]]


@pytest.fixture
def qfile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(KEY_ENV, "sk-filter-checks-1")
    path = tmp_path / "q.yaml"
    path.write_text(QUESTIONS, encoding="utf-8")
    return path


def _serve(monkeypatch: pytest.MonkeyPatch, handler: Handler) -> None:
    """Every classifier the CLI builds talks to ``handler``."""
    import toolnexus.classifier.factory

    real = toolnexus.classifier.factory.create_classifier

    def create(**options: Any) -> Any:
        return real(**{**options, "transport": httpx.MockTransport(handler)})

    monkeypatch.setattr(toolnexus.classifier.factory, "create_classifier", create)


def _answer(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    answers = {k: {"type": "noul", "noul": 0.9} for k in body["questions"]}
    usage = {"input_tokens": 1, "output_tokens": 1}
    return httpx.Response(200, json={"model": body["model"], "answers": answers, "usage": usage})


def _filter(qfile: Path, *args: str, input: bytes) -> Any:
    return run_cli(
        "filter", str(qfile), "--where", "refund >= 0", "--base-url",
        "https://api.example.test/v1", "--api-key-env", KEY_ENV, "--retries", "0", *args,
        input=input,
    )  # fmt: skip


def test_a_line_over_the_token_limit_is_warned_about_before_it_is_sent(
    qfile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library's check (``BatchOptions.on_over_limit``, as batch): one warning naming the
    first line over the limit, one count line for the rest."""

    async def handler(request: httpx.Request) -> httpx.Response:
        if len(request.content) > 60_000:
            return httpx.Response(400, json={"detail": "request too large"})
        return _answer(request)

    _serve(monkeypatch, handler)
    big = b"x" * 70_000 + b"\n"
    ran = _filter(qfile, "--pack", "1", input=b"small one\n" + big + big)
    warned = [line for line in ran.stderr.splitlines() if "token limits" in line]
    assert warned[0].startswith("toolnexus: warning: stdin:2 will pass the wire's token limits (")
    assert warned[1:] == [
        "toolnexus: 2 lines were over the wire's token limits (the first is named above)"
    ]
    assert ran.stdout == b"small one\n"


def test_a_line_under_the_limit_says_nothing(qfile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return _answer(request)

    _serve(monkeypatch, handler)
    ran = _filter(qfile, input=b"one\ntwo\n")
    assert (ran.code, ran.stdout, ran.stderr) == (EXIT_OK, b"one\ntwo\n", "")


def test_sigint_says_how_many_lines_and_requests_were_sent_and_not_written(
    qfile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two requests reach the fake server and are never answered; the second one's arrival
    raises SIGINT (no sleep, no timing: the interrupt happens when both are in flight)."""
    arrived = 0
    never = asyncio.Event()

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            signal.raise_signal(signal.SIGINT)
        await never.wait()
        raise AssertionError("never answered")  # pragma: no cover

    _serve(monkeypatch, handler)
    ran = _filter(qfile, "--pack", "1", "--concurrency", "2", input=b"one\ntwo\n")
    assert ran.code == EXIT_INTERRUPTED
    assert ran.stdout == b""
    assert ran.stderr == (
        "toolnexus: interrupted: 2 lines sent and not written: 2 requests still in flight (the "
        "server may bill them)\n"
    )
