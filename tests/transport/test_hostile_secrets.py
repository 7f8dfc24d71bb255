"""Hostile servers (issue 9, "Secrets: the key never lands anywhere, whatever the server sends",
and "Bounded work on hostile input" for responses).

A server echoes the key in every place a server can put text (status line aside): 200, 4xx and
5xx bodies, JSON and not, every answer field, headers. The suite then greps stdout, stderr,
output files, the SQLite cache and ``--record`` files for the key, and for any 8 characters of it
(a body cut to 40 characters BEFORE scrubbing once leaked 17 of 18).
"""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clirun import error_line, run_cli
from hostile_server import (
    HostileServer,
    Reply,
    Request,
    qfile_fixture,
    server_fixture,
    valid_answer,
)
from toolnexus import ClassifierError, ConfigError, create_classifier
from toolnexus.core.errors import BackendError

KEY = "tnk-5ecret-a1b2c3d4e5f6a7b8"
HEADER_SECRET = 'hdr-"quoted"/back\\slash-secret'
QUESTIONS = (
    "questions:\n"
    "  q: {type: noul, instructions: Is it so?}\n"
    "  d: {type: choice, instructions: Which?, criteria: {a: pick a, b: pick b}}\n"
    "  s: {type: score, instructions: How much?, criteria: [low, mid, high]}\n"
)


def fragments(secret: str, width: int = 8) -> list[str]:
    return [secret[i : i + width] for i in range(len(secret) - width + 1)]


def assert_clean(text: str | bytes, where: str, secret: str = KEY) -> None:
    """No 8 consecutive characters of ``secret`` in ``text``, in plain or JSON-escaped form."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    escaped = json.dumps(secret)[1:-1]
    for form in {secret, escaped}:
        for frag in fragments(form):
            assert frag not in text, f"{where} leaks {frag!r}: ...{text[:300]}"


def _swap(obj: object, old: str, new: str) -> object:
    return json.loads(json.dumps(obj).replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1]))


def _poisoned(place: str) -> Callable[[Request], Reply]:
    """A reply that carries the request's own key in ``place``."""

    def answer(req: Request) -> Reply:
        key = req.key
        body = valid_answer(req.json)
        rid = {"x-typesafe-request-id": "req-1"}
        if place == "200-text":
            return Reply(200, f"bad credential: Bearer {key} was refused".encode(), rid)
        if place == "model":
            body["model"] = key
        elif place == "choice":
            body["answers"]["d"]["choice"] = key
        elif place == "type":
            body["answers"]["q"]["type"] = key
        elif place == "probability-key":
            body["answers"]["d"]["probabilities"][key] = 0.0
        elif place == "legend":
            body["answers"]["s"]["legend"]["0"] = key
        elif place == "unexpected-answer":
            body["answers"][key] = {"type": "noul", "noul": 0.5}
        elif place == "request-id":
            return Reply(200, json.dumps(body).encode(), {"x-typesafe-request-id": key})
        elif place in ("400", "422", "500", "401", "429"):
            detail = {"detail": f"token {key} is not valid here", "echo": {"auth": f"Bearer {key}"}}
            return Reply(int(place), json.dumps(detail).encode(), rid)
        elif place == "5xx-text":
            return Reply(502, f"<html>upstream said Bearer {key}</html>".encode(), rid)
        elif place == "gzip-text":
            return Reply(200, f"bad credential {key}".encode(), rid, gzip=True)
        elif place == "escaped":
            text = json.dumps(body)[:-1] + f', "note": {json.dumps(key, ensure_ascii=True)}}}'
            return Reply(200, text.replace(key, json.dumps(key)[1:-1]).encode(), rid)
        return Reply(200, json.dumps(body).encode(), rid)

    return answer


PLACES = [
    "200-text",
    "model",
    "choice",
    "type",
    "probability-key",
    "legend",
    "unexpected-answer",
    "request-id",
    "400",
    "422",
    "500",
    "401",
    "429",
    "5xx-text",
    "gzip-text",
    "escaped",
]


qfile = qfile_fixture(QUESTIONS)


server = server_fixture(KEY)


def _cache_bytes(cache_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in cache_dir.rglob("*") if p.is_file())


