"""``toolnexus mcp`` (issue 36 item 2), driven by the official SDK's own stdio client: the MCP
server runs as ``python -m toolnexus mcp ...`` (PYTHONPATH=src, so this worktree's code) against
``toolnexus serve --synthetic`` on 127.0.0.1 (tests/serving.py). Two stdio tests (the issue
allows three); the name collision is a plain subprocess.

The README's MCP example is checked here: its command line is the one these tests run.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from paths import REPO as ROOT
from serving import ThreadedServer
from toolnexus.serve.options import ServeOptions
from toolnexus.serve.script import ScriptedReply, ScriptedRequest

mcp = pytest.importorskip("mcp")

SECRET = "sk-mcp-test-secret-9931"
CHARGED = "Invoice INV-104 was charged twice. Please refund the duplicate."


async def _session(args: list[str], calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Run ``toolnexus mcp ARGS``, list its tools, make ``calls``; every message as JSON, and
    what the server wrote on stderr."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {"PYTHONPATH": str(ROOT / "src"), "TYPESAFE_API_KEY": SECRET}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolnexus", "mcp", *args], env=env, cwd=str(ROOT)
    )
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            results = [await session.call_tool(name, arguments) for name, arguments in calls]
        errlog.seek(0)
        stderr = errlog.read()
    return {
        "tools": {t.name: t.input_schema for t in listed.tools},
        "results": [r.model_dump(mode="json", by_alias=True) for r in results],
        "stderr": stderr,
    }


GATED = """questions:
  refund:
    type: noul
    instructions: Is a refund requested?
gates:
  refund_desk:
    rules:
      - {question: refund, at_least: 0.5, action: permit}
    default: hold
"""


def test_question_sets_are_tools_sharing_one_budget_and_no_key_in_any_message(
    tmp_path: Path,
) -> None:
    """'each question set becomes a tool ... whose result is the typed decision with flags
    and gate actions (structured content, plus text); plus tools for canonical and
    check-criteria. All calls share one scheduler, one rate limit and the spend caps given on
    the command line. The key ... never appears in a tool result or log'."""
    with ThreadedServer(ServeOptions(synthetic=True)) as server:
        (tmp_path / "refund gate.yaml").write_text(GATED, encoding="utf-8")
        args = ["--base-url", server.url + "/v1", "--rate", "6000", "--max-requests", "2"]
        args += ["questions/noul-small.yaml", str(tmp_path / "refund gate.yaml")]
        ticket = {"state": {"subject": "printer", "body": "It is on fire."}}
        seen = asyncio.run(
            _session(
                args,
                [
                    ("noul-small", {"state": CHARGED}),
                    ("refund_gate", ticket),
                    ("canonical", {"question_set": "noul-small"}),
                    ("check-criteria", {"yaml": "questions:\n  a:\n    type: noul\n"}),
                    ("noul-small", {"state": "A third request: past --max-requests 2."}),
                ],
            )
        )
        sent = len(server.seen)
    assert list(seen["tools"]) == ["noul-small", "refund_gate", "canonical", "check-criteria"]
    assert seen["tools"]["noul-small"]["properties"]["state"]["type"] == ["string", "object"]
    noul, choice, canonical, check, over = seen["results"]
    assert not noul["isError"] and noul["structuredContent"]["answers"]["refund"]["type"] == "noul"
    assert isinstance(noul["structuredContent"]["flags"], list)  # the record's flags
    assert noul["content"][0]["text"].startswith("refund: noul ")
    # The file's gates: the record's gate actions, and a line of the text.
    gate = choice["structuredContent"]["gates"]["refund_desk"]
    assert not choice["isError"] and gate["action"] in ("permit", "hold", "needs_input")
    assert f"gate refund_desk: {gate['action']}" in choice["content"][0]["text"]
    # The bytes `toolnexus canonical` prints: the model the file's requests name (its model:).
    from toolnexus.core.canonical import canonical_request
    from toolnexus.questionfile.load import load_question_set

    model, questions = load_question_set(ROOT / "questions" / "noul-small.yaml")
    assert model == "jev-latest"
    expected = canonical_request(model, questions).decode("utf-8")
    assert canonical["structuredContent"]["canonical"] == expected
    assert canonical["structuredContent"]["questions_sha256"] == (
        "8fd464df03bd59049766c44b73502dfc16bf06ca346b40473e73d72df5caf819"
    )
    assert check["structuredContent"]["findings"][0]["code"] == "TN025"
    # The cap counts every call's requests: the third call is refused and sends nothing.
    assert over["isError"] and "--max-requests" in over["content"][0]["text"]
    assert sent == 2
    assert SECRET not in json.dumps(seen)


def _refuse(request: ScriptedRequest) -> ScriptedReply:
    body = json.dumps({"detail": f"upstream broke; you sent {request.key}"}).encode()
    return ScriptedReply(503, body)


def test_a_backend_failure_is_a_tool_error_with_the_one_line_message() -> None:
    """'a backend failure is an MCP tool error carrying the one-line message' (and a server
    that echoes the key back does not get it into the message)."""
    with ThreadedServer(ServeOptions(synthetic=True, script=_refuse)) as server:
        args = ["--base-url", server.url + "/v1", "--retries", "0", "--patience", "1"]
        args.append("questions/noul-small.yaml")
        seen = asyncio.run(_session(args, [("noul-small", {"state": CHARGED})]))
    (result,) = seen["results"]
    assert result["isError"] and result.get("structuredContent") is None
    (content,) = result["content"]
    assert "\n" not in content["text"] and "503" in content["text"]
    assert SECRET not in json.dumps(seen)


def test_two_files_with_one_tool_name_are_refused_in_one_line(tmp_path: Path) -> None:
    """'name from the file, matching ^[a-zA-Z0-9_-]{1,64}$': a collision is refused."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "my set.yaml").write_bytes(
            (ROOT / "questions" / "noul-small.yaml").read_bytes()
        )
    done = subprocess.run(
        [sys.executable, "-m", "toolnexus", "mcp", "a/my set.yaml", "b/my set.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "toolnexus: b/my set.yaml: its tool name 'my_set' is taken by a/my set.yaml; "
        "rename one of the files\n"
    )
