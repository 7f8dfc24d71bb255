"""Issue 29 item 1: "A key written with JSON ``\\u`` escapes inside a 200 decision reaches every
output." The scrub ran on the raw bytes only, so ``{"model": "m-\\u0073\\u006b..."}`` decoded into
the Decision and from there onto stdout, records, the cache and recordings.

"Redact after decoding as well, in every string a decoded body can carry (model, answer fields,
raw answers, legend texts, error messages), for every spelling JSON allows: fully escaped, partly
escaped, lower and upper case hex, escaped surrogate pairs, mixed with plain characters. The same
for what ``serve --proxy --record`` writes and logs."

The matrix (spelling x field x status) runs on ``httpx.MockTransport``; then one end-to-end run
per output through ``toolnexus serve`` with a script that spells the key in escapes.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from clirun import run_cli
from hostile_server import valid_answer
from serving import ThreadedServer
from toolnexus import ClassifierError, create_classifier
from toolnexus.core.questions import normalize_questions
from toolnexus.serve import ServeOptions
from toolnexus.serve.script import ScriptedReply, ScriptedRequest
from toolnexus.transport.redaction import scrub_bytes, scrub_value

#: An ASCII key with a slash, so ``\\/`` is one of its spellings.
KEY = "tnk-esc/5ecret-a1b2c3d4e5f6"
#: A URL password past the BMP: JSON may spell it only with an escaped surrogate pair.
ASTRAL = "pa\U0001f600ss-5ecret-9z8y"
ASTRAL_URL = "http://user:pa%F0%9F%98%80ss-5ecret-9z8y@x.invalid/v1"


def _u(c: str, upper: bool = False) -> str:
    """``c`` as JSON ``\\u`` escapes (a surrogate pair past the BMP)."""
    units = c.encode("utf-16-be")
    fmt = "\\u%04X" if upper else "\\u%04x"
    return "".join(fmt % int.from_bytes(units[i : i + 2], "big") for i in range(0, len(units), 2))


def _spell(secret: str, how: str) -> str:
    """``secret`` as the JSON text between two quotes, spelled ``how``."""
    if how == "lower":
        return "".join(_u(c) for c in secret)
    if how == "upper":
        return "".join(_u(c, upper=True) for c in secret)
    if how == "partial":
        return "".join(_u(c) if i % 2 else c for i, c in enumerate(secret))
    if how == "mixed-case":
        return "".join(_u(c, upper=bool(i % 3)) for i, c in enumerate(secret))
    if how == "slash":
        return "".join(
            "\\/" if c == "/" else (_u(c) if i == 1 else c) for i, c in enumerate(secret)
        )
    if how == "astral-only":  # plain characters, the astral one as an escaped surrogate pair
        return "".join(_u(c) if ord(c) > 0xFFFF else c for c in secret)
    raise AssertionError(how)


SPELLINGS = ["lower", "upper", "partial", "mixed-case", "slash"]
FIELDS = ["model", "choice", "probability-key", "legend", "raw-answer", "message"]
STATUSES = [200, 422, 503]


def _decoded(text: str) -> str:
    """``text`` with every JSON escape a reader would decode decoded (so a fragment check
    sees what a person or a program reading the output would see)."""

    def one(m: re.Match[str]) -> str:
        try:
            return str(json.loads('"' + m.group() + '"'))
        except ValueError:
            return m.group()

    text = re.sub(r"(?:\\u[0-9a-fA-F]{4})+|\\/", one, text)
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def assert_clean(text: str | bytes, where: str, secret: str = KEY) -> None:
    """No 8 consecutive characters of ``secret`` in ``text``, as written or as decoded."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    for form in (text, _decoded(text)):
        for i in range(len(secret) - 7):
            frag = secret[i : i + 8]
            assert frag not in form, f"{where} leaks {frag!r}: ...{form[:300]}"


def _valid(request: httpx.Request | ScriptedRequest) -> dict[str, Any]:
    """A valid answer to ``request``, score legends echoing the question's own levels."""
    sent = json.loads(request.content if isinstance(request, httpx.Request) else request.body)
    body = valid_answer(sent)
    for key, q in sent["questions"].items():
        if q["type"] == "score":
            body["answers"][key]["legend"] = {str(i): lv for i, lv in enumerate(q["criteria"])}
    return body