@pytest.mark.parametrize("place", PLACES)
def test_the_key_echoed_anywhere_by_the_server_lands_nowhere(
    server: HostileServer, qfile: Path, tmp_path: Path, place: str
) -> None:
    """Issue 9: "the raw response bytes of every status are scrubbed of the key ... before
    anything is decoded, truncated, stored, recorded or printed"."""
    server.answer = _poisoned(place)
    cache_dir = tmp_path / "cache"
    recordings = tmp_path / "rec"
    base = ["--base-url", server.base_url, "--retries", "0"]
    ran = run_cli("eval", str(qfile), "--state-text", "x", "--format", "json", *base)
    assert "Traceback" not in ran.stderr
    assert ran.code in (0, 3), ran.stderr
    assert_clean(ran.stdout, "eval stdout")
    assert_clean(ran.stderr, "eval stderr")
    states = tmp_path / "s.jsonl"
    states.write_text('"one"\n"two"\n')
    out = tmp_path / "out.jsonl"
    ran = run_cli(
        "batch",
        str(qfile),
        str(states),
        "-o",
        str(out),
        "--cache",
        "--cache-dir",
        str(cache_dir),
        "--record",
        str(recordings),
        # A server that answers only 429 is ridden out for the patience (issue 32 item 2):
        # one second here, not the default minute.
        "--patience",
        "1",
        *base,
    )
    assert "Traceback" not in ran.stderr
    assert_clean(ran.stdout, "batch stdout")
    assert_clean(ran.stderr, "batch stderr")
    assert_clean(out.read_bytes(), "batch output")
    assert_clean(_cache_bytes(cache_dir), "cache")
    for p in recordings.rglob("*"):
        if p.is_file():
            assert_clean(p.read_bytes(), f"recording {p.name}")
    assert server.seen, "the server was asked"


def test_an_expanded_header_value_is_scrubbed_plain_and_json_escaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 9: "(and of every expanded header value, in plain and JSON-escaped forms)"."""
    monkeypatch.setenv("TEAM_TOKEN", HEADER_SECRET)

    def handler(request: httpx.Request) -> httpx.Response:
        sent = request.headers["X-Team"]
        escaped = json.dumps({"model": sent, "answers": {}})  # the JSON-escaped form
        return httpx.Response(500, content=f"{escaped} and plain: {sent}".encode())

    async def go() -> str:
        async with create_classifier(
            base_url="http://x.invalid/v1",
            headers={"X-Team": "${TEAM_TOKEN}"},
            transport=httpx.MockTransport(handler),
            retries=0,
        ) as judge:
            try:
                await judge.evaluate("s", {"q": {"type": "noul", "instructions": "i"}})
            except BackendError as e:
                return f"{e} {e!r} {getattr(e, 'body', '')}"
        raise AssertionError("a 500 must fail")

    assert_clean(asyncio.run(go()), "error", HEADER_SECRET)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    status=st.sampled_from([200, 200, 200, 400, 404, 422, 500, 503]),
    shape=st.recursive(
        st.none()
        | st.booleans()
        | st.floats(allow_nan=False)
        | st.integers()
        | st.sampled_from(["KEY", "Bearer KEY", "x", "noul", "choice"]),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(["model", "answers", "q", "KEY", "type", "noul"]), inner
            )
        ),
        max_leaves=12,
    ),
    raw=st.booleans(),
)
def test_any_body_with_the_key_anywhere_leaves_no_trace(
    status: int, shape: object, raw: bool
) -> None:
    """Hypothesis drives response bodies: any status, any JSON shape, the key (and 'Bearer key')
    in any string or object key, or the same as plain text. The outcome is a Decision or a
    ClassifierError, and no str/repr/body of either holds the key."""
    text = json.dumps(shape).replace("KEY", KEY)
    content = (f"oops {text}" if raw else text).encode()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, content=content, headers={"x-typesafe-request-id": KEY})

    async def go() -> str:
        async with create_classifier(
            base_url="http://x.invalid/v1", transport=httpx.MockTransport(handler), retries=0
        ) as judge:
            try:
                d = await judge.evaluate("s", {"q": {"type": "noul", "instructions": "i"}})
            except ClassifierError as e:
                return f"{e} {e!r} {getattr(e, 'body', '')} {getattr(e, 'request_id', '')}"
            return f"{d!r} {d.to_wire()}"

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TYPESAFE_API_KEY", KEY)
        assert_clean(asyncio.run(go()), "outcome")


# --- bounded responses ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        pytest.param(Reply(200, b"[" * 100_000 + b"]" * 100_000), "nested more than 64", id="deep"),
        pytest.param(
            Reply(
                200,
                b'{"model": "m", "answers": {}, "usage": {"input_tokens": ' + b"9" * 5000 + b"}}",
            ),
            "a number of 5000 characters",
            id="huge-token-count",
        ),
        pytest.param(
            Reply(200, b'{"model": "m", "answers": {"q": {"type": "noul", "noul": NaN}}}'),
            "NaN is not JSON",
            id="nan",
        ),
        pytest.param(
            Reply(200, b'{"model": "m", "answers": {}, "usage": {"cost": Infinity}}'),
            "Infinity is not JSON",
            id="infinite-cost",
        ),
        pytest.param(Reply(200, b"\0" * (64 << 20), gzip=True), "larger than", id="gzip-bomb"),
    ],
)
def test_a_hostile_body_is_one_line_naming_status_endpoint_and_request_id(
    server: HostileServer, qfile: Path, reply: Reply, expected: str
) -> None:
    """Issue 9: "cap the decoded body size ...; cap JSON nesting and number length in decoding
    ...; reject NaN/Infinity anywhere in a response. Each is one line naming the status,
    endpoint, request id and what was wrong"."""
    reply.headers["x-typesafe-request-id"] = "req-42"
    server.answer = lambda req: reply
    ran = run_cli(
        "eval", str(qfile), "--state-text", "x", "--base-url", server.base_url, "--retries", "0"
    )
    assert ran.code == 3
    line = error_line(ran.stderr)
    assert expected in line, line
    assert "HTTP 200" in line and f"{server.base_url}/systemone" in line and "req-42" in line


