"""The ``llm`` style over an OpenAI-compatible chat endpoint (seed 004: deprecated, kept working).

SPEC 8B: "the three question types rendered as ONE JSON-schema structured-output call ... the
model's self-reported number passes through with calibrated: false."
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import httpx
import pytest

from toolnexus.classifier.client import Classifier
from toolnexus.classifier.factory import create_classifier
from toolnexus.core.canonical import canonical_json
from toolnexus.core.errors import (
    ClassifierError,
    ClassifierUnsupported,
    ConfigError,
    DecisionError,
    HTTPStatusError,
    InvalidDecision,
    TransportError,
)
from toolnexus.core.qtypes.choice import ChoiceQuestion
from toolnexus.core.qtypes.noul import (
    NoulCriteria,
    NoulQuestion,
)
from toolnexus.core.qtypes.raw import RawQuestion
from toolnexus.core.qtypes.rubric import ScoreQuestion
from toolnexus.evaluate.pipeline import METRIC_EVALUATE
from toolnexus.styles.llm import LlmStyle
from toolnexus.styles.llm_wire import SYSTEM_PROMPT

T = TypeVar("T")
SECRET = "sk-test-SECRET"
STATE = {"ticket": "I was charged twice for my plan <and> want a refund"}
QUESTIONS: dict[str, Any] = {
    "refund_tool": NoulQuestion(
        "The customer asks for money back", NoulCriteria("asks for a refund", "does not")
    ),
    "desk": ChoiceQuestion(
        "Which desk should take this ticket?",
        {"billing": "charges, invoices, refunds", "technical": "bugs, outages, errors"},
    ),
    "severity": ScoreQuestion(
        "How urgent is the ticket?", ["routine", "needs a reply today", "drop everything"]
    ),
}
# The opaque ids the model sees, in ASCII order of the caller's keys.
IDS = {"desk": "q1", "refund_tool": "q2", "severity": "q3"}
ANSWERS: dict[str, Any] = {
    "q1": {
        "type": "choice",
        "choice": "billing",
        "probabilities": {"billing": 0.9, "technical": 0.1},
        "confidence": 0.8,
    },
    "q2": {"type": "noul", "noul": 0.95},
    "q3": {
        "type": "score",
        "score": 1.1,
        "probabilities": {"0": 0.1, "1": 0.7, "2": 0.2},
        "confidence": 0.5,
    },
}


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def chat_response(
    content: str | None,
    model: str = "gpt-4o-mini-2024-07-18",
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        "usage": usage if usage is not None else {"prompt_tokens": 321, "completion_tokens": 45},
    }


def reply(answers: dict[str, Any] = ANSWERS, **kw: Any) -> httpx.Response:
    return httpx.Response(200, json=chat_response(json.dumps({"answers": answers}), **kw))


class Endpoint:
    """A scripted chat endpoint: answers each request with the next response; records requests."""

    def __init__(self, *responses: httpx.Response | Exception) -> None:
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        nxt = self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]
        if isinstance(nxt, Exception):
            raise nxt
        return nxt

    def body(self, i: int = 0) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.requests[i].content)
        return parsed


def classifier(endpoint: Endpoint, **opts: Any) -> Classifier:
    opts.setdefault("llm_model", "gpt-4o-mini")
    opts.setdefault("retry_base_ms", 1)
    return create_classifier(style="llm", transport=httpx.MockTransport(endpoint), **opts)


async def evaluate(c: Classifier, questions: dict[str, Any] = QUESTIONS, state: Any = STATE) -> Any:
    async with c:
        return await c.evaluate(state, questions)


# --- construction ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("opts", "fragment"),
    [
        pytest.param({}, "requires llm_model", id="no-model"),
        pytest.param({"llm_model": ""}, "requires llm_model", id="empty-model"),
        pytest.param({"client": object()}, "async chat", id="client-without-chat"),
    ],
)
def test_construction_rejects_missing_options(opts: dict[str, Any], fragment: str) -> None:
    """seed 004: a style whose required option is missing is rejected HERE, not at first call."""
    with pytest.raises(ConfigError, match=fragment):
        create_classifier(style="llm", **opts)


def test_defaults_post_to_openai_chat_completions() -> None:
    ep = Endpoint(reply())
    run(evaluate(classifier(ep)))
    assert str(ep.requests[0].url) == "https://api.openai.com/v1/chat/completions"
    assert ep.requests[0].method == "POST"


# --- request shape ---------------------------------------------------------------------------


def test_request_is_one_strict_json_schema_call_with_state_and_instructions() -> None:
    """SPEC 8B: ONE JSON-schema structured-output call; choice -> enum of option ids, score ->
    probabilities keyed by level index; content is the canonical bytes."""
    ep = Endpoint(reply())
    run(evaluate(classifier(ep, timeout=7.5)))
    assert len(ep.requests) == 1
    req = ep.requests[0]
    assert req.headers["content-type"] == "application/json"
    assert req.content == canonical_json(json.loads(req.content))
    assert req.extensions["timeout"]["read"] == 7.5
    body = ep.body()
    assert body["model"] == "gpt-4o-mini"
    rf = body["response_format"]
    assert rf["type"] == "json_schema"
    assert rf["json_schema"]["strict"] is True
    answers = rf["json_schema"]["schema"]["properties"]["answers"]
    assert answers["required"] == ["q1", "q2", "q3"]
    assert answers["additionalProperties"] is False
    choice = answers["properties"]["q1"]["properties"]
    assert choice["choice"]["enum"] == ["billing", "technical"]
    assert choice["probabilities"]["required"] == ["billing", "technical"]
    score = answers["properties"]["q3"]["properties"]
    assert score["probabilities"]["required"] == ["0", "1", "2"]
    assert answers["properties"]["q2"]["properties"]["type"]["enum"] == ["noul"]

    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    assert user["role"] == "user"
    sent = json.loads(user["content"])
    assert sent["state"] == STATE
    assert sent["questions"]["q1"]["instructions"] == "Which desk should take this ticket?"
    assert sent["questions"]["q1"]["options"]["billing"] == "charges, invoices, refunds"
    assert sent["questions"]["q2"]["criteria"] == {"true": "asks for a refund", "false": "does not"}
    assert sent["questions"]["q3"]["levels"] == {
        "0": "routine",
        "1": "needs a reply today",
        "2": "drop everything",
    }


def test_question_keys_are_addressing_not_content() -> None:
    """seed 004: keys are never transmitted to the model, so two evaluations differing only in
    their keys send identical content."""
    renamed = {"a_desk": QUESTIONS["desk"], "b_refund": QUESTIONS["refund_tool"]}
    original = {"desk": QUESTIONS["desk"], "refund_tool": QUESTIONS["refund_tool"]}
    answers = {"q1": ANSWERS["q1"], "q2": ANSWERS["q2"]}
    ep1, ep2 = Endpoint(reply(answers)), Endpoint(reply(answers))
    d1 = run(evaluate(classifier(ep1), original))
    d2 = run(evaluate(classifier(ep2), renamed))
    assert ep1.requests[0].content == ep2.requests[0].content
    assert b"refund_tool" not in ep1.requests[0].content
    assert d1.noul("refund_tool").noul == d2.noul("b_refund").noul == 0.95


# --- decoding --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "check"),
    [
        pytest.param("refund_tool", lambda d: d.noul("refund_tool").noul == 0.95, id="noul"),
        pytest.param(
            "desk",
            lambda d: (d.choice("desk").choice, d.choice("desk").confidence) == ("billing", 0.8),
            id="choice",
        ),
        pytest.param(
            "severity",
            lambda d: (
                (
                    d.score("severity").level,
                    d.score("severity").label,
                    d.score("severity").legend["2"],
                )
                == (1, "needs a reply today", "drop everything")
            ),
            id="score-labelled-from-question",
        ),
    ],
)
def test_happy_path_each_type(key: str, check: Callable[[Any], bool]) -> None:
    """SPEC 8B: the llm style reports calibrated false; usage comes from the chat response."""
    questions = {key: QUESTIONS[key]}
    ep = Endpoint(reply({"q1": ANSWERS[IDS[key]]}))
    d = run(evaluate(classifier(ep), questions))
    assert check(d)
    assert d.calibrated is False
    assert d.model == "gpt-4o-mini-2024-07-18"
    assert (d.usage.input_tokens, d.usage.output_tokens, d.usage.cost) == (321, 45, None)


def test_usage_cost_only_when_reported() -> None:
    """Cost is None when not reported, never 0; OpenRouter reports usage.cost."""
    usage = {"prompt_tokens": 10, "completion_tokens": 2, "cost": 0.00012}
    ep = Endpoint(reply(usage=usage))
    d = run(evaluate(classifier(ep)))
    assert (d.usage.input_tokens, d.usage.output_tokens, d.usage.cost) == (10, 2, 0.00012)


def test_model_falls_back_to_the_requested_one_when_the_response_omits_it() -> None:
    body = chat_response(json.dumps({"answers": {"q1": {"type": "noul", "noul": 0.1}}}))
    del body["model"]
    ep = Endpoint(httpx.Response(200, json=body))
    d = run(evaluate(classifier(ep), {"x": QUESTIONS["refund_tool"]}))
    assert d.model == "gpt-4o-mini"


# --- json_object fallback --------------------------------------------------------------------

UNSUPPORTED = httpx.Response(
    400,
    json={
        "error": {
            "message": "Invalid parameter: response_format of type 'json_schema' is not supported "
            "with this model.",
            "type": "invalid_request_error",
        }
    },
)


def test_schema_refused_falls_back_to_json_object_once_and_remembers() -> None:
    """Issue 3: use response_format with a JSON schema when the endpoint accepts it, else plain
    JSON mode. The type tag may be missing in JSON mode; the question supplies it."""
    untyped = {"q1": {"noul": 0.3}}
    ep = Endpoint(UNSUPPORTED, reply(untyped), reply(untyped))
    c = classifier(ep)
    q = {"x": QUESTIONS["refund_tool"]}

    async def twice() -> list[Any]:
        async with c:
            return [await c.evaluate(STATE, q), await c.evaluate(STATE, q)]

    d1, d2 = run(twice())
    formats = [ep.body(i)["response_format"]["type"] for i in range(len(ep.requests))]
    assert formats == ["json_schema", "json_object", "json_object"]
    assert d1.noul("x").noul == d2.noul("x").noul == 0.3
    assert ep.body(1)["messages"] == ep.body(0)["messages"]


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(
            httpx.Response(400, json={"error": {"message": "messages: too long"}}),
            id="400-other-reason",
        ),
        pytest.param(httpx.Response(404, text="response_format route not found"), id="404"),
    ],
)
def test_other_errors_do_not_fall_back(response: httpx.Response) -> None:
    ep = Endpoint(response)
    with pytest.raises(HTTPStatusError):
        run(evaluate(classifier(ep)))
    assert len(ep.requests) == 1


# --- bad replies -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "error", "fragment"),
    [
        pytest.param("Sure! The desk is billing.", DecisionError, "not a JSON object", id="prose"),
        pytest.param('{"desk": "billing"}', DecisionError, '"answers"', id="no-answers"),
        pytest.param('["answers"]', DecisionError, "not a JSON object", id="array"),
        pytest.param(
            json.dumps({"answers": {"q1": {"type": "noul", "noul": "high"}}}),
            DecisionError,
            "must be a number",
            id="undecodable",
        ),
    ],
)
def test_reply_not_json_is_a_clear_error_quoting_it(
    content: str, error: type[Exception], fragment: str
) -> None:
    """Issue 3: a reply that is not JSON is a clear ClassifierError that quotes it."""
    ep = Endpoint(httpx.Response(200, json=chat_response(content)))
    with pytest.raises(error, match=fragment) as info:
        run(evaluate(classifier(ep), {"x": QUESTIONS["refund_tool"]}))
    assert content[:40] in str(info.value)
    assert isinstance(info.value, ClassifierError)


def test_quote_is_capped_at_200_characters() -> None:
    """Issue 3: the error quotes the FIRST 200 characters of the reply."""
    content = "x" * 200 + "TAIL-NOT-SHOWN"
    ep = Endpoint(httpx.Response(200, json=chat_response(content)))
    with pytest.raises(DecisionError) as info:
        run(evaluate(classifier(ep)))
    assert "x" * 200 in str(info.value)
    assert "TAIL" not in str(info.value)


@pytest.mark.parametrize(
    ("answers", "fragment"),
    [
        pytest.param(
            {"q1": {**ANSWERS["q1"], "choice": "sales"}},
            "invalid decision: \"desk\" chose 'sales', which was not offered",
            id="choice-not-offered",
        ),
        pytest.param({}, 'invalid decision: missing answer "desk"', id="missing"),
        pytest.param(
            {"q1": ANSWERS["q1"], "q9": ANSWERS["q2"]},
            'invalid decision: unexpected answer "q9"',
            id="unexpected",
        ),
        pytest.param(
            {"q1": {**ANSWERS["q1"], "probabilities": {"billing": 0.5, "technical": 0.1}}},
            "sum to",
            id="bad-sum",
        ),
    ],
)
def test_reply_failing_validation_is_an_error(answers: dict[str, Any], fragment: str) -> None:
    """Issue 3: the reply is checked with validate_decision; a failure quotes the reply."""
    ep = Endpoint(reply(answers))
    with pytest.raises(InvalidDecision) as info:
        run(evaluate(classifier(ep), {"desk": QUESTIONS["desk"]}))
    assert fragment in str(info.value)
    assert 'llm reply: \'{"answers"' in str(info.value)


def test_an_invented_id_never_lands_on_a_caller_key_spelled_the_same() -> None:
    """Keys are addressing: the caller's key "q2" is shown to the model as "q1"; a reply under
    "q2" answers nothing that was asked."""
    ep = Endpoint(reply({"q2": ANSWERS["q1"]}))
    with pytest.raises(InvalidDecision, match='unexpected answer "q2"'):
        run(evaluate(classifier(ep), {"q2": QUESTIONS["desk"]}))


def test_refusal_is_reported() -> None:
    body = chat_response(None)
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    ep = Endpoint(httpx.Response(200, json=body))
    with pytest.raises(DecisionError, match=re.escape('refused: "I can\'t help with that."')):
        run(evaluate(classifier(ep)))


def test_raw_question_is_unsupported_and_sends_nothing() -> None:
    """seed 004: ClassifierUnsupported, message exact: <backend> (<model>) does not support <f>."""
    ep = Endpoint(reply())
    with pytest.raises(ClassifierUnsupported) as info:
        run(evaluate(classifier(ep), {"b": RawQuestion("box", "Box the cat")}))
    assert str(info.value) == 'classifier: llm (gpt-4o-mini) does not support question type "box"'
    assert ep.requests == []


# --- HTTP errors, retries, secrets -----------------------------------------------------------


def test_auth_header_from_the_named_env_var_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Secrets: the key is read from the variable named by llm_api_key_env at call time, and
    sent only when set."""
    ep = Endpoint(reply())
    c = classifier(ep, llm_api_key_env="MY_CHAT_KEY", llm_base_url="http://127.0.0.1:11434/v1/")

    async def go() -> None:
        async with c:
            await c.evaluate(STATE, QUESTIONS)
            monkeypatch.setenv("MY_CHAT_KEY", SECRET)
            await c.evaluate(STATE, QUESTIONS)

    run(go())
    assert "authorization" not in ep.requests[0].headers
    assert ep.requests[1].headers["authorization"] == f"Bearer {SECRET}"
    assert str(ep.requests[1].url) == "http://127.0.0.1:11434/v1/chat/completions"


