"""``toolnexus mcp QUESTIONS...``: serve the question sets as MCP tools over stdio (issue 36
item 2). The server itself is ``mcp_server``; this is its flags.

``--rate``, ``--concurrency``, ``--patience``, ``--max-cost``, ``--max-tokens``,
``--max-requests`` and ``--price`` mean what they mean to ``batch``: they are batch's own
declarations (``batch_options.flags_like``, only their help says "over the session"), they
become the run library's ``RunConfig`` fields of the same names, checked by its code
(``run.config.caps_from``, ``backend.price_of``), and the session's scheduler and budget are
built from that value. Not shared: batch's refusal of a cap before the first request (that needs
the whole input, which an agent's session does not have) and ``--pack`` (one call is one state).
The backend options are eval's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from .batch_options import flags_like
from .errors import CliError
from .options import BackendSettings, backend_options, options_from

MISSING_EXTRA = "toolnexus mcp needs the MCP SDK: pip install 'toolnexus-classifier[mcp]'"


#: A tool call's patience: an agent waits on it, so a failing backend is reported within
#: seconds, not after batch's minute (issue 32's patience, issue 36's "one-line message").
MCP_PATIENCE = 10.0


#: The flags ``mcp`` shares with ``batch``: batch's declarations (``BatchFlags``), the help
#: said for a session of tool calls.
McpFlags = flags_like(
    "McpFlags",
    {
        "concurrency": "Requests in flight at most, over all calls.",
        "rate": "At most R requests per minute over all calls.",
        "max_cost": "Refuse calls once the spend would pass USD, over the session (needs --price).",
        "max_tokens": None,
        "max_requests": None,
        "patience": "Seconds a call rides out a storm of 429/503/529 without one success before "
        "it fails (shorter than batch's 60: an agent is waiting on the call).",
        "price": None,
    },
    {"patience": MCP_PATIENCE},
)


@backend_options
@options_from(McpFlags, "mcp_values")
def mcp_command(
    questions: Annotated[
        list[Path],
        typer.Argument(
            help="Question-set YAML files: each becomes a tool named by its file stem.",
            metavar="QUESTIONS...",
            show_default=False,
        ),
    ],
    *,
    mcp_values: Mapping[str, Any],
    backend_values: Mapping[str, Any],
) -> None:
    """Serve the QUESTIONS files as MCP tools over stdio (plus canonical and check-criteria).

    The key is read from the environment at each call and never appears in a tool result.
    """
    import asyncio

    from ..questionfile import load_question_file
    from ..run import RunConfig, caps_from, output_per_request, require_price, unestimated_budget
    from ..scheduler import Scheduler
    from .backend import Backend, build_backend, model_for, price_of
    from .mcp_server import BUILTIN_TOOLS, McpApp, QuestionTool, serve_stdio, tool_name

    tools: dict[str, QuestionTool] = {}
    for path in questions:
        name = tool_name(path)
        if name in tools or name in BUILTIN_TOOLS:
            other = tools[name].path if name in tools else "a built-in tool"
            raise CliError(
                f"{path}: its tool name {name!r} is taken by {other}; rename one of the files"
            )
        (file_model, qs), gates = load_question_file(path)
        tools[name] = QuestionTool(name, path, file_model, qs, gates)
    # the values class the flag table came from, filled (issue 45 item 2)
    flags: Any = McpFlags(**mcp_values)
    # The run's own checker of the caps (one wording for batch, filter and mcp).
    caps = caps_from(flags.max_cost, flags.max_tokens, flags.max_requests)
    if flags.concurrency < 1:
        raise CliError(f"--concurrency must be 1 or more, got {flags.concurrency}")
    settings = BackendSettings(**backend_values)
    if settings.record is not None:
        raise CliError("--record is not offered by toolnexus mcp")
    try:
        import mcp  # noqa: F401  # the extra, checked before anything is served
    except ImportError:
        raise CliError(MISSING_EXTRA) from None
    # One backend per model the files request (flag > env > file > default, as eval), shared
    # by every file that resolves to it.
    by_model: dict[str | None, Backend] = {}
    backends: dict[str | None, Backend] = {}
    for file_model in dict.fromkeys(t.model for t in tools.values()):
        resolved = model_for(settings, file_model)
        if resolved not in by_model:
            by_model[resolved] = build_backend(settings, file_model=file_model)
        backends[file_model] = by_model[resolved]
    # The session's settings as the run library's value: the same fields batch's flags set.
    run = RunConfig(
        questions={},
        inputs=(),
        concurrency=flags.concurrency,
        rate=flags.rate,
        patience=flags.patience,
        max_cost=caps.max_cost,
        max_tokens=caps.max_tokens,
        max_requests=caps.max_requests,
        price=price_of(flags.price),
        surface="mcp",
    )
    # The run's one check, in mcp's words (issue 42 item 7).
    require_price(run.caps, run.price, "mcp")
    # Output tokens per request: the largest set's estimate (a cap is never passed by a call
    # the budget under-reserved).
    largest = max((t.questions for t in tools.values()), key=output_per_request)
    budget = unestimated_budget(run.caps, run.price, largest, run.surface)
    scheduler = Scheduler.for_run(
        concurrency=run.concurrency,
        rate_per_minute=run.rate,
        extra=[budget] if run.caps.any else [],
        patience=run.patience,
        surface=run.surface,
    )
    asyncio.run(serve_stdio(McpApp(tools, backends, scheduler)))
