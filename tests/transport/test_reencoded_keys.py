"""Issue 43 item 1: "Re-encoded keys survive in error messages. A 500 whose body echoes the key
base64-encoded, percent-encoded or upper-cased reaches the CLI's error line, each batch record's
``error.message`` and MCP's ``isError`` text; a percent-encoded echo of a Basic header keeps the
base64 of ``user:password``. Redact each credential in every spelling ... everywhere a server's
text is shown or stored (one redaction function, as today, used by every path)."

The matrix (spelling x path) runs in-process on ``httpx.MockTransport``: the library's exception,
a library batch run's records (what ``batch`` writes), the MCP tool's ``isError`` text and every
log line; then the CLI's error line end to end against ``toolnexus serve`` for a few spellings.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote, quote_plus, unquote

import httpx
import pytest

from clirun import error_line, run_cli
from hostile_server import HostileServer, Reply, Request
from toolnexus import ClassifierError, create_classifier
from toolnexus.core.questions import normalize_questions

#: Mixed case (so upper- and lower-casing change it) with characters percent-encoding changes.
KEY = "Tnk+5ecret/A1b2=c3D4e5F6a7B8"
USER, PASSWORD = "svc", "Pa+ss/5ecret=9z8Y7x"
#: The base URL's credentials go as ``Authorization: Basic base64(svc:PASSWORD)``.
URL_CREDENTIALS = f"{USER}:{quote(PASSWORD, safe='')}"
QUESTIONS = {"q": {"type": "noul", "instructions": "Is it so?"}}


def _b64(text: str, urlsafe: bool = False) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode(text.encode()).decode()


def _lower_hex(text: str) -> str:
    return re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), text)


#: spelling -> (does the base URL carry user:pass@?, the echo of the Authorization header sent,
#: the part of that echo that is made of the credential: no 8 characters of it may show)
Spelling = tuple[bool, Callable[[str], tuple[str, str]]]
SPELLINGS: dict[str, Spelling] = {
    "upper-cased": (False, lambda auth: (auth.upper(), KEY.upper())),
    "lower-cased": (False, lambda auth: (auth.lower(), KEY.lower())),
    "percent-encoded": (False, lambda auth: (quote(auth, safe=""), quote(KEY, safe=""))),
    "percent-lower-hex": (
        False,
        lambda auth: (_lower_hex(quote(auth, safe="")), _lower_hex(quote(KEY, safe=""))),
    ),
    "form-encoded": (False, lambda auth: (quote_plus(auth, safe=""), quote_plus(KEY, safe=""))),
    "base64": (False, lambda auth: (_b64(KEY), _b64(KEY))),
    "base64-url-safe": (False, lambda auth: (_b64(KEY, True), _b64(KEY, True))),
    "base64-of-the-header": (False, lambda auth: (_b64(auth), _b64(auth)[11:-3])),
    "base64-upper-cased": (False, lambda auth: (_b64(KEY).upper(), _b64(KEY).upper())),
    "basic-header-percent-encoded": (
        True,
        lambda auth: (quote(auth, safe=""), quote(auth, safe="")[len("Basic%20") + 6 :]),
    ),
    "basic-header-base64-percent-encoded": (
        True,
        lambda auth: (quote(auth.removeprefix("Basic "), safe=""), quote(auth, safe="")[14:]),
    ),
}
IDS = list(SPELLINGS)


def _fragments(text: str, width: int = 8) -> list[str]:
    return [text[i : i + width].lower() for i in range(len(text) - width + 1)]


def assert_clean(text: str, where: str, core: str) -> None:
    """No 8 consecutive characters (any case) of the credential, or of the spelling it was
    echoed in, in ``text`` as written or percent-decoded."""
    for shown in (text.lower(), unquote(text).lower()):
        for secret in (KEY, PASSWORD, f"{USER}:{PASSWORD}", core):
            for frag in _fragments(secret):
                assert frag not in shown, f"{where} leaks {frag!r}: ...{text[:300]}"


def _echo(spelling: str) -> Callable[[str], tuple[str, str]]:
    return SPELLINGS[spelling][1]


def _base_url(spelling: str, base: str = "http://x.invalid/v1") -> str:
    if not SPELLINGS[spelling][0]:
        return base
    scheme, _, rest = base.partition("://")
    return f"{scheme}://{URL_CREDENTIALS}@{rest}"


def _handler(spelling: str) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        echo, _ = _echo(spelling)(request.headers["Authorization"])
        body = {"detail": f"invalid credential {echo} for this account", "echo": echo}
        return httpx.Response(500, content=json.dumps(body).encode())

    return handler


def _classifier(spelling: str) -> Any:
    return create_classifier(
        base_url=_base_url(spelling),
        transport=httpx.MockTransport(_handler(spelling)),
        retries=0,
    )


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """The key in the environment, unless the base URL's user:pass@ is the credential (a
    request carries one Authorization)."""
    spelling = getattr(request.node, "callspec", None)
    spelling = spelling.params.get("spelling") if spelling else None
    if spelling is not None and SPELLINGS[spelling][0]:
        monkeypatch.delenv("TYPESAFE_API_KEY", raising=False)
    else:
        monkeypatch.setenv("TYPESAFE_API_KEY", KEY)


@pytest.fixture
def logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


def _core(spelling: str) -> str:
    auth = "Basic " + _b64(f"{USER}:{PASSWORD}") if SPELLINGS[spelling][0] else f"Bearer {KEY}"
    return _echo(spelling)(auth)[1]


def test_the_server_does_echo_each_spelling_unredacted_before_the_scrub() -> None:
    """The matrix is not vacuous: each echo carries its credential's spelling."""
    for spelling in IDS:
        core = _core(spelling)
        assert len(core) >= 12, spelling
        assert KEY not in core and PASSWORD not in core, spelling


