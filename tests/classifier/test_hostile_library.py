"""Hostile arguments to the library (issue 9, "The library refuses bad arguments with
ClassifierErrors"): every case the issue lists raised a plain TypeError, AttributeError,
RecursionError or OverflowError, or was silently accepted; each is now a ClassifierError at the
call (or at construction), and a raising ``on_metric`` sink changes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from toolnexus import (
    ClassifierError,
    Decision,
    NoulQuestion,
    RawQuestion,
    ScoreQuestion,
    SqliteCache,
    create_classifier,
    threshold_band,
    validate_decision,
)

Q = {"q": NoulQuestion("Is it so?")}
BODY = '{"model": "m", "answers": {"q": {"type": "noul", "noul": 0.5}}}'


def _static() -> Any:
    return create_classifier(style="static", decisions=[])


def _deep(levels: int = 100_000) -> list[Any]:
    state: list[Any] = []
    for _ in range(levels):
        state = [state]
    return state


def _run(fn: Callable[[], Any]) -> Any:
    result = fn()
    if asyncio.iscoroutine(result):
        return asyncio.run(result)
    return result


CASES = [
    pytest.param(lambda: create_classifier(style="static", decisions=5), id="decisions=5"),
    pytest.param(lambda: create_classifier(supports=5), id="supports=5"),
    pytest.param(lambda: create_classifier(timeout=float("inf")), id="timeout-inf"),
    pytest.param(lambda: create_classifier(timeout=float("nan")), id="timeout-nan"),
    pytest.param(lambda: create_classifier(retry_base_ms="x"), id="retry_base_ms-x"),
    pytest.param(lambda: create_classifier(api_key_env="sk-live abc"), id="api_key_env-value"),
    pytest.param(lambda: create_classifier(base_url="http://[::1/v1"), id="malformed-base-url"),
    pytest.param(lambda: create_classifier(headers=["x"]), id="headers-list"),
    pytest.param(lambda: _static().evaluate("s", None), id="evaluate-questions-None"),
    pytest.param(lambda: _static().evaluate("s", [NoulQuestion("x")]), id="evaluate-list"),
    pytest.param(
        lambda: _static().evaluate("s", {"q": {"type": "choise", "instructions": "x"}}),
        id="typo-type-as-raw",
    ),
    pytest.param(lambda: Decision.from_json(None), id="from_json-None"),  # type: ignore[arg-type]
    pytest.param(lambda: Decision.from_json("[" * 100_000 + "]" * 100_000), id="from_json-deep"),
    pytest.param(lambda: Decision.from_json('{"n": ' + "9" * 5000 + "}"), id="from_json-huge"),
    pytest.param(lambda: validate_decision(Q, None), id="validate-None"),  # type: ignore[arg-type]
    pytest.param(
        lambda: threshold_band(Decision.from_json(BODY).noul("q"), {"yes": "x"}),
        id="threshold-not-a-number",
    ),
    pytest.param(
        lambda: threshold_band(Decision.from_json(BODY).noul("q"), 5),  # type: ignore[arg-type]
        id="thresholds-not-a-mapping",
    ),
    pytest.param(
        lambda: threshold_band(Decision.from_json(BODY).noul("q"), {"yes": 2.0}),
        id="threshold-outside-0-1",
    ),
    pytest.param(lambda: SqliteCache(None), id="SqliteCache-None"),  # type: ignore[arg-type]
    pytest.param(lambda: _static().evaluate_batch(None, Q), id="evaluate_batch-None"),
    pytest.param(lambda: _static().states(None), id="states-None"),
    pytest.param(lambda: NoulQuestion(None), id="NoulQuestion-None"),
    pytest.param(lambda: ScoreQuestion("x", "abc"), id="ScoreQuestion-string-criteria"),
    pytest.param(
        lambda: _static().evaluate_stream([], Q, concurrency=99999999999), id="concurrency-huge"
    ),
    pytest.param(
        lambda: create_classifier(base_url="http://127.0.0.1:9/v1").evaluate(_deep(), Q),
        id="deeply-nested-python-state",
    ),
]


@pytest.mark.parametrize("call", CASES)
def test_a_bad_argument_is_a_classifier_error(call: Callable[[], Any]) -> None:
    """Issue 9: "Today these raise plain TypeError/AttributeError/RecursionError/OverflowError
    ... Silently accepted today and to be refused at construction"."""
    with pytest.raises(ClassifierError):
        result = _run(call)
        if hasattr(result, "__aiter__"):

            async def drain() -> None:
                async for _ in result:
                    pass

            asyncio.run(drain())


def test_a_raw_question_is_still_built_explicitly() -> None:
    """The refusal of {"type": "choise"} does not take raw questions away: RawQuestion, or a
    mapping that says raw: True, still goes through."""
    seen: list[Any] = []

    def evaluate(state: Any, questions: Any) -> dict[str, Any]:
        seen.append(questions)
        return {"model": "m", "answers": {k: {"type": "box"} for k in questions}}

    async def go() -> None:
        judge = create_classifier(style="custom", evaluate=evaluate)
        await judge.evaluate("s", {"a": RawQuestion("box", "where?")})
        await judge.evaluate("s", {"b": {"type": "box", "instructions": "where?", "raw": True}})

    asyncio.run(go())
    assert [list(q) for q in seen] == [["a"], ["b"]]


def test_an_api_key_env_value_never_reaches_a_message_or_repr() -> None:
    key = "sk-live-0123456789abcdef"
    with pytest.raises(ClassifierError) as e:
        create_classifier(api_key_env=key)
    assert key not in str(e.value) and key not in repr(e.value)


def test_an_on_metric_sink_that_raises_does_not_change_the_outcome() -> None:
    """Issue 9: "An on_metric sink that raises must not change the outcome of an evaluate"."""

    def evaluate(state: Any, questions: Any) -> dict[str, Any]:
        return {"model": "m", "answers": {"q": {"type": "noul", "noul": 0.7}}}

    calls: list[str] = []

    def sink(event: Any) -> None:
        calls.append(event.get("event", "?") if isinstance(event, dict) else "?")
        raise RuntimeError("metrics backend down")

    degenerate = {"d": {"type": "choice", "instructions": "?", "criteria": {"a": "", "b": ""}}}

    async def go(on_metric: Any) -> Any:
        judge = create_classifier(style="custom", evaluate=evaluate, on_metric=on_metric)
        d = await judge.evaluate("s", Q)
        results = await judge.states(["s", "t"]).evaluate(**Q)
        warned = await judge.evaluate("s", degenerate)  # emits classifier.warning first
        return d.to_wire(), [r.ok for r in results], warned.to_wire()

    quiet = asyncio.run(go(None))
    loud = asyncio.run(go(sink))
    assert loud == quiet
    assert calls, "the sink was called"
