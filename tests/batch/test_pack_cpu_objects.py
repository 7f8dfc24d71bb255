"""Issue 32, "Client CPU" (``bench/pack_cpu.py``: client CPU per state at pack 32, at most 1.0x
jev-ultralightspeed's): the third pass of cuts on a packed run's per-state work, each pinned by
a count (calls made, objects built), never by a time. Each test fails on the code before its
cut; the results they check are the same as before it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from toolnexus import (
    BatchOptions,
    batchgroups,
    create_classifier,
)

QUESTIONS: dict[str, Any] = {
    "refund": {"type": "noul", "instructions": "Is the customer asking for money back?"},
    "angry": {"type": "noul", "instructions": "Is the customer angry?"},
}
STATES = [f"ticket {i}: charged twice" for i in range(40)]


def serve_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request answered by ``serve``'s synthetic model, in this process (no socket)."""
    from toolnexus.serve import synthesize
    from toolnexus.transport import aiohttp_adapter

    async def send(self: Any, url: str, headers: Any, body: bytes, timeout: float) -> Any:
        reply = json.dumps(synthesize(json.loads(body))).encode()
        return 200, {"content-type": "application/json"}, reply

    monkeypatch.setattr(aiohttp_adapter.AiohttpAdapter, "send", send)


def run(how: str, states: list[Any], pack: int = 20) -> list[Any]:
    async def go() -> list[Any]:
        async with create_classifier(base_url="http://127.0.0.1:9", api_key_env="NO_SUCH") as c:
            options = BatchOptions(concurrency=2, pack=pack)
            if how == "evaluate_batch":
                return await c.evaluate_batch(states, QUESTIONS, options=options)
            return await c.states(states, options=options).evaluate(**QUESTIONS)

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("how", "built"),
    [
        pytest.param("evaluate_batch", 0, id="evaluate-batch-keeps-bare-decisions"),
        pytest.param("states", 40, id="states-still-returns-state-results"),
    ],
)
def test_evaluate_batch_keeps_no_state_result_per_state(
    how: str, built: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 004 ``evaluate-batch`` returns the decisions: a packed run no longer wraps each one
    in a ``StateResult`` (one more object per state for the collector to walk until the run
    ends) only to unwrap it; ``states(...)``, whose results ARE StateResults, still builds one
    each."""
    serve_in_process(monkeypatch)
    made: list[Any] = []
    real = batchgroups.StateResult

    def counting(*args: Any, **kwargs: Any) -> Any:
        made.append(args or kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(batchgroups, "StateResult", counting)
    got = run(how, STATES)
    assert len(got) == 40 and len(made) == built
    decisions = got if how == "evaluate_batch" else [r.decision for r in got]
    assert [d.packed for d in decisions] == [20] * 40
    assert [d.position for d in decisions] == list(range(20)) * 2
