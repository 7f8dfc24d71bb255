"""The ``llm`` style: the same questions answered by an OpenAI-compatible chat endpoint.

DEPRECATED by seed 004 (System One is the single product wire) and kept working with no runtime
warning. Any chat-completions endpoint serves: OpenAI, OpenRouter's chat API, a local Ollama or
vLLM. ONE ``POST {llm_base_url}/chat/completions`` per evaluate asks for a JSON object shaped like
the System One answers; the core decodes it (``parse_decision``), checks it
(``validate_decision``) and reports it with ``calibrated=False``: the numbers are the model's own
self-report, and a threshold tuned against System One does not transfer to them.

What is sent and how the reply is read (prompt, schema, messages, decoding) is ``llm_wire.py``;
this module is the style: its options, the chat client seam, and the requests.

``response_format`` is a strict JSON schema built from the questions. An endpoint that answers
400 about ``response_format``/``json_schema`` gets the request again, once, in plain JSON mode
(``{"type": "json_object"}``), and this style remembers that for the rest of its life.

Images lifted from the state (as the systemone style lifts them, same placeholders, same limits)
go as chat image content parts with ``data:`` URLs; the decision still says ``calibrated=False``.
"""

from __future__ import annotations

import inspect
import os
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import httpx

from ..config.options import ClassifierOptions
from ..core import (
    Checked,
    ClassifierError,
    ClassifierUnsupported,
    ConfigError,
    DecisionError,
    HostBackendError,
    HTTPStatusError,
    ImageLimits,
    Question,
    canonical_json,
    lift_with_questions,
    loads,
    registry,
)
from ..transport import SystemOneTransport
from .llm_wire import (
    build_messages,
    decode_reply,
    quote,
    response_schema,
)

if TYPE_CHECKING:
    from ..scheduler import Scheduler

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
    and the transport options (``request_timeout``, ``retry_policy``, ``transport``), all with
    System One's meaning: the request goes through the same
    ``transport.SystemOneTransport`` (same retry rules, same safe errors), only the path and the
    body differ. ``client`` may instead be:

    - an ``httpx.AsyncClient`` with ``base_url`` set: requests go to ``{base_url}/chat/completions``
      through it, with its own headers (a set ``llm_api_key_env`` variable still wins for
      ``Authorization``); ``llm_model`` is still required. The caller owns it and closes it.
    - any object with ``async chat(messages, response_format) -> dict`` (``ChatClient``): it owns
      endpoint, model, credential and retries; no HTTP option applies.
    """

    name = "llm"

    def __init__(self, options: ClassifierOptions) -> None:
        llm_model, client = options.llm_model, options.client
        self._chat_client: ChatClient | None = None
        self._transport: SystemOneTransport | None = None
        self.model: str = llm_model or ""
        self._json_mode = False
        self._api_key_env: str = options.llm_api_key_env or DEFAULT_LLM_API_KEY_ENV
        self._image_limits = ImageLimits.of(options.image_limits)
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
            base_url = options.llm_base_url or DEFAULT_LLM_BASE_URL
        self._transport = SystemOneTransport(
            base_url=base_url,
            api_key_env=self._api_key_env,
            timeout=options.request_timeout,
            retry=options.retry_policy,
            transport=options.transport,
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

    async def decide(
        self, state: Any, questions: dict[str, Question], scheduler: Scheduler | None = None
    ) -> Checked:
        """One decision (its requests admitted by ``scheduler`` in a batch); ``decode_reply``
        has validated it (an invalid reply is raised), so it comes back ``Checked`` and the
        classifier does not validate it again."""
        for key in sorted(questions):
            q = questions[key]
            qtype = registry.of_question(q)
            if qtype is None or qtype.llm is None:
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
                response = await self._post(messages, schema, scheduler)
            except HTTPStatusError as e:
                if not _says_format_unsupported(e):
                    raise
                self._json_mode = True
        if self._json_mode:
            response = await self._post(messages, {"type": "json_object"}, scheduler)
        return Checked(decode_reply(response, questions, self.model, self._secrets()), None)

    async def _post(
        self,
        messages: list[dict[str, Any]],
        response_format: dict[str, Any],
        scheduler: Scheduler | None,
    ) -> dict[str, Any]:
        """One chat request (with the transport's retries); the parsed JSON object it returns."""
        assert self._transport is not None
        body = canonical_json(
            {"model": self.model, "messages": messages, "response_format": response_format}
        )
        reply = await self._transport.post(_PATH, body, scheduler=scheduler)
        try:
            parsed = loads(reply.content)
        except (ValueError, UnicodeDecodeError):
            text = reply.content.decode("utf-8", errors="replace")
            raise DecisionError(
                f"classifier: POST {self.endpoint}: response is not JSON: "
                + quote(text, self._secrets())
            ) from None
        if not isinstance(parsed, dict):
            raise DecisionError(f"classifier: POST {self.endpoint}: response is not a JSON object")
        return parsed
