"""The ``llm`` style: the same questions answered by an OpenAI-compatible chat endpoint.

DEPRECATED by seed 004 (System One is the single product wire) and kept working with no runtime
warning. Any chat-completions endpoint serves: OpenAI, OpenRouter's chat API, a local Ollama or
vLLM. ONE ``POST {llm_base_url}/chat/completions`` per evaluate asks for a JSON object shaped like
the System One answers; the core decodes it (``parse_decision``), checks it
(``validate_decision``) and reports it with ``calibrated=False``: the numbers are the model's own
self-report, and a threshold tuned against System One does not transfer to them.

The caller's question keys are ADDRESSING, not content (seed 004): the model sees opaque ids
(``q1``, ``q2``, ... in ASCII key order) and the answers are mapped back, so a key may be a tool
name verbatim and two evaluations that differ only in their keys send the same content.

``response_format`` is a strict JSON schema built from the questions. An endpoint that answers
400 about ``response_format``/``json_schema`` gets the request again, once, in plain JSON mode
(``{"type": "json_object"}``), and this style remembers that for the rest of its life.

Images lifted from the state (as the systemone style lifts them, same placeholders, same limits)
go as chat image content parts with ``data:`` URLs; the decision still says ``calibrated=False``.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import httpx

from .assets import Asset, lift_with_questions
from .canonical import canonical_json
from .decision import Decision, parse_decision
from .defaults import DEFAULT_RETRIES, DEFAULT_RETRY_BASE_MS, DEFAULT_TIMEOUT
from .errors import (
    ClassifierError,
    ClassifierUnsupported,
    ConfigError,
    DecisionError,
    HostBackendError,
    HTTPStatusError,
    InvalidDecision,
)
from .images import ImageLimits
from .jsonlimits import loads
from .options import OnError
from .questions import (
    ChoiceQuestion,
    NoulQuestion,
    Question,
    ScoreQuestion,
    question_to_wire,
)
from .transport import SystemOneTransport, scrub
from .validation import Checked, validate_decision

__all__ = [
    "DEFAULT_LLM_API_KEY_ENV",
    "DEFAULT_LLM_BASE_URL",
    "ChatClient",
    "LlmStyle",
]

DEFAULT_LLM_BASE_URL = "https://api.openai.com/v1"
#: The NAME of the variable holding the chat endpoint's key, read at call time.
DEFAULT_LLM_API_KEY_ENV = "OPENAI_API_KEY"

#: Appended to the base URL, as OpenAI's own clients do.
_PATH = "chat/completions"
#: How much of a reply or an error body a message quotes.
_QUOTE = 200

SYSTEM_PROMPT = """\
You are a classifier. Read the STATE and answer every question about it. Answer each question \
independently: one answer is never context for another.

