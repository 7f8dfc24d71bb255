"""The systemone style end to end against a real HTTP server on 127.0.0.1 (tests/loopback.py),
plus the body it builds (request_params, body_transform) through httpx.MockTransport."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from loopback import Fault, Loopback, recordings, synthesize
from toolnexus import (
    BatchError,
    DecisionError,
    HTTPStatusError,
    TransportError,
    create_classifier,
)
from toolnexus.core.canonical import canonical_json

QUESTIONS: dict[str, Any] = {
    "refund": {"type": "noul", "instructions": "Is a refund requested?"},
    "team": {
        "type": "choice",
        "instructions": "Which team?",
        "criteria": {"billing": "Payments and refunds", "technical": "Software failures"},
    },
    "urgency": {
        "type": "score",
        "instructions": "How urgent?",
        "criteria": ["Routine", "Today", "Outage"],
    },
}


class DictCache:
    """The smallest object with get/set: what the cache= option accepts."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        return self.data.get(key)

    def set(self, key: str, value: str) -> None:
        self.data[key] = value


def body_for(state: Any, questions: dict[str, Any], model: str = "jev-latest") -> bytes:
    return canonical_json({"model": model, "questions": questions, "state": state})


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.mark.parametrize("capture", [pytest.param(r, id=r["name"]) for r in recordings()])
def test_every_live_capture_decodes_to_its_recorded_answers(
    server: Loopback, capture: dict[str, Any]
) -> None:
    """seed 004: ':model on the decision echoes what actually answered'."""
    request, response = capture["request"], capture["response"]

    async def go() -> Any:
        async with create_classifier(base_url=server.base_url) as c:
            return await c.evaluate(request["state"], request["questions"])

    decision = run(go())
    assert decision.model == response["model"] == "jev-1.13.0"
    assert decision.to_wire()["answers"] == response["answers"]
    assert decision.cached is False and decision.calibrated is True
    assert server.total == 1


def test_a_batch_of_200_with_20_percent_transient_faults_returns_200_correct_decisions(
    server: Loopback,
) -> None:
    """Issue 3 acceptance: 'A batch of 200 states with 20% injected transient faults returns
    200 correct decisions'."""
    server.fail_first_attempts(
        5, [Fault.http(429, retry_after="0"), Fault.http(503), Fault.reset(), Fault.http(529)]
    )
    states = [{"ticket": i, "text": f"charged twice for INV-{i}"} for i in range(200)]

    async def go() -> Any:
        async with create_classifier(base_url=server.base_url, retry_base_ms=1) as c:
            return await c.evaluate_batch(states, QUESTIONS, concurrency=16)

    decisions = run(go())
    assert len(decisions) == 200
    for state, decision in zip(states, decisions, strict=True):
        expected = synthesize({"model": "jev-latest", "questions": QUESTIONS, "state": state})
        assert decision.to_wire() == expected
    assert 20 <= server.faults_injected <= 60  # about 1 in 5 of 200 bodies
    assert server.total == 200 + server.faults_injected


@pytest.mark.parametrize(
    ("fault", "error", "kind"),
    [
        pytest.param(Fault.reset(), TransportError, "connection reset", id="reset"),
        # ends only when the server stops: past the 0.3 s timeout on any machine
        pytest.param(Fault.stall(600), TransportError, "timeout", id="stall-past-timeout"),
        pytest.param(Fault.truncated(), DecisionError, None, id="truncated-body"),
        pytest.param(Fault.not_json(), DecisionError, None, id="non-json-body"),
        pytest.param(Fault.http(500), HTTPStatusError, None, id="500"),
    ],
)
def test_fault_kinds_give_the_right_errors(
    server: Loopback, fault: Fault, error: type[Exception], kind: str | None
) -> None:
    server.push(fault)

    async def go() -> Any:
        async with create_classifier(base_url=server.base_url, retries=0, timeout=0.3) as c:
            return await c.evaluate({"ticket": 1}, QUESTIONS)

    with pytest.raises(error) as info:
        run(go())
    if kind is not None:
        assert getattr(info.value, "kind", None) == kind
    assert f"POST {server.base_url}/systemone" in str(info.value)


def test_truncated_body_message_says_so(server: Loopback) -> None:
    server.push(Fault.truncated())

    async def go() -> Any:
        async with create_classifier(base_url=server.base_url, retries=0) as c:
            return await c.evaluate({"ticket": 1}, QUESTIONS)

    with pytest.raises(DecisionError, match="truncated or malformed JSON"):
        run(go())


