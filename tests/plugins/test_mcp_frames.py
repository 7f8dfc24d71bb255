"""Issue 43 item 4: "``toolnexus mcp``: a line that is not JSON, a truncated object, a lone
surrogate or a 200-deep object gets no JSON-RPC reply at all, so the client waits forever. Answer
each with the JSON-RPC error the specification calls for (parse error, invalid request).
``additionalProperties: false`` is declared in a tool's schema but ``{"state": "x", "extra": 1}``
is accepted: validate arguments against the declared schema."

In-process over the frames: ``serve_stdio`` (the SDK's server and stdio transport, as the
command runs them) reads the lines from a list and writes its replies to a buffer; every line
it is sent is answered, and the server still answers the next message.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolnexus.cli.mcp_server import McpApp, QuestionTool, serve_stdio
from toolnexus.core.questions import normalize_questions
from toolnexus.scheduler.run import Scheduler

pytest.importorskip("mcp")

PARSE_ERROR, INVALID_REQUEST = -32700, -32600
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _line(message: Any) -> bytes:
    return json.dumps(message).encode() + b"\n"


class _Out:
    """What the server writes, as lines; ``enough`` is set once ``want`` have come."""

    def __init__(self, want: int) -> None:
        self.text = ""
        self.want = want
        self.enough = anyio.Event()

    async def write(self, text: str) -> None:
        self.text += text
        if self.text.count("\n") >= self.want:
            self.enough.set()

    async def flush(self) -> None:
        pass

    def replies(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.text.splitlines()]


def _exchange(app: McpApp, lines: list[bytes], want: int) -> list[dict[str, Any]]:
    """Send ``lines``, keep stdin open until ``want`` replies have come, then close it."""

    async def go() -> list[dict[str, Any]]:
        out = _Out(want)

        async def stdin() -> Any:
            for line in lines:
                yield line
            await out.enough.wait()

        with anyio.fail_after(30):  # a hang fails the test instead of the suite
            await serve_stdio(app, lines=stdin(), stdout=out)
        return out.replies()

    return asyncio.run(go())


def _app(tools: dict[str, QuestionTool] | None = None) -> McpApp:
    return McpApp(tools or {}, {}, Scheduler.for_run(concurrency=1))


DEEP = b'{"a":' * 200 + b"1" + b"}" * 200


@pytest.mark.parametrize(
    ("line", "code", "rid"),
    [
        pytest.param(b"not json", PARSE_ERROR, None, id="not-json"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/li', PARSE_ERROR, None,
                     id="truncated-object"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list", '
                     b'"params": {"x": "\\ud800"}}', PARSE_ERROR, 7, id="lone-surrogate"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 8, "method": "\xed\xa0\x80"}', PARSE_ERROR, None,
                     id="surrogate-bytes-not-utf8"),
        pytest.param(b"\xff\xfe{}", PARSE_ERROR, None, id="not-utf8"),
        pytest.param(DEEP, PARSE_ERROR, None, id="200-deep-object"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 9, "method": "x", "params": ' + DEEP + b"}",
                     PARSE_ERROR, None, id="200-deep-params"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": NaN}', PARSE_ERROR,
                     None, id="nan"),
        pytest.param(b"[]", INVALID_REQUEST, None, id="empty-array"),
        pytest.param(b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', INVALID_REQUEST, None,
                     id="batch"),
        pytest.param(b"42", INVALID_REQUEST, None, id="a-number"),
        pytest.param(b'"ping"', INVALID_REQUEST, None, id="a-string"),
        pytest.param(b'{"jsonrpc": "1.0", "id": 3, "method": "ping"}', INVALID_REQUEST, 3,
                     id="jsonrpc-1.0"),
        pytest.param(b'{"id": 4, "method": "ping"}', INVALID_REQUEST, 4, id="no-jsonrpc"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 5}', INVALID_REQUEST, 5, id="no-method"),
        pytest.param(b'{"jsonrpc": "2.0", "id": 6, "method": 12}', INVALID_REQUEST, 6,
                     id="method-not-text"),
        pytest.param(b'{"jsonrpc": "2.0", "id": [1], "method": "ping"}', INVALID_REQUEST, None,
                     id="id-an-array"),
        pytest.param(b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID_REQUEST, None,
                     id="id-a-boolean"),
        pytest.param(b"{}", INVALID_REQUEST, None, id="empty-object"),
    ],
)  # fmt: skip
def test_every_line_that_is_not_a_message_gets_the_error_the_spec_calls_for(
    line: bytes, code: int, rid: int | None
) -> None:
    """'Answer each with the JSON-RPC 2.0 error the specification calls for (-32700 parse
    error, -32600 invalid request; id null when unknown)' — and the server lives on."""
    replies = _exchange(_app(), [line + b"\n", _line(INITIALIZE)], want=2)
    errors = [r for r in replies if "error" in r]
    assert len(errors) == 1, replies
    assert errors[0]["jsonrpc"] == "2.0"
    assert errors[0]["id"] == rid
    assert errors[0]["error"]["code"] == code
    assert "\n" not in errors[0]["error"]["message"]
    assert any(r.get("id") == "init" and "result" in r for r in replies), replies


def test_a_blank_line_is_no_message_and_gets_nothing() -> None:
    replies = _exchange(_app(), [b"\n", b"  \r\n", _line(INITIALIZE)], want=1)
    assert [r["id"] for r in replies] == ["init"]


GATED = normalize_questions({"refund": {"type": "noul", "instructions": "Is a refund asked?"}})


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        pytest.param({"state": "x", "extra": 1}, "('extra' was unexpected)", id="extra-property"),
        pytest.param({}, "'state' is a required property", id="no-state"),
        pytest.param({"state": [1, 2]}, "must be of type string or object, not array",
                     id="state-an-array"),
    ],
)  # fmt: skip
def test_tool_arguments_are_validated_against_the_declared_schema(
    arguments: dict[str, Any], fragment: str
) -> None:
    """'additionalProperties: false is declared in a tool's schema but {"state": "x", "extra":
    1} is accepted: validate arguments against the declared schema' — a tool execution error
    (isError), as MCP reports input validation errors, before anything is sent."""
    app = _app({"refund": QuestionTool("refund", Path("refund.yaml"), None, GATED)})
    structured, text, is_error = asyncio.run(app.call("refund", arguments))
    assert is_error and structured is None
    assert text.startswith("refund: invalid arguments: arguments"), text
    assert fragment in text


def test_an_extra_argument_over_the_frames_is_an_is_error_result() -> None:
    app = _app({"refund": QuestionTool("refund", Path("refund.yaml"), None, GATED)})
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "refund", "arguments": {"state": "x", "extra": 1}},
    }
    replies = _exchange(app, [_line(INITIALIZE), _line(INITIALIZED), _line(call)], want=2)
    result = next(r for r in replies if r.get("id") == 2)["result"]
    assert result["isError"] is True
    assert "('extra' was unexpected)" in result["content"][0]["text"]