Reply with one JSON object and nothing else, shaped {"answers": {<question id>: <answer>}}, with \
exactly one answer for every question id and no other keys. The answer for each question type:
- "noul": the probability that the statement in the instructions holds for the state, reading \
"criteria.true" and "criteria.false" as what each outcome means: \
{"type": "noul", "noul": <number 0..1>}
- "choice": the option whose description best fits; option ids are the keys of "options": \
{"type": "choice", "choice": <option id>, "probabilities": {<every option id>: <number 0..1>}, \
"confidence": <number 0..1>}
- "score": a rating on the ordered "levels", keyed by level index from "0" (lowest) upward: \
{"type": "score", "score": <probability-weighted mean level index>, \
"probabilities": {<every level index>: <number 0..1>}, "confidence": <number 0..1>}
Probabilities cover every option or level and sum to 1. Confidence says how well the state lets \
the question be answered at all (0 = no basis, 1 = unambiguous)."""


@runtime_checkable
class ChatClient(Protocol):
    """A ready chat client for ``create_classifier(style="llm", client=...)``.

    ``chat`` receives the OpenAI-style ``messages`` list and the ``response_format`` object and
    returns the parsed chat-completions response: a dict with ``choices[0].message.content``
    and, optionally, ``model`` and ``usage``. It owns its own endpoint, model and credential.
    """

    async def chat(
        self, messages: list[dict[str, Any]], response_format: dict[str, Any]
    ) -> dict[str, Any]: ...


def _ids(questions: Mapping[str, Question]) -> dict[str, str]:
    """Caller key -> the opaque id the model sees, in ASCII key order."""
    return {key: f"q{i}" for i, key in enumerate(sorted(questions), start=1)}


def _question_for_model(q: Question) -> dict[str, Any]:
    wire = question_to_wire(q)
    if isinstance(q, ChoiceQuestion):
        return {"type": "choice", "instructions": wire["instructions"], "options": wire["criteria"]}
    if isinstance(q, ScoreQuestion):
        levels = {str(i): level for i, level in enumerate(wire["criteria"])}
        return {"type": "score", "instructions": wire["instructions"], "levels": levels}
    return wire


def _number() -> dict[str, Any]:
    # No minimum/maximum: several strict-mode endpoints reject them; validate_decision checks
    # the ranges instead.
    return {"type": "number"}


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    """A strict-mode object: every property required, nothing else allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _answer_schema(q: Question) -> dict[str, Any]:
    # enum of one value rather than const: older strict-mode validators do not know const.
    if isinstance(q, NoulQuestion):
        return _closed({"type": {"type": "string", "enum": ["noul"]}, "noul": _number()})
    if isinstance(q, ChoiceQuestion):
        options = [str(k) for k in q.criteria]
        return _closed(
            {
                "type": {"type": "string", "enum": ["choice"]},
                "choice": {"type": "string", "enum": options},
                "probabilities": _closed({o: _number() for o in options}),
                "confidence": _number(),
            }
        )
    assert isinstance(q, ScoreQuestion)
    return _closed(
        {
            "type": {"type": "string", "enum": ["score"]},
            "score": _number(),
            "probabilities": _closed({str(i): _number() for i in range(len(q.criteria))}),
            "confidence": _number(),
        }
    )


def response_schema(questions: Mapping[str, Question]) -> dict[str, Any]:
    """The strict ``response_format`` for a question set, keyed by the opaque ids."""
    ids = _ids(questions)
    answers = _closed({ids[k]: _answer_schema(questions[k]) for k in sorted(questions)})
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "answers",
            "strict": True,
            "schema": _closed({"answers": answers}),
        },
    }


def build_messages(
    state: Any, questions: Mapping[str, Question], assets: Sequence[Asset] = ()
) -> list[dict[str, Any]]:
    """The system prompt and one user message carrying the state and the questions.

    With images (``assets``, lifted from the state), the user message is a list of content
    parts: the same JSON text, then for each image a text part naming its placeholder (which is
    what the state says in its place) and the image itself as a ``data:`` URL."""
    ids = _ids(questions)
    user = {
        "state": state,
        "questions": {ids[k]: _question_for_model(questions[k]) for k in sorted(questions)},
    }
    text = canonical_json(user).decode("utf-8")
    content: str | list[dict[str, Any]] = text
    if assets:
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
        for asset in assets:
            parts.append({"type": "text", "text": f"Image {asset.placeholder}:"})
            parts.append({"type": "image_url", "image_url": {"url": asset.image.data_url()}})
        content = parts
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": content},
    ]


def _quote(text: str, secrets: Sequence[str] = ()) -> str:
    """The first 200 characters of ``text``, repr-quoted, with every secret scrubbed first (so a
    cut can never leave a prefix of one), by the transport's own rule."""
    text = scrub(text, secrets)
    return repr(text[:_QUOTE] + ("…" if len(text) > _QUOTE else ""))


