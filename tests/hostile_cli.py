"""Small helpers shared by the round-3 hostile tests (``test_hostile_user.py``,
``test_hostile_server.py``): a one-question file, a JSONL input with ids, and ``batch`` over them
against a :class:`~hostile_server.HostileServer`."""

from __future__ import annotations

import json
from pathlib import Path

from clirun import Ran, run_cli
from hostile_server import HostileServer

Q = "questions:\n  refund:\n    type: noul\n    instructions: Refund?\n"


def write_questions(tmp_path: Path, text: str = Q) -> Path:
    path = tmp_path / "q.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def write_jsonl(tmp_path: Path, n: int) -> Path:
    """``n`` lines ``{"id": "t<i>", "text": "x"}``."""
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"id": f"t{i}", "text": "x"}) + "\n" for i in range(n)))
    return path


def run_batch(q: Path, inp: Path, server: HostileServer, *extra: str) -> Ran:
    return run_cli(
        "batch", str(q), str(inp), "--id-field", "id", "--state-field", "text",
        "--base-url", server.base_url, "--retries", "0", *extra,
    )  # fmt: skip