@pytest.mark.parametrize("spelling", IDS)
def test_the_library_exception(spelling: str, logs: pytest.LogCaptureFixture) -> None:
    async def go() -> ClassifierError:
        async with _classifier(spelling) as judge:
            try:
                await judge.evaluate("s", QUESTIONS)
            except ClassifierError as e:
                return e
        raise AssertionError("a 500 must fail")

    e = asyncio.run(go())
    assert "HTTP 500" in str(e)
    shown = f"{e} {e!r} {getattr(e, 'body', '')} {logs.text}"
    assert_clean(shown, "library exception", _core(spelling))


@pytest.mark.parametrize("spelling", IDS)
def test_the_batch_records_error_message(
    spelling: str, tmp_path: Path, logs: pytest.LogCaptureFixture
) -> None:
    from toolnexus.run import RunConfig, run_batch

    states = tmp_path / "in.jsonl"
    states.write_text('{"id": "a", "text": "one"}\n{"id": "b", "text": "two"}\n')
    out = tmp_path / "out.jsonl"
    cfg = RunConfig(
        normalize_questions(QUESTIONS),
        (str(states),),
        id_field="id",
        state_fields=("text",),
        output=str(out),
        classifier={
            "base_url": _base_url(spelling),
            "transport": httpx.MockTransport(_handler(spelling)),
            "retries": 0,
        },
    )
    run_batch(cfg)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records and all("HTTP 500" in r["error"]["message"] for r in records)
    for r in records:
        assert_clean(r["error"]["message"], "error.message", _core(spelling))
    assert_clean(out.read_text() + logs.text, "batch output and logs", _core(spelling))


@pytest.mark.parametrize("spelling", IDS)
def test_the_mcp_is_error_text(spelling: str, logs: pytest.LogCaptureFixture) -> None:
    from toolnexus.cli.mcp_server import McpApp, QuestionTool
    from toolnexus.scheduler.run import Scheduler

    async def go() -> tuple[Any, str, bool]:
        async with _classifier(spelling) as judge:
            backend: Any = SimpleNamespace(classifier=judge, model=None)
            tool = QuestionTool("t", Path("t.yaml"), None, normalize_questions(QUESTIONS))
            app = McpApp({"t": tool}, {None: backend}, Scheduler.for_run(concurrency=1))
            return await app.call("t", {"state": "s"})

    structured, text, is_error = asyncio.run(go())
    assert is_error and "HTTP 500" in text
    assert_clean(f"{text} {structured} {logs.text}", "MCP isError text", _core(spelling))


@pytest.mark.parametrize("spelling", ["upper-cased", "base64", "basic-header-percent-encoded"])
def test_the_cli_error_line(spelling: str, tmp_path: Path) -> None:
    """End to end: ``toolnexus eval`` against ``toolnexus serve`` echoing the spelling."""

    def answer(req: Request) -> Reply:
        echo, _ = _echo(spelling)(req.headers.get("Authorization", ""))
        return Reply(500, json.dumps({"detail": f"invalid credential {echo}"}).encode())

    qfile = tmp_path / "q.yaml"
    qfile.write_text("questions:\n  q: {type: noul, instructions: Is it so?}\n")
    with HostileServer(answer) as server:
        ran = run_cli(
            "eval", str(qfile), "--state-text", "s", "--retries", "0",
            "--base-url", _base_url(spelling, server.base_url),
        )  # fmt: skip
    assert ran.code != 0
    line = error_line(ran.stderr)
    assert "HTTP 500" in line and "«redacted»" in line, line
    assert_clean(line + ran.out, "CLI error line", _core(spelling))


@pytest.mark.parametrize(
    ("secret", "text", "core"),
    [
        pytest.param("sk-abc123def456", "SK-ABC123DEF456", "SK-ABC123DEF456", id="upper"),
        pytest.param("sk-abc123def456", _b64("sk-abc123def456"), _b64("sk-abc123def456"),
                     id="base64"),
        pytest.param("k+y/z=abcdefgh", "k%2by%2fz%3dabcdefgh", "k%2by%2fz%3dabcdefgh",
                     id="percent-lower-hex"),
        pytest.param("sk-abc123def456", _b64("Bearer sk-abc123def456"),
                     _b64("Bearer sk-abc123def456")[11:-3], id="base64-inside-a-header"),
        pytest.param("sk-abc123def456", json.dumps({"e": _b64("sk-abc123def456")}),
                     _b64("sk-abc123def456"), id="base64-in-json"),
    ],
)  # fmt: skip
def test_one_function_scrubs_text_and_bytes_alike(secret: str, text: str, core: str) -> None:
    """'one redaction function, as today, used by every path': ``scrub`` (text) and
    ``scrub_bytes`` (a body before it is decoded) hide the same spellings."""
    from toolnexus.transport.redaction import scrub, scrub_bytes

    assert core not in scrub(f"x {text} y", [secret])
    assert core.encode() not in scrub_bytes(f"x {text} y".encode(), [secret])


def test_a_short_user_name_is_not_scrubbed_in_its_base64_letters() -> None:
    """A 3-character user name's base64 is 4 letters: those are left alone (only spellings of
    8 characters or more are scrubbed encoded)."""
    from toolnexus.transport.redaction import scrub

    assert scrub("Ym9i and the rest of the message", ["bob"]) == (
        "Ym9i and the rest of the message"
    )