def test_a_400_mb_body_is_refused_not_called_empty(server: HostileServer, qfile: Path) -> None:
    """Issue 9: "a 400 MB body became 1.27 GB and the message 'body is empty'"."""
    big = b" " * (40 << 20)  # past the cap as surely as 400 MB, at a tenth of the test's time
    server.answer = lambda req: Reply(200, big, {"x-typesafe-request-id": "req-7"})
    ran = run_cli(
        "eval", str(qfile), "--state-text", "x", "--base-url", server.base_url, "--retries", "0"
    )
    assert ran.code == 3
    line = error_line(ran.stderr)
    assert "larger than" in line and "empty" not in line


# --- credentials in the base URL and api_key_env ---------------------------------------------


def test_credentials_in_the_base_url_are_redacted_in_every_message(
    server: HostileServer, qfile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 9: "A credential in --base-url (https://user:pass@host/...) is redacted in every
    message"."""
    server.answer = lambda req: Reply(
        500,
        f'{{"detail": "down for {req.headers.get("Authorization")}"}}'.encode(),
        {"x-typesafe-request-id": "r"},
    )
    monkeypatch.delenv("TYPESAFE_API_KEY")
    url = server.base_url.replace("http://", "http://alice:pa55w0rd-s3cret@")
    ran = run_cli("eval", str(qfile), "--state-text", "x", "--base-url", url, "--retries", "0")
    assert ran.code == 3
    line = error_line(ran.stderr)
    assert "pa55w0rd" not in line and "alice" not in line and "YWxpY2" not in line
    assert "«redacted»@127.0.0.1" in line
    assert server.seen[0].headers["Authorization"].startswith("Basic ")


def test_the_library_refuses_an_api_key_env_that_is_not_a_variable_name() -> None:
    """Issue 9: "The library refuses api_key_env values that are not environment variable names
    ... so a key passed there by mistake never reaches a message or repr"."""
    with pytest.raises(ConfigError) as e:
        create_classifier(api_key_env=KEY)
    assert_clean(f"{e.value} {e.value!r}", "ConfigError")
    assert "api_key_env" in str(e.value)
    with pytest.raises(ConfigError):
        create_classifier(style="llm", llm_model="m", llm_api_key_env="sk-live abc")


def test_a_header_value_that_is_not_ascii_is_a_config_error_that_does_not_show_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEAM_TOKEN", "sécret-value-1")

    async def go() -> None:
        async with create_classifier(
            base_url="http://x.invalid/v1",
            headers={"X-Team": "${TEAM_TOKEN}"},
            transport=httpx.MockTransport(lambda r: httpx.Response(200)),
        ) as judge:
            await judge.evaluate("s", {"q": {"type": "noul", "instructions": "i"}})

    with pytest.raises(ConfigError) as e:
        asyncio.run(go())
    assert "X-Team" in str(e.value) and "sécret" not in str(e.value)


def test_gzip_is_still_decoded_when_small() -> None:
    """The cap does not break honest compression."""
    body = json.dumps(
        {"model": "m", "answers": {"q": {"type": "noul", "noul": 0.5}}, "usage": {}}
    ).encode()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200, content=gzip.compress(body), headers={"Content-Encoding": "gzip"}
        )

    async def go() -> float:
        async with create_classifier(
            base_url="http://x.invalid/v1", transport=httpx.MockTransport(handler)
        ) as judge:
            d = await judge.evaluate("s", {"q": {"type": "noul", "instructions": "i"}})
            return d.noul("q").noul

    assert asyncio.run(go()) == 0.5