def test_429_with_retry_after_zero_is_retried_on_the_wire(server: Loopback) -> None:
    server.push(Fault.http(429, retry_after="0"))

    async def go() -> Any:
        async with create_classifier(base_url=server.base_url) as c:
            return await c.evaluate({"ticket": 2}, QUESTIONS)

    run(go())
    assert server.count(body_for({"ticket": 2}, QUESTIONS)) == 2
    assert server.headers[-1].get("x-typesafe-retry-count") == "1"


def test_connection_refused_names_its_kind() -> None:
    with Loopback() as s:
        url = s.base_url  # the port is free again once the server stops

    async def go() -> Any:
        async with create_classifier(base_url=url, retries=0) as c:
            return await c.evaluate({"ticket": 1}, QUESTIONS)

    with pytest.raises(TransportError) as info:
        run(go())
    assert info.value.kind == "connection refused"


def test_batch_fails_closed_naming_the_lowest_failing_index(server: Loopback) -> None:
    server.push(Fault.http(400, body={"detail": "bad state"}))

    async def go() -> Any:
        async with create_classifier(base_url=server.base_url) as c:
            return await c.evaluate_batch([{"i": 0}], QUESTIONS)

    with pytest.raises(BatchError, match=r"state 0: POST .*: HTTP 400: bad state") as info:
        run(go())
    assert info.value.index == 0


# --- cache ------------------------------------------------------------------------------------


def test_a_cache_hit_sends_nothing_and_is_marked_cached(server: Loopback) -> None:
    """seed 004: 'A decision served from :cache carries :cached true'."""
    cache = DictCache()

    async def go() -> Any:
        async with create_classifier(base_url=server.base_url, cache=cache) as c:
            first = await c.evaluate({"ticket": 3}, QUESTIONS)
            second = await c.evaluate({"ticket": 3}, QUESTIONS)
            other = await c.evaluate({"ticket": 4}, QUESTIONS)
            return first, second, other

    first, second, other = run(go())
    assert first.cached is False and second.cached is True and other.cached is False
    assert second.to_wire() == first.to_wire() and second.model == "jev-1.13.0"
    assert server.count(body_for({"ticket": 3}, QUESTIONS)) == 1
    assert server.total == 2
    # one model entry (requested -> served) + one decision per state
    assert len(cache.data) == 3
    assert "jev-1.13.0" in cache.data.values()


def test_a_cached_decision_is_the_answer_text_or_its_canonical_wire_body(
    server: Loopback,
) -> None:
    """An answer without JSON escapes is stored as the text it was decoded from (no second
    serialization on a cold run); one with an escape, which could hide a secret from the
    transport's scrubbing, as its canonical wire body. Both come back as the same decision."""
    cache = DictCache()
    plain = synthesize(json.loads(body_for({"t": 1}, QUESTIONS)))
    escaped = synthesize(json.loads(body_for({"t": 2}, QUESTIONS)))
    escaped_text = json.dumps(escaped, indent=1).replace('"model"', '"\\u006dodel"')
    server.push(Fault.http(200, body=json.dumps(plain, indent=1).encode()))
    server.push(Fault.http(200, body=escaped_text.encode()))

    async def go() -> Any:
        async with create_classifier(base_url=server.base_url, cache=cache) as c:
            first = [await c.evaluate({"t": i}, QUESTIONS) for i in (1, 2)]
            again = [await c.evaluate({"t": i}, QUESTIONS) for i in (1, 2)]
            return first, again

    first, again = run(go())
    assert server.total == 2
    assert [d.cached for d in again] == [True, True]
    assert [d.to_wire() for d in again] == [d.to_wire() for d in first]
    stored = set(cache.data.values())
    assert json.dumps(plain, indent=1) in stored
    assert canonical_json(first[1].to_wire()).decode() in stored
    assert not any("\\" in v for v in stored)


@pytest.mark.parametrize("cached", [False, True], ids=["no-cache", "cold-cache"])
def test_each_answer_is_validated_once(
    server: Loopback, monkeypatch: pytest.MonkeyPatch, cached: bool
) -> None:
    """Issue 8: a cold ``--cache`` run costs little more than one without. The style validates a
    live answer to decide whether to cache it; the classifier reuses that verdict instead of
    running ``validate_decision`` a second time (in ``pipeline``, its per-state evaluate)."""
    import toolnexus.evaluate.pipeline
    import toolnexus.styles.systemone
    from toolnexus.core.validation import validate_decision

    calls: list[int] = []

    def counting(questions: Any, decision: Any) -> Any:
        calls.append(1)
        return validate_decision(questions, decision)

    monkeypatch.setattr(toolnexus.evaluate.pipeline, "validate_decision", counting)
    monkeypatch.setattr(toolnexus.styles.systemone, "validate_decision", counting)
    states = [(i, {"ticket": i}) for i in range(5)]

    async def go() -> list[Any]:
        async with create_classifier(
            base_url=server.base_url, cache=DictCache() if cached else None
        ) as c:
            return [r async for _, r in c.evaluate_stream(states, QUESTIONS)]

    results = run(go())
    assert all(r.decision is not None for r in results)
    assert len(calls) == len(states)