@pytest.mark.parametrize("status", [pytest.param(401, id="401"), pytest.param(403, id="403")])
def test_auth_failure_body_is_never_shown(status: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Preamble: 401/403 bodies never shown (gateways echo credentials into them)."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    ep = Endpoint(httpx.Response(status, json={"error": {"message": f"bad key {SECRET}"}}))
    with pytest.raises(HTTPStatusError) as info:
        run(evaluate(classifier(ep)))
    e = info.value
    assert str(e).startswith(
        f"classifier: POST https://api.openai.com/v1/chat/completions: HTTP {status}"
    )
    assert "bad key" not in str(e)
    assert (e.status, e.body) == (status, "")
    assert len(ep.requests) == 1


def test_error_names_status_endpoint_and_server_message() -> None:
    ep = Endpoint(
        httpx.Response(
            404,
            json={"error": {"message": "The model `gpt-9` does not exist"}},
        )
    )
    with pytest.raises(HTTPStatusError) as info:
        run(evaluate(classifier(ep)))
    assert str(info.value).startswith(
        "classifier: POST https://api.openai.com/v1/chat/completions: HTTP 404: "
        "The model `gpt-9` does not exist"
    )


@pytest.mark.parametrize(
    ("responses", "opts", "attempts", "ok"),
    [
        pytest.param(
            [httpx.Response(429, headers={"Retry-After": "0"}), reply()], {}, 2, True, id="429"
        ),
        pytest.param([httpx.Response(503), httpx.Response(502), reply()], {}, 3, True, id="5xx"),
        pytest.param([httpx.Response(500)], {}, 3, False, id="budget-2-spent"),
        pytest.param([httpx.Response(500)], {"retries": 0}, 1, False, id="retries-0"),
        pytest.param([httpx.Response(501)], {}, 1, False, id="501-terminal"),
        pytest.param(
            [httpx.Response(520), reply()], {"retryable_statuses": [520]}, 2, True, id="widened"
        ),
        pytest.param(
            [httpx.Response(429)], {"on_error": lambda info: "fail"}, 1, False, id="on-error-fail"
        ),
        pytest.param([httpx.ConnectError("refused"), reply()], {}, 2, True, id="network-retried"),
    ],
)
def test_retries(responses: list[Any], opts: dict[str, Any], attempts: int, ok: bool) -> None:
    """seed 004: retries on 408/429/500/502/503/504/529 + network, budget 2; retryable_statuses
    only widens; on_error has the final say; retries=0 means one attempt."""
    ep = Endpoint(*responses)
    c = classifier(ep, **opts)
    if ok:
        assert run(evaluate(c)).choice("desk").choice == "billing"
    else:
        with pytest.raises(ClassifierError) as info:
            run(evaluate(c))
        assert getattr(info.value, "attempts", None) == attempts
    assert len(ep.requests) == attempts


@pytest.mark.parametrize(
    ("failure", "kind"),
    [
        pytest.param(httpx.ConnectError("refused"), "network error", id="connect"),
        pytest.param(httpx.ReadTimeout("slow"), "timeout", id="read-timeout"),
    ],
)
def test_transport_failure_names_its_kind(failure: Exception, kind: str) -> None:
    ep = Endpoint(failure)
    with pytest.raises(TransportError) as info:
        run(evaluate(classifier(ep, retries=0)))
    assert info.value.kind == kind
    assert str(info.value).startswith(
        "classifier: POST https://api.openai.com/v1/chat/completions: "
    )


def test_timeout_bounds_one_request() -> None:
    """seed 004: timeout bounds ONE request; an endpoint that stalls past it is a timeout."""

    async def stall(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(5)
        return reply()

    c = create_classifier(
        style="llm", llm_model="m", timeout=0.05, retries=0, transport=httpx.MockTransport(stall)
    )
    with pytest.raises(TransportError) as info:
        run(evaluate(c))
    assert info.value.kind == "timeout"


def _fails(response: httpx.Response | Exception) -> tuple[list[ClassifierError], list[Any]]:
    events: list[Any] = []
    errors: list[ClassifierError] = []
    ep = Endpoint(response)
    c = classifier(ep, retries=0, on_metric=events.append)
    try:
        run(evaluate(c))
    except ClassifierError as e:
        errors.append(e)
    return errors, events


@pytest.mark.parametrize(
    "response",
    [
        pytest.param(httpx.Response(401, text=f"invalid key {SECRET}"), id="401"),
        pytest.param(httpx.Response(500, text=f"echo: Bearer {SECRET}"), id="500-echo"),
        pytest.param(
            httpx.Response(400, json={"error": {"message": f"bad header {SECRET}"}}), id="400-echo"
        ),
        pytest.param(httpx.ConnectError(f"refused {SECRET}"), id="network"),
        pytest.param(httpx.Response(200, text=f"not json {SECRET}"), id="not-json"),
    ],
)
def test_secret_never_in_any_error_or_metric(
    response: httpx.Response | Exception, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 3: no credential appears in any error message, field, repr or metric event."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    errors, events = _fails(response)
    assert len(errors) == 1
    e = errors[0]
    seen = [str(e), repr(e), repr(vars(e)), repr(events)]
    for text in seen:
        assert SECRET not in text


def test_repr_carries_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    c = classifier(Endpoint(reply()))
    style = c.pipeline.style
    assert isinstance(style, LlmStyle)
    assert SECRET not in repr(style) + repr(c) + repr(vars(style))


# --- ready clients ---------------------------------------------------------------------------


class FakeChat:
    """A ChatClient: any object with async chat(messages, response_format) -> dict."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[dict[str, str]], dict[str, Any]]] = []

    async def chat(
        self, messages: list[dict[str, str]], response_format: dict[str, Any]
    ) -> dict[str, Any]:
        self.calls.append((messages, response_format))
        return chat_response(json.dumps({"answers": ANSWERS}), model="local-llama")


def test_chat_client_object_needs_no_model_url_or_env() -> None:
    fake = FakeChat()
    c = create_classifier(style="llm", client=fake)
    d = run(evaluate(c))
    assert d.model == "local-llama"
    assert d.calibrated is False
    ((messages, rf),) = fake.calls
    assert rf["type"] == "json_schema"
    assert messages[0]["content"] == SYSTEM_PROMPT


def test_chat_client_failure_is_translated_without_its_text() -> None:
    class Broken:
        async def chat(self, messages: Any, response_format: Any) -> dict[str, Any]:
            raise RuntimeError(f"boom {SECRET}")

    with pytest.raises(ClassifierError, match="RuntimeError") as info:
        run(evaluate(create_classifier(style="llm", client=Broken())))
    assert SECRET not in str(info.value)


def test_httpx_async_client_is_used_and_not_closed() -> None:
    ep = Endpoint(reply())

    async def go() -> bool:
        async with httpx.AsyncClient(
            base_url="http://127.0.0.1:8000/v1", transport=httpx.MockTransport(ep)
        ) as http:
            c = create_classifier(style="llm", client=http, llm_model="qwen2.5")
            await evaluate(c)
            return http.is_closed

    assert run(go()) is False
    assert str(ep.requests[0].url) == "http://127.0.0.1:8000/v1/chat/completions"
    assert ep.body()["model"] == "qwen2.5"


# --- metrics ---------------------------------------------------------------------------------


def test_metric_event_through_create_classifier() -> None:
    """seed 004: "classifier.evaluate" events into the on_metric sink, for every style."""
    events: list[dict[str, Any]] = []
    ep = Endpoint(reply())
    run(evaluate(classifier(ep, on_metric=events.append)))
    (event,) = events
    assert event["event"] == METRIC_EVALUATE
    assert event["style"] == "llm"
    assert event["status"] == "ok"
    assert event["model"] == "gpt-4o-mini-2024-07-18"
    assert (event["input_tokens"], event["output_tokens"]) == (321, 45)
    assert event["calibrated"] is False
    assert "cost" not in event


def test_failed_evaluate_metric_names_the_chat_model() -> None:
    """seed 004: error events go to the same sink; the model named is the one asked for."""
    events: list[dict[str, Any]] = []
    c = classifier(Endpoint(httpx.Response(500)), retries=0, on_metric=events.append)
    with pytest.raises(HTTPStatusError):
        run(evaluate(c))
    (event,) = events
    assert (event["status"], event["model"]) == ("error", "gpt-4o-mini")
    assert "gpt-4o-mini" in repr(c)