def _poison(body: dict[str, Any], field: str, spelled: str) -> str:
    """``body`` as JSON text with ``spelled`` (already JSON-escaped text) placed in ``field``."""
    marker = "@@SECRET@@"
    if field == "model":
        body["model"] = "m-" + marker
    elif field == "choice":
        body["answers"]["d"]["choice"] = marker
    elif field == "probability-key":
        body["answers"]["d"]["probabilities"][marker] = 0.0
    elif field == "legend":
        body["answers"]["s"]["legend"]["0"] = "low " + marker
    elif field == "raw-answer":
        body["answers"]["box"] = {"type": "box", "boxes": [{"label": marker}]}
    elif field == "message":
        body["detail"] = f"token {marker} refused"
        body["error"] = {"message": f"token {marker} refused"}
    return json.dumps(body, ensure_ascii=False).replace(marker, spelled)


QUESTIONS: dict[str, Any] = {
    "q": {"type": "noul", "instructions": "Is it so?"},
    "d": {"type": "choice", "instructions": "Which?", "criteria": {"a": "pick a", "b": "pick b"}},
    "s": {"type": "score", "instructions": "How much?", "criteria": ["low", "mid", "high"]},
    "box": {"type": "box", "instructions": "Where?"},
}


def _outcome(handler: Callable[[httpx.Request], httpx.Response], base_url: str) -> str:
    """Every text a caller can get from one evaluate: the decision's repr and wire form (sorted
    and dumped as stored), or the error's str, repr and body."""
    qs = normalize_questions(QUESTIONS)

    async def go() -> str:
        async with create_classifier(
            base_url=base_url, transport=httpx.MockTransport(handler), retries=0
        ) as judge:
            try:
                d = await judge.evaluate("s", qs)
            except ClassifierError as e:
                return f"{e} {e!r} {getattr(e, 'body', '')}"
            wire = json.dumps(d.to_wire(), ensure_ascii=False)
            return f"{d!r} {wire} {d.validate(qs)}"

    return asyncio.run(go())


@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_an_escaped_key_never_decodes_into_a_decision_or_an_error(
    monkeypatch: pytest.MonkeyPatch, spelling: str, field: str, status: int
) -> None:
    """Each spelling x each field x a 200, a 4xx and a 5xx body (issue 29 item 1)."""
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)

    def handler(request: httpx.Request) -> httpx.Response:
        sent = request.headers["Authorization"].removeprefix("Bearer ")
        assert sent == KEY
        body = _poison(_valid(request), field, _spell(sent, spelling))
        return httpx.Response(status, content=body.encode(), headers={"x-typesafe-request-id": "r"})

    outcome = _outcome(handler, "http://x.invalid/v1")
    assert_clean(outcome, f"{status} {field} {spelling}")
    assert "redacted" in outcome or status != 200 or field == "message", outcome


@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("spelling", ["lower", "upper", "astral-only", "partial"])
def test_a_url_password_past_the_bmp_spelled_as_a_surrogate_pair_is_scrubbed(
    spelling: str, status: int
) -> None:
    """ "escaped surrogate pairs": a base URL's password (sent as Basic auth) holds a character
    past the BMP, which JSON may spell only as two ``\\u`` escapes."""

    def handler(request: httpx.Request) -> httpx.Response:
        body = _poison(_valid(request), "model", _spell(ASTRAL, spelling))
        return httpx.Response(status, content=body.encode())

    assert_clean(_outcome(handler, ASTRAL_URL), f"{status} {spelling}", ASTRAL)


@pytest.mark.parametrize(
    "spelled",
    [
        pytest.param('"' + _spell(KEY, "lower") + '"', id="whole-literal"),
        pytest.param('"a\\"b ' + _spell(KEY, "partial") + ' \\\\"', id="beside-escaped-quotes"),
        pytest.param('"\\ud800 ' + _spell(KEY, "upper") + '"', id="beside-a-lone-surrogate"),
        pytest.param(
            json.dumps(json.dumps({"model": _spell(KEY, "lower")})), id="json-inside-a-string"
        ),
    ],
)
def test_scrub_bytes_rewrites_only_the_literal_that_held_the_key(spelled: str) -> None:
    """The other bytes of the body stay as they were; the rewritten literal is valid JSON."""
    body = ('{"n": 1.50, "keep": "caf\\u00e9", "x": ' + spelled + "}").encode()
    out = scrub_bytes(body, [KEY])
    assert out.startswith(b'{"n": 1.50, "keep": "caf\\u00e9", "x": ')
    parsed = json.loads(out)
    assert_clean(json.dumps(parsed, ensure_ascii=False), "rewritten")
    assert_clean(out, "bytes")