@pytest.mark.parametrize("url", ["ftp://alice:pa55w0rd@host/v1", "alice:pa55w0rd@host/v1"])
def test_credentials_in_a_refused_base_url_are_not_echoed(url: str) -> None:
    """A base URL refused for its scheme is named without the credentials it carries."""
    with pytest.raises(ConfigError) as e:
        create_classifier(base_url=url)
    assert "pa55w0rd" not in str(e.value) and "alice" not in str(e.value)
    assert "«redacted»@host/v1" in str(e.value)


# --- a key written into the base URL (issue 17 item 1) ---------------------------------------

URL_KEY = "sk-url-9f8e7d6c5b4a3210"
#: The key as a user may write it percent-encoded into the URL (``sk%2D...``): both forms and
#: the decoded one are grepped for.
URL_KEY_ENCODED = URL_KEY.replace("-", "%2D")

URL_FORMS = [
    pytest.param(lambda base: base.replace("http://", f"http://user:{URL_KEY}@"), id="userinfo"),
    pytest.param(
        lambda base: base.replace("http://", f"http://user:{URL_KEY_ENCODED}@"),
        id="userinfo-percent-encoded",
    ),
    pytest.param(lambda base: f"{base}?key={URL_KEY}", id="query-string"),
    pytest.param(lambda base: f"{base}?key={URL_KEY_ENCODED}", id="query-percent-encoded"),
]


def assert_no_url_key(text: str | bytes, where: str) -> None:
    for form in (URL_KEY, URL_KEY_ENCODED, "user:" + URL_KEY):
        assert_clean(text, where, form)


def _echo_credentials(req: Request) -> Reply:
    """A 200 whose answer carries what the request was authenticated with, decoded."""
    import base64

    auth = req.headers.get("Authorization", "")
    said = base64.b64decode(auth[6:]).decode() if auth.startswith("Basic ") else auth
    body = valid_answer(req.json)
    body["model"] = said or "none"
    levels = req.json["questions"]["s"]["criteria"]
    body["answers"]["s"]["legend"] = {str(i): level for i, level in enumerate(levels)}
    return Reply(200, json.dumps(body).encode(), {"x-typesafe-request-id": "r-1"})


