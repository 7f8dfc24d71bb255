"""Issue 30 item 2: "A decision is validated once on every path."

The style validates a live answer to decide whether to cache it (``systemone.py``); the record
used to validate it again. The verdict now travels with the decision (``Checked``, from
``RequestPipeline.evaluate_checked`` to ``records.decision.record(validated=...)``). These tests
count ``validate_decision`` calls wherever the library makes them.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from toolnexus import NoulQuestion, create_classifier
from toolnexus.cache import memory_cache
from toolnexus.core.validation import Checked
from toolnexus.records.decision import record

QS = {"holds": NoulQuestion("Does it hold?")}
#: The modules that call validate_decision on a decision's way to its record.
CALLERS = (
    "toolnexus.styles.systemone",
    "toolnexus.evaluate.pipeline",
    "toolnexus.records.decision",
)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every validate_decision call, by the module that made it."""
    import importlib

    from toolnexus.core.validation import validate_decision

    seen: list[str] = []
    for name in CALLERS:
        module = importlib.import_module(name)

        def counted(*args: Any, _name: str = name, **kwargs: Any) -> Any:
            seen.append(_name)
            return validate_decision(*args, **kwargs)

        monkeypatch.setattr(module, "validate_decision", counted)
    return seen


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TYPESAFE_API_KEY", "sk-test-secret-value")


def _answer(p: float) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        body = {"model": "jev-1", "answers": {"holds": {"type": "noul", "noul": p}}}
        return httpx.Response(200, json=body, headers={"x-request-id": "r-1"})

    return handler


def _decide_and_record(p: float, times: int) -> list[Any]:
    """``eval``'s path: evaluate (with the verdict) and build the record, ``times`` times on
    one cache."""
    out = []

    async def run() -> None:
        async with create_classifier(
            base_url="http://127.0.0.1:9/v1",
            transport=httpx.MockTransport(_answer(p)),
            cache=memory_cache(),
        ) as judge:
            qs = judge.prepare(QS)
            for _ in range(times):
                made = await judge.pipeline.evaluate_checked("a state", qs)
                decision = made.decision if isinstance(made, Checked) else made
                validated = made if isinstance(made, Checked) else False
                out.append(record("s", None, decision, qs, validated=validated))

    asyncio.run(run())
    return out


@pytest.mark.parametrize(
    ("p", "invalid"),
    [
        pytest.param(0.9, None, id="valid"),
        pytest.param(1.5, "holds", id="invalid-never-cached"),
    ],
)
def test_a_cold_cache_validates_a_live_answer_once(
    calls: list[str], p: float, invalid: str | None
) -> None:
    """The style's verdict (it validated to decide caching) is the record's: one call."""
    (rec,) = _decide_and_record(p, 1)
    assert calls == ["toolnexus.styles.systemone"]
    assert (rec.invalid is not None) == (invalid is not None)
    assert ("invalid" in rec.flags) == (invalid is not None)


def test_a_cache_hit_is_validated_once_by_its_record(calls: list[str]) -> None:
    """A cached decision (valid when stored) comes back unchecked: the record validates it,
    once; the live answer before it was validated once by the style."""
    cold, warm = _decide_and_record(0.9, 2)
    assert not cold.cached and warm.cached
    assert calls == ["toolnexus.styles.systemone", "toolnexus.records.decision"]


def test_the_batch_path_validates_each_decision_once(calls: list[str]) -> None:
    """``batch``: the stream validates fail-closed (here through the cache's verdict), the
    record takes ``validated=True``: one call per state, cold or warm."""
    from toolnexus.run.stream import result_record

    async def run() -> list[Any]:
        async with create_classifier(
            base_url="http://127.0.0.1:9/v1",
            transport=httpx.MockTransport(_answer(0.9)),
            cache=memory_cache(),
        ) as judge:
            states = [(i, "same state") for i in range(2)]
            results = [r async for r in judge.evaluate_stream(states, QS, concurrency=1)]
            return [result_record(i, r, judge.prepare(QS), "sha") for i, r in results]

    records = asyncio.run(run())
    assert [json.loads(json.dumps(r.to_object()))["cached"] for r in records] == [False, True]
    assert calls == ["toolnexus.styles.systemone", "toolnexus.evaluate.pipeline"]