def decode_reply(
    response: Any,
    questions: Mapping[str, Question],
    fallback_model: str,
    secrets: Sequence[str] = (),
) -> Decision:
    """A chat-completions response as a validated, uncalibrated Decision.

    The reply content goes through the core decoder with the served ``model``, score legends
    filled from the question levels, and the chat usage mapped (prompt_tokens -> input_tokens,
    completion_tokens -> output_tokens, ``usage.cost`` only when the endpoint reports it).
    Every ``secrets`` value is scrubbed from any quoted reply.
    """
    if not isinstance(response, Mapping):
        raise DecisionError("classifier: llm: chat response is not a JSON object")
    content, refusal = _content(response)
    if content is None:
        why = f"refused: {_quote(refusal, secrets)}" if refusal else "no message content"
        raise DecisionError(f"classifier: llm: chat reply has {why}")
    try:
        reply = loads(content)
    except ValueError:
        reply = None
    if not isinstance(reply, Mapping) or not isinstance(reply.get("answers"), Mapping):
        raise DecisionError(
            'classifier: llm: reply is not a JSON object with "answers": '
            + _quote(content, secrets)
        )
    by_id = {qid: key for key, qid in _ids(questions).items()}
    answers: dict[str, Any] = {}
    for qid, answer in reply["answers"].items():
        key = by_id.get(str(qid))
        if key is None:
            # Never looked up among the caller's keys: an id the model invented must not land on
            # a caller key that happens to be spelled the same.
            raise InvalidDecision(
                f"classifier: invalid decision: unexpected answer {json.dumps(str(qid))} "
                f"(not a question id); llm reply: {_quote(content, secrets)}",
                str(qid),
            )
        q = questions[key]
        if isinstance(answer, Mapping):
            answer = dict(answer)
            # Plain JSON mode has no schema to force the type tag; the question knows it.
            answer.setdefault("type", q.type)
            if isinstance(q, ScoreQuestion):
                answer["legend"] = {str(i): lv for i, lv in enumerate(q.criteria)}
        answers[key] = answer
    model = response.get("model")
    body = {
        "model": model if isinstance(model, str) and model else fallback_model,
        "answers": answers,
        "usage": _usage(response.get("usage")),
        "calibrated": False,
    }
    try:
        decision = parse_decision(body, questions)
    except DecisionError as e:
        raise DecisionError(f"{e.message}; llm reply: {_quote(content, secrets)}", e.key) from None
    invalid = validate_decision(questions, decision)
    if invalid is not None:
        raise InvalidDecision(
            f"{invalid.message}; llm reply: {_quote(content, secrets)}", invalid.key
        )
    return decision


def _content(response: Mapping[str, Any]) -> tuple[str | None, str | None]:
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return None, None
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        return None, None
    content, refusal = message.get("content"), message.get("refusal")
    return (
        content if isinstance(content, str) else None,
        refusal if isinstance(refusal, str) else None,
    )


def _usage(usage: Any) -> dict[str, Any]:
    if not isinstance(usage, Mapping):
        return {}
    out: dict[str, Any] = {
        "input_tokens": usage.get("prompt_tokens") or 0,
        "output_tokens": usage.get("completion_tokens") or 0,
    }
    if usage.get("cost") is not None:
        out["cost"] = usage["cost"]
    return out


def _says_format_unsupported(error: HTTPStatusError) -> bool:
    """A 400 whose (redacted) body is about ``response_format`` / ``json_schema``: the endpoint
    does not do structured outputs, and plain JSON mode is the way left."""
    if error.status != 400:
        return False
    body = error.body.lower()
    return "response_format" in body or "json_schema" in body


