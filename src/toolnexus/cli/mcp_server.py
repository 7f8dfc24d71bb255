"""``toolnexus mcp QUESTIONS...``: the question sets as MCP tools over stdio, on the official
``mcp`` SDK (the ``mcp`` extra, major version 2; issue 36 item 2).

Each question file is one tool, named from its file stem (``[a-zA-Z0-9_-]{1,64}``), taking
``{"state": text or object}`` and returning the decision's record (answers, flags and the
file's gate actions: what ``eval --format json`` prints) as structured content plus a line per
answer and per gate as text. Two more tools: ``canonical`` (the canonical request of a loaded
set, with both digests) and ``check-criteria`` (the findings for a question-set YAML text).

Every call shares one classifier and one scheduler: one ``--rate``, one spend budget
(``--max-cost`` / ``--max-tokens`` / ``--max-requests``, as ``batch`` counts them). The key is
read from the environment by the classifier at call time; a failure is a tool error
(``isError``) carrying the library's one-line message, which never holds a key.

Every stdin line gets a reply: one that is not a JSON-RPC 2.0 message is answered with the
specification's parse error or invalid request (:func:`frame_error`), and a call's arguments are
held to the tool's declared input schema (:func:`argument_problem`) before anything is sent.

Only this path imports ``mcp``; ``mcp_cmd`` imports this module inside the command.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from ..core import ClassifierError, one_line
from ..judge import describe_answer

if TYPE_CHECKING:
    from ..core import Policy, Question
    from ..scheduler import Scheduler
    from .backend import Backend

__all__ = ["BUILTIN_TOOLS", "McpApp", "QuestionTool", "tool_name"]

#: The tools every server has beside its question sets.
BUILTIN_TOOLS = ("canonical", "check-criteria")
_NAME = re.compile(r"[^a-zA-Z0-9_-]")

STATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "state": {
            "type": ["string", "object"],
            "description": "The state to judge: text, or a JSON object.",
        }
    },
    "required": ["state"],
    "additionalProperties": False,
}


def tool_name(path: Path) -> str:
    """The tool name of a question file: its stem, every other character as ``_``, at most 64
    characters (MCP's ``^[a-zA-Z0-9_-]{1,64}$``)."""
    return (_NAME.sub("_", path.stem) or "questions")[:64]


@dataclass(frozen=True)
class QuestionTool:
    name: str
    path: Path
    model: str | None
    questions: Mapping[str, Question]
    #: the file's ``gates:`` (named SPEC §8B policies), applied to every decision as eval does
    gates: Mapping[str, Policy] = field(default_factory=dict)


@dataclass
class McpApp:
    """The server's state: the tools, their backends, the one scheduler. Pure of ``mcp``: the
    SDK calls :meth:`call`, which returns ``(structured, text, is_error)``.

    ``backends`` maps a question file's ``model:`` to the backend its tool asks (one per model
    actually requested; usually one in all), so each file is asked as ``eval`` would ask it."""

    tools: dict[str, QuestionTool]
    backends: dict[str | None, Backend]
    scheduler: Scheduler

    async def call(self, name: str, arguments: Mapping[str, Any]) -> tuple[Any, str, bool]:
        schema = {t["name"]: t["input_schema"] for t in tool_schemas(self)}.get(name)
        problem = argument_problem(arguments, schema) if schema is not None else None
        if problem is not None:
            # Validated against the schema tools/list declares (issue 43 item 4: an
            # ``additionalProperties: false`` was declared and not held). MCP reports input
            # validation errors as a tool execution error (isError), so the model can correct
            # the call, not as a protocol error.
            return None, f"{name}: invalid arguments: {problem}", True
        try:
            if name == "canonical":
                return self._canonical(arguments)
            if name == "check-criteria":
                return self._check(arguments)
            tool = self.tools.get(name)
            if tool is None:
                return None, f"unknown tool {name!r}", True
            return await self._evaluate(tool, arguments)
        except ClassifierError as e:
            return None, one_line(e.message), True
        except Exception as e:
            from ..core import RunStopped

            if isinstance(e, RunStopped):
                return None, one_line(str(e)), True
            raise

    async def _evaluate(
        self, tool: QuestionTool, arguments: Mapping[str, Any]
    ) -> tuple[Any, str, bool]:
        from ..core import check_state
        from ..records import decision_record

        state = arguments.get("state")
        if not isinstance(state, str | dict):
            return None, "'state' must be text or a JSON object", True
        # ``Classifier.evaluate`` with the one scheduler handed down: every request of every
        # call is admitted by the same rate limit and budget, exactly where the transport sends.
        pipeline = self.backends[tool.model].classifier.pipeline
        qs = pipeline.prepare(tool.questions)
        check_state(state)
        decision = await pipeline.evaluate_prepared(state, qs, scheduler=self.scheduler)
        record = decision_record(decision, tool.questions, gates=tool.gates)
        lines = [f"{k}: {describe_answer(a)}" for k, a in decision.answers.items()]
        flags = record.get("flags") or []
        if flags:
            lines.append(f"flags: {', '.join(flags)}")
        for name, gate in (record.get("gates") or {}).items():
            lines.append(f"gate {name}: {gate['action']} ({gate['reason']})")
        return record, "\n".join(lines), False

    def _canonical(self, arguments: Mapping[str, Any]) -> tuple[Any, str, bool]:
        from ..core import DEFAULT_MODEL, canonical_request, questions_sha256, sha256_hex

        name = arguments.get("question_set")
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            return None, f"'question_set' must be one of: {', '.join(self.tools)}", True
        # The model this tool's requests name: the canonical bytes are what is sent.
        model = self.backends[tool.model].model or DEFAULT_MODEL
        body = canonical_request(model, tool.questions)
        out = {
            "canonical": body.decode("utf-8"),
            "sha256": sha256_hex(body),
            "questions_sha256": questions_sha256(tool.questions),
        }
        return out, body.decode("utf-8"), False

    def _check(self, arguments: Mapping[str, Any]) -> tuple[Any, str, bool]:
        from .lintrun import Controls, check_text, fails, shown

        text = arguments.get("yaml")
        if not isinstance(text, str):
            return None, "'yaml' must be the text of a question-set file", True
        # Issue 43 item 5: what a client sends is meant as a question file, so it is always
        # checked as one (strict): "hello" or a tagged object gets findings, never "no findings".
        controls = Controls(strict=True)
        found = [f for f in check_text(text, "<yaml>", controls) if shown(f, controls)]
        findings = [
            {
                "line": f.line,
                "col": f.col,
                "code": f.code,
                "severity": f.severity,
                "message": f.message,
            }
            for f in found
        ]
        lines = [f"{f.line}:{f.col}: {f.code} {f.message}" for f in found]
        out = {"findings": findings, "failed": any(fails(f) for f in found)}
        return out, "\n".join(lines) or "no findings", False


def argument_problem(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> str | None:
    """Why ``arguments`` do not hold to a tool's declared input ``schema`` (one line, naming
    where), or None."""
    # jsonschema comes with the mcp extra (the SDK requires it); it ships no types and its
    # stubs package is not a dependency of ours.
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
    from jsonschema.exceptions import best_match  # type: ignore[import-untyped]

    error = best_match(Draft202012Validator(schema).iter_errors(dict(arguments)))
    if error is None:
        return None
    where = "".join(f"[{p!r}]" for p in error.absolute_path)
    message = error.message
    if error.validator == "type":  # its message quotes the whole value, a state perhaps
        wanted = error.validator_value
        wanted = " or ".join(wanted) if isinstance(wanted, list) else str(wanted)
        message = f"must be of type {wanted}, not {_json_type(error.instance)}"
    text = one_line(f"arguments{where}: {message}")
    return text if len(text) <= 200 else text[:199] + "…"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def tool_schemas(app: McpApp) -> list[dict[str, Any]]:
    """``{name, description, input_schema}`` of every tool, question sets first."""
    tools = [
        {
            "name": t.name,
            "description": f"Judge a state with the question set {t.path.name} "
            f"(questions: {', '.join(t.questions)}).",
            "input_schema": STATE_SCHEMA,
        }
        for t in app.tools.values()
    ]
    tools.append(
        {
            "name": "canonical",
            "description": "The canonical request bytes of a loaded question set and its "
            "sha256 and question-set digest.",
            "input_schema": {
                "type": "object",
                "properties": {"question_set": {"type": "string", "enum": list(app.tools)}},
                "required": ["question_set"],
            },
        }
    )
    tools.append(
        {
            "name": "check-criteria",
            "description": "Lint a question-set YAML text as `toolnexus check-criteria` does.",
            "input_schema": {
                "type": "object",
                "properties": {"yaml": {"type": "string"}},
                "required": ["yaml"],
            },
        }
    )
    return tools


#: JSON-RPC 2.0's codes (https://www.jsonrpc.org/specification#error_object).
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def frame_error(line: bytes) -> dict[str, Any] | None:
    """The JSON-RPC 2.0 error object a stdio line earns, or None for a line that is a message.

    The SDK drops a line it cannot validate without a reply, so the client waits forever
    (issue 43 item 4); each is answered here as the specification says: text that is not
    UTF-8 JSON within the bounds every JSON read here has (``jsonlimits``: 64 levels deep, no
    NaN), or holds a lone surrogate, is a parse error (-32700); JSON that is not one JSON-RPC 2.0
    message is an invalid request (-32600). The ``id`` is the line's own when it can be read
    (a lone surrogate elsewhere in the line leaves it readable), else null. A blank line is no
    message and gets nothing (None, as the caller skips it)."""
    from ..core import loads

    line = line.strip()
    if not line:
        return None
    try:
        message = loads(line)
    except UnicodeDecodeError as e:
        return _error(PARSE_ERROR, f"not UTF-8 (byte {e.object[e.start]:#04x} at {e.start})")
    except RecursionError:  # a value the decoder built deeper than the encoder will go
        return _error(PARSE_ERROR, "nested too deep")
    except ValueError as e:
        return _error(PARSE_ERROR, one_line(str(e)))
    sent = message.get("id") if isinstance(message, dict) else None
    rid = sent if isinstance(sent, str) or type(sent) is int else None
    try:
        json.dumps(message, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:  # "\ud800" decodes to a lone surrogate: not Unicode text
        bad = f"U+{ord(e.object[e.start]):04X}"
        return _error(PARSE_ERROR, f"a lone surrogate {bad} is not Unicode text", rid)
    if not isinstance(message, dict):
        kind = "an array (a batch; MCP has none)" if isinstance(message, list) else "not one"
        return _error(INVALID_REQUEST, f"a message is a JSON object, this is {kind}")
    if message.get("jsonrpc") != "2.0":
        return _error(INVALID_REQUEST, '"jsonrpc" must be "2.0"', rid)
    if "id" in message and rid is None:
        return _error(INVALID_REQUEST, '"id" must be a string or an integer')
    import mcp_types as types

    try:
        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValueError as e:
        first = e.errors()[0] if hasattr(e, "errors") else {}
        where = ".".join(str(p) for p in first.get("loc", ())[1:])
        why = first.get("msg", "not a JSON-RPC 2.0 message")
        return _error(INVALID_REQUEST, f"{where}: {why}" if where else str(why), rid)
    return None


def _error(code: int, detail: str, rid: str | int | None = None) -> dict[str, Any]:
    name = "Parse error" if code == PARSE_ERROR else "Invalid Request"
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": f"{name}: {detail}"}}


class _Frames:
    """The lines of stdin as the SDK reads them, every line that is not a message answered
    (:func:`frame_error`) through the SDK's own writer, so frames never interleave."""

    def __init__(self, lines: AsyncIterator[bytes]) -> None:
        self._lines = lines
        self._replies: Any = None
        self._ready = anyio.Event()

    def answer_through(self, write: Any) -> None:
        self._replies = write
        self._ready.set()

    def __aiter__(self) -> _Frames:
        return self

    async def __anext__(self) -> str:
        from mcp.shared.message import SessionMessage
        from mcp_types import JSONRPCError

        while True:
            line = await self._lines.__anext__()
            error = frame_error(line)
            if error is not None:
                await self._ready.wait()
                await self._replies.send(SessionMessage(JSONRPCError.model_validate(error)))
            elif line.strip():
                return line.decode("utf-8")


async def _stdin_lines() -> AsyncIterator[bytes]:
    stdin = anyio.wrap_file(sys.stdin.buffer)
    while line := await stdin.readline():
        yield line


def build_server(app: McpApp) -> Any:
    """The SDK's server for ``app``: its tool list and its one call handler."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    from .. import __version__

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(**t) for t in tool_schemas(app)])

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        structured, text, is_error = await app.call(params.name, params.arguments or {})
        return types.CallToolResult(
            content=[types.TextContent(text=text)],
            structured_content=structured,
            is_error=is_error,
        )

    server: Server[Any] = Server(
        "toolnexus", version=__version__, on_list_tools=list_tools, on_call_tool=call_tool
    )
    return server


async def serve_stdio(
    app: McpApp, *, lines: AsyncIterator[bytes] | None = None, stdout: Any = None
) -> None:
    """Serve ``app`` over stdin/stdout until the client closes it (``lines`` and ``stdout``
    stand in for them in a test: the frames are then exchanged in-process)."""
    from mcp.server.stdio import stdio_server

    server = build_server(app)
    frames = _Frames(lines if lines is not None else _stdin_lines())
    async with contextlib.AsyncExitStack() as stack:
        for backend in {id(b): b for b in app.backends.values()}.values():
            await stack.enter_async_context(backend.classifier)
        read, write = await stack.enter_async_context(
            stdio_server(stdin=cast(Any, frames), stdout=stdout)
        )
        frames.answer_through(write)
        await server.run(read, write, server.create_initialization_options())
