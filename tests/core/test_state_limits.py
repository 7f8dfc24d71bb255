"""Issue 17 item 10: "The library skips the documented input limits: a 401-digit integer in a
Python state is sent (the CLI refuses it); NaN, datetime and lone surrogates raise `ConfigError:
value is not canonical JSON` instead of the state error (`InvalidState`, naming where in the
state)." The README's limits (64 levels, 100-character numbers, no NaN/Infinity) hold for a
state given to the library exactly as for one read by the CLI."""

from __future__ import annotations

import asyncio
import datetime
import decimal
from typing import Any

import pytest

from toolnexus import InvalidState, create_classifier

QUESTIONS = {"q": {"type": "noul", "instructions": "Is it so?"}}


def _sent_nothing(state: Any) -> InvalidState:
    calls: list[Any] = []

    def custom(state: Any, questions: Any) -> Any:
        calls.append(state)
        return {"model": "m", "answers": {"q": {"type": "noul", "noul": 0.5}}}

    async def go() -> None:
        async with create_classifier(style="custom", evaluate=custom) as c:
            await c.evaluate(state, QUESTIONS)

    with pytest.raises(InvalidState) as e:
        asyncio.run(go())
    assert calls == [], "nothing is sent for a refused state"
    return e.value


@pytest.mark.parametrize(
    ("state", "expect"),
    [
        pytest.param({"n": 10**400}, 'state["n"]: a number of 401 characters', id="401-digits"),
        pytest.param([1, -(10**100)], "state[1]: a number of 102 characters", id="negative"),
        pytest.param({"x": [float("nan")]}, 'state["x"][0]: NaN is not JSON', id="nan"),
        pytest.param({"x": float("-inf")}, 'state["x"]: -Infinity is not JSON', id="-inf"),
        pytest.param(
            {"when": datetime.datetime(2026, 1, 1)},
            'state["when"]: a datetime is not a JSON value',
            id="datetime",
        ),
        pytest.param({"d": decimal.Decimal("1.5")}, "a Decimal is not a JSON value", id="decimal"),
        pytest.param({"s": {1, 2}}, 'state["s"]: a set is not a JSON value', id="set"),
        pytest.param(
            {"t": "a\ud800b"}, 'state["t"]: a string with a lone surrogate (U+D800)', id="surrogate"
        ),
        pytest.param(
            "a\udfffb", "state: a string with a lone surrogate (U+DFFF)", id="surrogate-root"
        ),
        pytest.param(
            {"k\udc80": 1},
            "state: an object key with a lone surrogate (U+DC80)",
            id="key-surrogate",
        ),
        pytest.param({1: "x"}, "state: an object key must be a string, got int", id="int-key"),
    ],
)
def test_a_state_past_the_documented_limits_is_invalid_state_naming_where(
    state: Any, expect: str
) -> None:
    error = _sent_nothing(state)
    assert str(error).startswith("classifier: ") and expect in str(error), str(error)
    assert "canonical JSON" not in str(error)


def test_the_nesting_limit_message_is_unchanged() -> None:
    deep: Any = "x"
    for _ in range(70):
        deep = [deep]
    error = _sent_nothing(deep)
    assert str(error) == "classifier: a state must not nest more than 64 levels of objects/arrays"


def test_a_long_path_is_cut_in_the_message() -> None:
    error = _sent_nothing({"k" * 500: float("nan")})
    assert len(str(error)) < 300


def test_a_state_within_the_limits_is_sent() -> None:
    calls: list[Any] = []

    def custom(state: Any, questions: Any) -> Any:
        calls.append(state)
        return {"model": "m", "answers": {"q": {"type": "noul", "noul": 0.5}}}

    async def go() -> None:
        async with create_classifier(style="custom", evaluate=custom) as c:
            await c.evaluate({"n": 10**99, "f": 1.5, "b": True, "z": None, "t": ("é",)}, QUESTIONS)

    asyncio.run(go())
    assert len(calls) == 1