@pytest.mark.parametrize("form", URL_FORMS)
def test_a_key_in_the_base_url_lands_in_no_recording_cache_output_or_message(
    server: HostileServer,
    qfile: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    form: Callable[[str], str],
) -> None:
    """Issue 17 item 1: "`eval --record` with `--base-url http://user:KEY@...` writes
    `"endpoint": "http://user:KEY@127.0.0.1:P/v1/systemone"` into every recording ... Redact
    credentials in every endpoint that is stored, printed or logged" (percent-encoded and in
    a query string too)."""
    monkeypatch.delenv("TYPESAFE_API_KEY")
    server.answer = _echo_credentials
    url = form(server.base_url)
    rec_eval, rec_batch, cache_dir = tmp_path / "rec1", tmp_path / "rec2", tmp_path / "cache"
    base = ["--base-url", url, "--retries", "0"]
    ran = run_cli("eval", str(qfile), "--state-text", "x", "--record", str(rec_eval), *base)
    assert "Traceback" not in ran.stderr
    assert_no_url_key(ran.stdout, "eval stdout")
    assert_no_url_key(ran.stderr, "eval stderr")
    states = tmp_path / "s.jsonl"
    states.write_text('"one"\n"two"\n')
    out = tmp_path / "out.jsonl"
    ran = run_cli(
        "batch", str(qfile), str(states), "-o", str(out), "--record", str(rec_batch),
        "--cache", "--cache-dir", str(cache_dir), *base,
    )  # fmt: skip
    assert "Traceback" not in ran.stderr
    assert_no_url_key(ran.out + ran.stderr, "batch stdout/stderr")
    assert_no_url_key(out.read_bytes(), "batch output")
    assert_no_url_key(_cache_bytes(cache_dir), "cache")
    written = [p for d in (rec_eval, rec_batch) for p in d.rglob("*") if p.is_file()]
    for p in written:
        assert_no_url_key(p.read_bytes(), f"recording {p.name}")
    if "?" not in url:  # a query in the base URL cannot reach /systemone: nothing to record
        assert len(written) == 3, f"every live decision was recorded: {ran.stderr}"
        assert all('"endpoint": "http://«redacted»@' in p.read_text() for p in written)
        assert server.seen, "the server was asked"


@pytest.mark.parametrize("form", URL_FORMS)
def test_a_key_in_the_base_url_reaches_no_metric_event_or_error(
    server: HostileServer, monkeypatch: pytest.MonkeyPatch, form: Callable[[str], str]
) -> None:
    """Issue 17 item 1: metric events (``on_metric``) and error messages, library side."""
    monkeypatch.delenv("TYPESAFE_API_KEY")
    server.answer = lambda req: Reply(
        500, f"down for {req.headers.get('Authorization')} {URL_KEY}".encode(), {}
    )
    events: list[dict[str, object]] = []

    async def go() -> ClassifierError:
        async with create_classifier(
            base_url=form(server.base_url), retries=0, on_metric=events.append
        ) as c:
            with pytest.raises(ClassifierError) as e:
                await c.evaluate("x", {"q": {"type": "noul", "instructions": "So?"}})
            assert_no_url_key(repr(c), "repr")
            return e.value

    error = asyncio.run(go())
    assert events, "an evaluate event was emitted"
    assert_no_url_key(json.dumps(events, ensure_ascii=False), "metric events")
    assert_no_url_key(str(error) + repr(vars(error)), "error")


@pytest.mark.parametrize(
    "endpoint",
    [
        pytest.param(f"http://user:{URL_KEY}@h/v1/systemone", id="userinfo"),
        pytest.param(f"http://user:{URL_KEY_ENCODED}@h/v1/systemone", id="percent-encoded"),
        pytest.param(f"http://h/v1/systemone?key={URL_KEY}", id="query-string"),
        pytest.param(f"http://h/v1/systemone?a=1&token={URL_KEY}#{URL_KEY}", id="fragment"),
    ],
)
def test_write_recording_never_stores_a_key_in_the_endpoint(tmp_path: Path, endpoint: str) -> None:
    """The one path every recording is written by (``--record`` and ``serve --proxy --record``)."""
    from toolnexus.core.questions import normalize_questions
    from toolnexus.styles.recordings import write_recording

    path = write_recording(
        tmp_path,
        model="m",
        endpoint=endpoint,
        state="x",
        questions=normalize_questions({"q": {"type": "noul", "instructions": "So?"}}),
        response={"model": "m", "answers": {"q": {"type": "noul", "noul": 0.5}}},
    )
    assert_no_url_key(path.read_bytes(), "recording")
    assert "«redacted»" in path.read_text()