def test_a_cached_decision_is_not_reused_for_another_endpoint(server: Loopback) -> None:
    cache = DictCache()

    async def go(base_url: str) -> Any:
        async with create_classifier(base_url=base_url, cache=cache) as c:
            return await c.evaluate({"ticket": 5}, QUESTIONS)

    run(go(server.base_url))
    run(go(server.base_url.replace("127.0.0.1", "localhost")))
    assert server.total == 2


def test_an_invalid_reply_is_returned_but_never_cached(server: Loopback) -> None:
    """seed 004: 'A reply that fails validate-decision is still RETURNED here ... but never
    cached'."""
    bad = {"model": "jev-1.13.0", "answers": {"refund": {"type": "noul", "noul": 0.5}}}
    server.push(Fault.http(200, body=bad))
    cache = DictCache()

    async def go() -> Any:
        async with create_classifier(base_url=server.base_url, cache=cache) as c:
            first = await c.evaluate({"ticket": 6}, QUESTIONS)
            second = await c.evaluate({"ticket": 6}, QUESTIONS)
            return first, second

    first, second = run(go())
    assert set(first.answers) == {"refund"} and first.cached is False
    assert second.cached is False and set(second.answers) == set(QUESTIONS)
    assert server.total == 2


def test_bound_state_fails_closed_on_an_invalid_reply(server: Loopback) -> None:
    bad = {"model": "jev-1.13.0", "answers": {"refund": {"type": "noul", "noul": 0.5}}}
    server.push(Fault.http(200, body=bad))

    async def go() -> Any:
        async with create_classifier(base_url=server.base_url) as c:
            return await c.state({"ticket": 7}).evaluate(**QUESTIONS)

    with pytest.raises(DecisionError, match="invalid decision"):
        run(go())


# --- the body -----------------------------------------------------------------------------


def capture_bodies(**options: Any) -> list[bytes]:
    bodies: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(request.content)
        sent = json.loads(request.content)
        return httpx.Response(200, json=synthesize(sent.get("wrapped", sent)))

    async def go() -> None:
        async with create_classifier(transport=httpx.MockTransport(handler), **options) as c:
            await c.evaluate({"b": 1, "a": "é<&>"}, QUESTIONS)

    run(go())
    return bodies


def test_the_body_is_the_canonical_model_questions_state() -> None:
    assert capture_bodies() == [body_for({"a": "é<&>", "b": 1}, QUESTIONS)]


def test_request_params_merge_shallowly_and_win() -> None:
    """seed 004: ':request-params extra top-level body keys, shallow-merged AFTER ... a param
    WINS on collision'."""
    (body,) = capture_bodies(request_params={"model": "jev-1.13.0", "trace": {"z": 1, "a": 2}})
    assert body == canonical_json(
        {
            "model": "jev-1.13.0",
            "questions": QUESTIONS,
            "state": {"a": "é<&>", "b": 1},
            "trace": {"a": 2, "z": 1},
        }
    )


def test_body_transform_runs_last_and_its_return_value_is_sent() -> None:
    seen: list[dict[str, Any]] = []

    def transform(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(dict(body))
        return {"wrapped": body}

    (body,) = capture_bodies(request_params={"extra": 1}, body_transform=transform)
    assert seen[0]["extra"] == 1  # request_params were merged before the transform ran
    assert json.loads(body)["wrapped"]["extra"] == 1
    assert body.startswith(b'{"wrapped":{"extra":1,"model":"jev-latest"')


def test_decision_model_is_what_the_server_says() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        answer = synthesize(json.loads(request.content))
        answer["model"] = "jev-1.13.7-served"
        return httpx.Response(200, json=answer)

    async def go() -> Any:
        async with create_classifier(transport=httpx.MockTransport(handler), model="jev-1.13") as c:
            return await c.evaluate("ticket", QUESTIONS)

    assert run(go()).model == "jev-1.13.7-served"
