"""Issue 45 item 4: "Pack-CPU tests count through a public hook or a counting
transport, not by patching private classes". ``toolnexus.core.observe`` is that hook: the
places on the packed path that the pack-CPU tests count name themselves by an event.
These tests keep the hook honest: every event a place emits is documented, and every
documented event fires (a test asserting that an event never happens would pass
vacuously on a misspelt or removed one)."""

from __future__ import annotations

import ast
import asyncio
import json
import re
from pathlib import Path
from typing import Any

import httpx

import toolnexus
from toolnexus import (
    BatchOptions,
    create_classifier,
)
from toolnexus.core import observe as probe
from toolnexus.core.decision import decode_answers
from toolnexus.core.validity import validate_answers
from toolnexus.serve import synthesize

SRC = Path(toolnexus.__file__).parent  # the whole package, wherever probe.py sits
QUESTIONS: dict[str, Any] = {
    "refund": {"type": "noul", "instructions": "Is the customer asking for money back?"},
}


def documented() -> set[str]:
    """The event names the probe's module docstring lists (``- ``name``: ...`` lines)."""
    doc = probe.__doc__ or ""
    return set(re.findall(r"``([a-z_]+\.[a-z_]+)``", doc))


def emitted() -> set[str]:
    """Every ``probe.observer("<event>", ...)`` call under src/toolnexus, read with ``ast``."""
    names: set[str] = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            f = node.func if isinstance(node, ast.Call) else None
            if (
                isinstance(f, ast.Attribute)
                and f.attr == "observer"
                and isinstance(f.value, ast.Name)
                and f.value.id == "probe"
                and isinstance(node, ast.Call)
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names.add(node.args[0].value)
    return names


def test_every_event_a_place_emits_is_documented() -> None:
    """The probe's docstring is the list of events; a place that counts is on it."""
    assert emitted() == documented()
    assert len(documented()) >= 15


def test_every_documented_event_fires() -> None:
    """A packed run of object states with a cache and a metric sink, through the public
    ``transport=`` seam (a synthetic server in this process), plus the per-state decode and
    validate, emits every event the probe documents."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=synthesize(json.loads(request.content)))

    class Memory:
        def __init__(self) -> None:
            self.kept: dict[str, str] = {}

        def get(self, key: str) -> str | None:
            return self.kept.get(key)

        def set(self, key: str, value: str) -> None:
            self.kept[key] = value

    states = [{"ticket": f"{i}: charged twice"} for i in range(8)]

    async def go() -> list[Any]:
        async with create_classifier(
            base_url="http://127.0.0.1:9",
            api_key_env="NO_SUCH",
            transport=httpx.MockTransport(answer),
            cache=Memory(),
            on_metric=lambda event: None,
        ) as c:
            options = BatchOptions(concurrency=2, pack=4)
            return await c.states(states, options=options).evaluate(**QUESTIONS)

    with probe.counting() as seen:
        got = asyncio.run(go())
        qs = create_classifier(api_key_env="NO_SUCH").prepare(QUESTIONS)
        answers = decode_answers({"refund": {"type": "noul", "noul": 0.5}})
        assert validate_answers(qs, answers) is None
    assert [r.decision.packed for r in got] == [4] * 8
    assert documented() <= {event for event, _ in seen}


def test_observing_restores_the_previous_observer() -> None:
    """Nested observers: the inner one sees its block's events, the outer one is back after."""
    outer: list[str] = []
    with probe.observing(lambda event, value: outer.append(event)):
        with probe.counting() as inner:
            decode_answers({"q": {"type": "noul", "noul": 0.5}})
        assert probe.observer is not None
        decode_answers({"q": {"type": "noul", "noul": 0.5}})
    assert probe.observer is None
    assert [e for e, _ in inner] == ["decode.dispatch"] and outer == ["decode.dispatch"]
