"""One exception tree: everything toolnexus raises is a :class:`ClassifierError`.

::

    ClassifierError                 base; str(e) always starts "classifier: "
    ├── QuestionError               a question set breaks a rule before any request
    │                               (limits, empty key, unknown type, chunk size)
    ├── DecisionError               a response body cannot be decoded as a Decision
    │   └── InvalidDecision         decoded, but fails validate_decision
    ├── InvalidState                a state that is not a string, an object or an array
    ├── AnswerAccessError           Decision.noul/choice/score/raw on an absent key
    │                               or on an answer of another type
    ├── ConfigError                 create_classifier options rejected at construction
    ├── StaticMiss                  the static style has no recording for a request
    ├── ClassifierUnsupported       a backend/model cannot serve a feature
    ├── TransportError              the request never got an HTTP answer
    │                               (timeout, connection refused, reset)
    ├── HTTPStatusError             a non-2xx answer: status, request_id, body
    └── BatchError                  evaluate_batch failed closed: index of the lowest failing state

Third-party exceptions (httpx, aiohttp, json) are translated at one boundary each
(``transport.py`` for HTTP, ``decision.py`` for decoding) and never escape the public API.
No message, field or repr of these classes ever carries a credential or an expanded header.
"""

from __future__ import annotations

__all__ = [
    "AnswerAccessError",
    "BatchError",
    "ClassifierError",
    "ClassifierUnsupported",
    "ConfigError",
    "DecisionError",
    "HTTPStatusError",
    "InvalidDecision",
    "InvalidState",
    "QuestionError",
    "StaticMiss",
    "TransportError",
    "unsupported",
]

PREFIX = "classifier: "


class ClassifierError(Exception):
    """Base of everything toolnexus raises. The message always starts ``classifier: ``."""

    def __init__(self, message: str) -> None:
        if not message.startswith(PREFIX):
            message = PREFIX + message
        super().__init__(message)

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""

    @property
    def detail(self) -> str:
        """The message without its ``classifier: `` prefix, to nest it in another message."""
        return self.message.removeprefix(PREFIX)


class QuestionError(ClassifierError):
    """A question set breaks a client-side rule; no request was sent.

    ``key`` is the offending question key, when there is one.
    """

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class DecisionError(ClassifierError):
    """A response body cannot be decoded as a Decision (seed 003's ``:unexpected``)."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class InvalidDecision(DecisionError):
    """A decoded decision that does not answer exactly its questions within their schema.

    The message starts ``classifier: invalid decision: `` and names the key as ``"<key>"``.
    """


class InvalidState(ClassifierError, TypeError):
    """A state that is not a string, an object or an array (the wire rejects it with 422);
    nothing was sent."""


class AnswerAccessError(ClassifierError, LookupError):
    """A typed accessor was asked for an absent key, or for an answer of another type."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


class ConfigError(ClassifierError, ValueError):
    """``create_classifier`` options were rejected at construction, not at the first call."""


class StaticMiss(ClassifierError):
    """The static style has no recorded decision for this question set and state.

    ``questions_sha256`` is the digest of the canonical question set; ``state_preview`` a short
    excerpt of the state, so the miss can be reported without dumping a whole ticket.
    """

    def __init__(self, message: str, questions_sha256: str, state_preview: str) -> None:
        super().__init__(message)
        self.questions_sha256 = questions_sha256
        self.state_preview = state_preview


class ClassifierUnsupported(ClassifierError):
    """A backend cannot serve a feature. Message, exact (seed 004):
    ``classifier: <backend> (<model>) does not support <feature>``."""

    def __init__(self, backend: str, model: str, feature: str) -> None:
        super().__init__(f"classifier: {backend} ({model}) does not support {feature}")
        self.backend = backend
        self.model = model
        self.feature = feature


def unsupported(error: BaseException) -> bool:
    """True when ``error`` is a :class:`ClassifierUnsupported` (seed 004 ``unsupported?``)."""
    return isinstance(error, ClassifierUnsupported)


class TransportError(ClassifierError):
    """The request got no HTTP answer. ``kind`` is one of ``timeout``, ``connection refused``,
    ``connection reset``, ``network error``, ``protocol error``."""

    def __init__(self, message: str, kind: str, endpoint: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.kind = kind
        self.endpoint = endpoint
        self.attempts = attempts


class HTTPStatusError(ClassifierError):
    """A non-2xx HTTP answer, as typed fields rather than a sentence to parse.

    ``body`` is the whole response body with account identifiers redacted, and empty for 401/403
    (an auth failure body routinely echoes the credential). ``retry_after`` is the raw
    ``Retry-After`` header value, verbatim, or ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        endpoint: str,
        request_id: str | None = None,
        body: str = "",
        retry_after: str | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.endpoint = endpoint
        self.request_id = request_id
        self.body = body
        self.retry_after = retry_after
        self.attempts = attempts


class BatchError(ClassifierError):
    """``evaluate_batch`` failed closed. ``index`` is the LOWEST failing state's index;
    ``cause`` is that state's error. No decisions are returned."""

    def __init__(self, message: str, index: int, cause: ClassifierError) -> None:
        super().__init__(message)
        self.index = index
        self.cause = cause
