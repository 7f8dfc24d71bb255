"""Issue 30 item 3: "The scheduler reaches the transport explicitly (a wrapper or an argument),
not through a context variable."

A batch hands its scheduler down as an argument: ``evaluate_group`` -> the pipeline (or a
pack) -> the style's ``decide`` -> ``SystemOneTransport.exchange(..., scheduler=)``. A request
is admitted by the scheduler it is handed, and by nothing when it is handed none, whatever
context the caller's task runs in.
"""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

import toolnexus.scheduler as scheduler_package
from toolnexus import create_classifier
from toolnexus.config import BatchOptions
from toolnexus.core.answers import ClassifierUsage
from toolnexus.scheduler import Outcome, Scheduler, Ticket

SRC = Path(scheduler_package.__file__).parent.parent
QUESTIONS = {"q": {"type": "noul", "instructions": "Is it so?"}}


class Counting:
    """An admission member that counts what it admits and releases."""

    def __init__(self) -> None:
        self.acquired: list[int] = []
        self.released: list[str] = []

    async def acquire(self, ticket: Ticket) -> None:
        self.acquired.append(ticket.id)

    async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None:
        self.released.append(outcome.kind.value)


def _answer(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    states = body["state"]["states"] if isinstance(body["state"], dict) else [body["state"]]
    answers = {k: {"type": "noul", "noul": 0.9} for k in body["questions"]}
    usage = {"input_tokens": len(states), "output_tokens": 1}
    return httpx.Response(200, json={"model": "m", "answers": answers, "usage": usage})


def _scheduler(member: Counting) -> Scheduler:
    return Scheduler.for_run(concurrency=4, extra=[member])


def test_no_module_on_the_way_to_the_wire_reads_the_scheduler_from_a_context_variable() -> None:
    """Item 3: no ``scheduler.current()`` / ``under()`` and no ContextVar in the scheduler, the
    transport's retry loop, the styles, the batch loops or the packer."""
    assert not hasattr(scheduler_package, "current")
    assert not hasattr(scheduler_package, "under")
    paths = [*(SRC / "scheduler").glob("*.py"), SRC / "transport" / "retry.py"]
    paths += [SRC / "transport" / "endpoint.py"]
    # batchgroups/batchstream hold the batch loops, packoutcome and systemone_reply parts of
    # the packer and the style (split out of batch, packed and systemone to keep modules short).
    names = ["batch", "batchgroups", "batchstream", "packed", "packoutcome", "pipeline"]
    names = [f"evaluate/{name}" for name in names]
    names += ["styles/delegate", "styles/systemone", "styles/systemone_reply"]
    paths += [SRC / f"{name}.py" for name in names]
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert "ContextVar" not in names and "current" not in names, path


@pytest.mark.parametrize(
    "pack",
    [pytest.param(1, id="one-state-per-request"), pytest.param(2, id="packed")],
)
def test_a_batch_admits_each_request_through_the_scheduler_it_hands_down(pack: int) -> None:
    """Item 3: every request of a batch, packed or not, is admitted by the run's scheduler (an
    ``admission`` member sees each one), handed down as an argument."""
    member = Counting()

    async def go() -> list[Any]:
        async with create_classifier(transport=httpx.MockTransport(_answer)) as c:
            options = BatchOptions(concurrency=2, pack=pack, admission=(member,))
            return await c.evaluate_batch(["a", "b", "c", "d"], QUESTIONS, options=options)

    assert len(asyncio.run(go())) == 4
    assert len(member.acquired) == 4 // pack
    assert member.released == ["success"] * (4 // pack)


def test_a_request_is_admitted_by_the_scheduler_it_is_handed_and_by_none_without() -> None:
    """Item 3: the pipeline hands ``scheduler`` to the transport; without one (a single
    ``evaluate``) nothing admits the request, even from a task of a running batch."""
    handed, other = Counting(), Counting()

    async def go() -> None:
        async with create_classifier(transport=httpx.MockTransport(_answer)) as c:
            qs = c.prepare(QUESTIONS)
            await c.pipeline.evaluate_prepared("a", qs, scheduler=_scheduler(handed))
            await c.evaluate("b", QUESTIONS)
            # Another scheduler alive at the same time admits only what it is handed.
            await asyncio.gather(
                c.pipeline.evaluate_prepared("c", qs, scheduler=_scheduler(other)),
                c.evaluate("d", QUESTIONS),
            )

    asyncio.run(go())
    assert (len(handed.acquired), len(other.acquired)) == (1, 1)
