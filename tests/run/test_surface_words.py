"""Issue 43 item 7: "MCP budget errors give batch advice ('Finished records are written; ...
--resume'): an MCP client has neither. Library runs (``toolnexus.run``) say ``resume=True`` /
``overwrite=True``, not ``--resume`` / ``--overwrite``. Every message speaks the words of the
surface it comes from."

One source (``failures.option`` and ``failures.stop_advice``, parametrised by surface), checked
over every surface, then through the real paths in-process: a library run's budget stop and
refusals, and an MCP call past its cap (``httpx.MockTransport``).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, get_args

import httpx
import pytest

from toolnexus import RunError
from toolnexus.core.failures import Surface, option, stop_advice
from toolnexus.core.questions import normalize_questions

QUESTIONS = {"q": {"type": "noul", "instructions": "Is it so?"}}
SURFACES: tuple[Surface, ...] = get_args(Surface)


def _foreign(text: str, surface: Surface) -> list[str]:
    """Words of another surface in ``text``: a script has no flags, a command line no
    ``name=True``, an MCP client no output to resume, filter no ``--resume``."""
    found = []
    if surface == "library" and "--" in text:
        found.append("a --flag")
    if surface != "library" and ("=True" in text or "resume=" in text):
        found.append("a keyword argument")
    if surface in ("mcp", "filter") and ("resume" in text or "Finished records" in text):
        found.append("resume advice")
    return found


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("kind", ["budget", "storm"])
def test_the_one_source_speaks_each_surfaces_words(surface: Surface, kind: str) -> None:
    advice = stop_advice(kind, surface)  # type: ignore[arg-type]
    assert advice and "\n" not in advice
    assert _foreign(advice, surface) == [], advice


@pytest.mark.parametrize(
    ("surface", "name", "value", "spelled"),
    [
        pytest.param("batch", "resume", True, "--resume", id="batch-resume"),
        pytest.param("library", "resume", True, "resume=True", id="library-resume"),
        pytest.param("library", "overwrite", True, "overwrite=True", id="library-overwrite"),
        pytest.param("mcp", "max_requests", 5, "--max-requests 5", id="mcp-cap"),
        pytest.param("library", "max_requests", 5, "max_requests=5", id="library-cap"),
        pytest.param("filter", "max_tokens", 10, "--max-tokens 10", id="filter-cap"),
    ],
)
def test_an_option_is_spelled_as_its_surface_writes_it(
    surface: Surface, name: str, value: object, spelled: str
) -> None:
    assert option(name, surface, value) == spelled


def _handler(request: httpx.Request) -> httpx.Response:
    sent = json.loads(request.content)
    answers = {k: {"type": "noul", "noul": 0.9} for k in sent["questions"]}
    body = {"model": sent["model"], "answers": answers, "usage": {"input_tokens": 1}}
    return httpx.Response(200, content=json.dumps(body).encode())


def _config(tmp_path: Path, **fields: Any) -> Any:
    from toolnexus.run import RunConfig

    states = tmp_path / "in.jsonl"
    states.write_text("".join(f'{{"id": "s{i}", "text": "t{i}"}}\n' for i in range(3)))
    fields.setdefault("output", str(tmp_path / "out.jsonl"))
    return RunConfig(
        normalize_questions(QUESTIONS),
        (str(states),),
        id_field="id",
        state_fields=("text",),
        classifier={"base_url": "http://x.invalid/v1", "transport": httpx.MockTransport(_handler)},
        **fields,
    )


def test_a_library_runs_budget_stop_says_resume_true(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'Library runs (toolnexus.run) say resume=True ... not --resume'."""
    from toolnexus.run import run_batch

    monkeypatch.setenv("TYPESAFE_API_KEY", "k-test")
    summary = run_batch(_config(tmp_path, max_requests=1, concurrency=1))
    assert summary.stopped is not None
    assert "max_requests=1" in summary.stopped and "resume=True" in summary.stopped
    assert _foreign(summary.stopped, "library") == [], summary.stopped


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        pytest.param({}, ["resume=True", "overwrite=True"], id="output-holds-records"),
        pytest.param({"overwrite": True, "resume": True}, ["overwrite=True", "resume=True"],
                     id="overwrite-and-resume"),
        pytest.param({"retry_errors": True, "output": None}, ["retry_errors=True", "output="],
                     id="retry-errors-without-output"),
    ],
)  # fmt: skip
def test_a_library_runs_refusals_say_keyword_arguments(
    tmp_path: Path, fields: dict[str, Any], words: list[str]
) -> None:
    """'... overwrite=True, not --resume / --overwrite'."""
    from toolnexus.run import run_batch

    (tmp_path / "out.jsonl").write_text(
        '{"id": "s0", "answers": {}, "error": null}\n', encoding="utf-8"
    )
    with pytest.raises(RunError) as refused:
        run_batch(_config(tmp_path, **fields))
    message = str(refused.value)
    assert all(w in message for w in words), message
    assert _foreign(message, "library") == [], message


def test_a_batch_refusal_keeps_its_flags(tmp_path: Path) -> None:
    """The command line's words are unchanged: ``batch`` builds its run with surface batch."""
    import dataclasses

    from toolnexus.run import run_batch

    (tmp_path / "out.jsonl").write_text('{"id": "s0"}\n', encoding="utf-8")
    cfg = dataclasses.replace(_config(tmp_path), surface="batch")
    with pytest.raises(RunError, match="add --resume to continue it, or --overwrite"):
        run_batch(cfg)


def test_an_mcp_call_past_its_cap_gives_no_batch_advice(monkeypatch: pytest.MonkeyPatch) -> None:
    """'MCP budget errors give batch advice ("Finished records are written; ... --resume"): an
    MCP client has neither.'"""
    from toolnexus import create_classifier
    from toolnexus.cli.mcp_server import McpApp, QuestionTool
    from toolnexus.scheduler.budget import Budget, Caps
    from toolnexus.scheduler.run import Scheduler

    monkeypatch.setenv("TYPESAFE_API_KEY", "k-test")

    async def go() -> list[tuple[Any, str, bool]]:
        judge = create_classifier(
            base_url="http://x.invalid/v1", transport=httpx.MockTransport(_handler)
        )
        async with judge:
            budget = Budget(Caps(max_requests=1), surface="mcp")
            scheduler = Scheduler.for_run(concurrency=1, extra=[budget], surface="mcp")
            backend: Any = SimpleNamespace(classifier=judge, model=None)
            tool = QuestionTool("t", Path("t.yaml"), None, normalize_questions(QUESTIONS))
            app = McpApp({"t": tool}, {None: backend}, scheduler)
            return [await app.call("t", {"state": f"s{i}"}) for i in range(2)]

    first, second = asyncio.run(go())
    assert first[2] is False
    _, text, is_error = second
    assert is_error and "--max-requests 1" in text and "restart toolnexus mcp" in text, text
    assert _foreign(text, "mcp") == [], text


def test_a_library_run_refused_by_its_cap_names_the_keyword(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cap that admits not one request, refused before the first: ``max_requests=0`` and the
    library's dry run, not ``--max-requests 0`` and ``--dry-run``."""
    from toolnexus.run import run_batch

    monkeypatch.setenv("TYPESAFE_API_KEY", "k-test")
    with pytest.raises(RunError) as refused:
        run_batch(_config(tmp_path, max_requests=0))
    message = str(refused.value)
    assert "max_requests=0" in message and "toolnexus.run.estimate" in message, message
    assert _foreign(message, "library") == [], message