def test_scrub_bytes_leaves_a_body_without_the_key_byte_for_byte() -> None:
    body = b'{"model": "caf\\u00e9 \\ud83d\\ude00", "answers": {}, "n": 1.0e2}'
    assert scrub_bytes(body, [KEY]) is body or scrub_bytes(body, [KEY]) == body


def test_scrub_value_walks_keys_and_values() -> None:
    value = {KEY: [f"a {KEY}", {"k": KEY}], "n": 1}
    assert_clean(json.dumps(scrub_value(value, [KEY])), "walked")
    assert value[KEY] == [f"a {KEY}", {"k": KEY}], "the input is left as it was"


# --- end to end: every output, through `toolnexus serve` ----------------------------------------

QFILE = (
    "questions:\n"
    "  q: {type: noul, instructions: Is it so?}\n"
    "  d: {type: choice, instructions: Which?, criteria: {a: pick a, b: pick b}}\n"
    "  s: {type: score, instructions: How much?, criteria: [low, mid, high]}\n"
)


def _escaping_script(req: ScriptedRequest) -> ScriptedReply | None:
    """A valid answer that spells the caller's key, in escapes, in the model and a legend."""
    if req.endpoint != "systemone" or not req.key:
        return None
    text = _poison(_valid(req), "model", _spell(req.key, "partial"))
    return ScriptedReply(200, text.encode())


@pytest.fixture
def escaping_server() -> Iterator[ThreadedServer]:
    with ThreadedServer(ServeOptions(synthetic=True, script=_escaping_script)) as s:
        yield s


def _files(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def test_every_output_of_eval_and_batch_is_clean(
    escaping_server: ThreadedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stdout (json and table), records in every format, the cache and recordings."""
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)
    qfile = tmp_path / "q.yaml"
    qfile.write_text(QFILE)
    base = ["--base-url", escaping_server.url + "/v1", "--retries", "0"]
    for fmt in ("json", "table", "jsonl"):
        ran = run_cli("eval", str(qfile), "--state-text", "x", "--format", fmt, *base)
        assert ran.code == 0, ran.stderr
        assert "redacted" in ran.out
        assert_clean(ran.stdout, f"eval --format {fmt} stdout")
        assert_clean(ran.stderr, "eval stderr")
    states = tmp_path / "s.jsonl"
    states.write_text('"one"\n"two"\n')
    for fmt in ("jsonl", "json", "csv", "parquet"):
        out = tmp_path / f"out.{fmt}"
        cache, rec = tmp_path / f"cache-{fmt}", tmp_path / f"rec-{fmt}"
        ran = run_cli(
            "batch", str(qfile), str(states), "-o", str(out), "--format", fmt,
            "--cache", "--cache-dir", str(cache), "--record", str(rec), *base,
        )  # fmt: skip
        assert ran.code == 0, ran.stderr
        assert_clean(ran.stdout + ran.stderr.encode(), f"batch {fmt} messages")
        assert_clean(out.read_bytes(), f"batch --format {fmt} output")
        if fmt == "parquet":
            import pyarrow.parquet as pq

            assert_clean(json.dumps(pq.read_table(out).to_pylist(), default=str), "parquet rows")
        assert_clean(_files(cache), "cache")
        assert list(rec.rglob("*.json")), "a recording was written"
        assert_clean(_files(rec), "recordings")


def test_serve_proxy_record_writes_and_logs_no_escaped_key(
    escaping_server: ThreadedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "The same for what ``serve --proxy --record`` writes and logs": the upstream echoes the
    caller's key in escapes; the proxy hands the answer back unchanged (the client scrubs it)
    but records and logs it scrubbed."""
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)
    rec = tmp_path / "rec"
    log = io.StringIO()
    options = ServeOptions(proxy=escaping_server.url + "/v1", record=rec, access_log=log)
    with ThreadedServer(options) as proxy:
        qfile = tmp_path / "q.yaml"
        qfile.write_text(QFILE)
        ran = run_cli(
            "eval", str(qfile), "--state-text", "x", "--format", "json",
            "--base-url", proxy.url + "/v1", "--retries", "0",
        )  # fmt: skip
        assert ran.code == 0, ran.stderr
        assert_clean(ran.stdout, "eval through the proxy")
    files = list(rec.rglob("*.json"))
    assert files, "the exchange was recorded"
    assert_clean(_files(rec), "proxy recording")
    assert b"redacted" in _files(rec)
    assert " recorded" in log.getvalue(), log.getvalue()
    assert_clean(log.getvalue(), "proxy log")