class LlmStyle:
    """``style="llm"`` over an OpenAI-compatible chat-completions endpoint (deprecated, working).

    Options: ``llm_model`` (required unless ``client`` is a ``ChatClient``), ``llm_base_url``
    (default ``https://api.openai.com/v1``), ``llm_api_key_env`` (default ``OPENAI_API_KEY``; the
    variable is read at call time and sent as ``Authorization: Bearer`` only when set),
    ``timeout``, ``retries``/``retry_base_ms``/``retryable_statuses``/``on_error`` and
    ``transport``, all with System One's meaning: the request goes through the same
    ``transport.SystemOneTransport`` (same retry rules, same safe errors), only the path and the
    body differ. ``client`` may instead be:

    - an ``httpx.AsyncClient`` with ``base_url`` set: requests go to ``{base_url}/chat/completions``
      through it, with its own headers (a set ``llm_api_key_env`` variable still wins for
      ``Authorization``); ``llm_model`` is still required. The caller owns it and closes it.
    - any object with ``async chat(messages, response_format) -> dict`` (``ChatClient``): it owns
      endpoint, model, credential and retries; no HTTP option applies.
    """

    name = "llm"

    def __init__(
        self,
        *,
        llm_model: str | None = None,
        llm_base_url: str | None = None,
        llm_api_key_env: str | None = None,
        client: Any = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        retry_base_ms: int = DEFAULT_RETRY_BASE_MS,
        retryable_statuses: Collection[int] = (),
        on_error: OnError | None = None,
        transport: Any = None,
        image_limits: Any = None,
    ) -> None:
        self._chat_client: ChatClient | None = None
        self._transport: SystemOneTransport | None = None
        self.model: str = llm_model or ""
        self._json_mode = False
        self._api_key_env: str = llm_api_key_env or DEFAULT_LLM_API_KEY_ENV
        self._image_limits = ImageLimits.of(image_limits)
        if client is not None and not isinstance(client, httpx.AsyncClient):
            chat = getattr(client, "chat", None)
            if not (callable(chat) and inspect.iscoroutinefunction(chat)):
                raise ConfigError(
                    "classifier: style 'llm' client must be an httpx.AsyncClient or have an "
                    "async chat(messages, response_format) method"
                )
            self._chat_client = client
            self.model = self.model or "llm"
            self.endpoint = f"{type(client).__name__}.chat"
            return
        if not self.model:
            raise ConfigError(
                "classifier: style 'llm' requires llm_model=<chat model id> "
                "(or client=<object with async chat(messages, response_format)>)"
            )
        if isinstance(client, httpx.AsyncClient):
            if not str(client.base_url):
                raise ConfigError("classifier: style 'llm' client needs a base_url")
            base_url = str(client.base_url)
        else:
            base_url = llm_base_url or DEFAULT_LLM_BASE_URL
        self._transport = SystemOneTransport(
            base_url=base_url,
            api_key_env=self._api_key_env,
            timeout=timeout,
            retries=retries,
            retry_base_ms=retry_base_ms,
            retryable_statuses=retryable_statuses,
            on_error=on_error,
            transport=transport,
            http_client=client,
        )
        self.endpoint = self._transport.endpoint(_PATH)

    def __repr__(self) -> str:
        return f"LlmStyle(model={self.model!r}, endpoint={self.endpoint!r})"

    @property
    def json_mode(self) -> bool:
        """True once the endpoint has refused a JSON schema and plain JSON mode is in use."""
        return self._json_mode

    async def aclose(self) -> None:
        """Close the connection pool this style opened (never a client the caller passed)."""
        if self._transport is not None:
            await self._transport.aclose()

    def _secrets(self) -> list[str]:
        """The values a quoted reply must not show, read at call time: the credential, and with a
        transport every expanded ``${NAME}`` of its endpoint too."""
        if self._transport is not None:
            return self._transport.secrets()
        key = os.environ.get(self._api_key_env)
        return [key] if key else []

    async def decide(self, state: Any, questions: dict[str, Question]) -> Checked:
        """One decision; ``decode_reply`` has validated it (an invalid reply is raised), so it
        comes back ``Checked`` and the classifier does not validate it again."""
        for key in sorted(questions):
            q = questions[key]
            if not isinstance(q, NoulQuestion | ChoiceQuestion | ScoreQuestion):
                raise ClassifierUnsupported("llm", self.model, f'question type "{q.type}"')
        lifted = lift_with_questions(state, questions)
        if lifted.assets:
            self._image_limits.check_request(lifted.assets)
        messages = build_messages(lifted.state, questions, lifted.assets)
        schema = response_schema(questions)
        if self._chat_client is not None:
            try:
                response = await self._chat_client.chat(messages, schema)
            except ClassifierError:
                raise
            except Exception as e:
                # The type only: a client's own message may quote its request headers.
                raise HostBackendError(
                    f"classifier: llm: {self.endpoint} failed: {type(e).__name__}"
                ) from None
            return Checked(decode_reply(response, questions, self.model, self._secrets()), None)
        if not self._json_mode:
            try:
                response = await self._post(messages, schema)
            except HTTPStatusError as e:
                if not _says_format_unsupported(e):
                    raise
                self._json_mode = True
        if self._json_mode:
            response = await self._post(messages, {"type": "json_object"})
        return Checked(decode_reply(response, questions, self.model, self._secrets()), None)

    async def _post(
        self, messages: list[dict[str, Any]], response_format: dict[str, Any]
    ) -> dict[str, Any]:
        """One chat request (with the transport's retries); the parsed JSON object it returns."""
        assert self._transport is not None
        body = canonical_json(
            {"model": self.model, "messages": messages, "response_format": response_format}
        )
        reply = await self._transport.post(_PATH, body)
        try:
            parsed = loads(reply.content)
        except (ValueError, UnicodeDecodeError):
            text = reply.content.decode("utf-8", errors="replace")
            raise DecisionError(
                f"classifier: POST {self.endpoint}: response is not JSON: "
                + _quote(text, self._secrets())
            ) from None
        if not isinstance(parsed, dict):
            raise DecisionError(f"classifier: POST {self.endpoint}: response is not a JSON object")
        return parsed
