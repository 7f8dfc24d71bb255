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

Only this path imports ``mcp``; ``mcp_cmd`` imports this module inside the command.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..assertions import describe_answer
from ..errors import ClassifierError
from ..failures import one_line

if TYPE_CHECKING:
    from ..policy import Policy
    from ..questions import Question
    from ..scheduler.run import Scheduler
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
            from ..scheduler.admission import RunStopped

            if isinstance(e, RunStopped):
                return None, one_line(str(e)), True
            raise

    async def _evaluate(
        self, tool: QuestionTool, arguments: Mapping[str, Any]
    ) -> tuple[Any, str, bool]:
        from ..records.decision import decision_record
        from ..state import check_state

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
        from ..canonical import canonical_request, questions_sha256, sha256_hex
        from ..defaults import DEFAULT_MODEL

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


async def serve_stdio(app: McpApp) -> None:
    """Serve ``app`` over stdin/stdout until the client closes it."""
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

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
    async with contextlib.AsyncExitStack() as stack:
        for backend in {id(b): b for b in app.backends.values()}.values():
            await stack.enter_async_context(backend.classifier)
        read, write = await stack.enter_async_context(stdio_server())
        await server.run(read, write, server.create_initialization_options())
