"""One exception tree: everything toolnexus raises is a :class:`ClassifierError`.

Catch an intermediate base to handle a family: :class:`BackendError` for "the far side failed"
(retry later, degrade), :class:`ConfigError` for "the caller passed something wrong" (fix the
call), :class:`CacheError` for "the cache cannot be read or written" (drop the cache, go live).

::

    ClassifierError                 base; str(e) starts "classifier: " (but ReportError's)
    ├── ConfigError (ValueError)    an option or argument is rejected: create_classifier options,
    │                               an unset ${NAME} in base_url/headers, concurrency < 1, no
    │                               states, a value that is not JSON, a bad cache argument
    ├── QuestionError               a question set breaks a rule before any request
    │                               (limits, empty key, unknown type, chunk size)
    ├── InvalidState (TypeError)    a state that is not a string, an object or an array
    ├── ImageError (ValueError)     an image breaks a rule before any request: not PNG/JPEG,
    │                               unreadable, over a limit, a part that cannot be lifted
    ├── AnswerAccessError           Decision.noul/choice/score/raw on an absent key
    │   (LookupError)               or on an answer of another type
    ├── HookError                   a host hook (body_transform, on_error) raised, or
    │                               answered outside its contract
    ├── StaticMiss                  the static style has no recording for a request
    ├── TapeMiss                    a replaying Tape has no decision for a call name (§8B)
    ├── ClassifierUnsupported       a backend/model cannot serve a feature
    ├── BackendError                the far side failed: no answer, a bad answer, or no decision
    │   ├── TransportError          the request never got an HTTP answer
    │   │                           (timeout, connection refused, reset)
    │   ├── HTTPStatusError         a non-2xx answer: status, request_id, body
    │   ├── DecisionError           a response body cannot be decoded as a Decision
    │   │   └── InvalidDecision     decoded, but fails validate_decision
    │   └── HostBackendError        the host's own decision source failed: the custom style's
    │                               evaluate, or the llm style's chat client
    ├── CacheError                  a cache cannot be opened, read or written
    ├── ReportError                 report/ and records/ cannot read a run, labels or records
    │   │                           file, or draw a chart; str(e) is the located line itself
    │   │                           (``path:line: reason``), no "classifier: " prefix
    │   ├── ReportInputError        a run or labels file (``report.runs``; LocatedError)
    │   ├── LabelError              a label that does not fit its question (``report``)
    │   ├── RecordError             a record field batch never writes (``report``;
    │   │   (ValueError)            the caller adds file, line and key)
    │   ├── RecordDecodeError       a line or cell that is not a batch value (``records``)
    │   │   (ValueError)
    │   └── MissingChartLibrary     ``--format html`` without matplotlib (the html extra)
    ├── BatchError                  evaluate_batch failed closed: index of the lowest failing
    │                               state, and that state's error as ``cause``
    ├── RunStopped                  a batch stopped scheduling (``kind``: systematic, a failure
    │                               every request would repeat; budget, a spend cap; input,
    │                               a --state-field no record has): what was sent finished
    └── RunError                    ``toolnexus.run`` refuses a run before or while it reads:
                                    an option, an input, an --output it cannot continue;
                                    str(e) is the one line itself (no "classifier: " prefix)

The report family is defined where it is raised (``report/``, ``records/``) on the
:class:`ReportError` base; the CLI's one boundary (``cli/errors.handle_error``) prints any of them
as its one line, exit 2, like every other input error.

Third-party exceptions (httpx, aiohttp, sqlite3, json) are translated at one boundary each
(``transport/`` for HTTP, ``decision.py`` for decoding, ``cache/`` for SQLite) and never
escape the public API. No message, field or repr of these classes ever carries a credential or
an expanded header.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeAlias

__all__ = [
    "AnswerAccessError",
    "BackendError",
    "BatchError",
    "CacheError",
    "ClassifierError",
    "ClassifierUnsupported",
    "ConfigError",
    "DecisionError",
    "HTTPStatusError",
    "HookError",
    "HostBackendError",
    "ImageError",
    "InvalidDecision",
    "InvalidState",
    "QuestionError",
    "ReportError",
    "RunError",
    "RunStopped",
    "StaticMiss",
    "TapeMiss",
    "TransportError",
    "unsupported",
]

PREFIX = "classifier: "


def _restore(cls: type[BaseException], args: tuple[Any, ...], fields: dict[str, Any]) -> Any:
    """Rebuild a pickled or copied error without calling its ``__init__``."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(fields)
    return error


class ClassifierError(Exception):
    """Base of everything toolnexus raises. The message starts ``classifier: `` (but a
    :class:`ReportError`'s, which starts with the file it names)."""

    #: Whether the message is given the ``classifier: `` prefix.
    _prefixed: ClassVar[bool] = True

    def __init__(self, message: str) -> None:
        if self._prefixed and not message.startswith(PREFIX):
            message = PREFIX + message
        super().__init__(message)

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> tuple[Any, ...]:
        # The subclasses take typed keyword fields that ``args`` does not hold, so the default
        # ``cls(*args)`` cannot rebuild them: restore args and fields directly instead. Lets an
        # error travel inside a StateResult through pickle, deepcopy and process pools.
        return (_restore, (type(self), self.args, dict(self.__dict__)))

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


class ReportError(ClassifierError):
    """``report`` or the record codecs cannot read what they were given (a run, labels or
    records file) or draw what they were asked. The message is the one line a user sees,
    ``path:line: reason`` where there is a place, and keeps no ``classifier: `` prefix: it
    was that line before these errors joined the tree (issue 30 item 5)."""

    _prefixed = False


class BackendError(ClassifierError):
    """The far side failed: no HTTP answer, a non-2xx answer, a body that is not a valid
    decision, or the host's own decision source raising. Catch this to retry later or degrade;
    every other library error means the call itself must change."""


class DecisionError(BackendError):
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


class ImageError(ClassifierError, ValueError):
    """An image in a state breaks a rule; nothing was sent.

    ``asset`` names the image (its alias, path, placeholder, or where in the state its part
    sits); ``limit`` names the rule: ``image_max_bytes``, ``request_image_max_bytes``,
    ``image_min_side``, ``image_max_side``, ``image_size``, ``format``, ``read``, ``alias`` or
    ``mention``.
    """

    def __init__(self, message: str, *, asset: str, limit: str) -> None:
        super().__init__(message)
        self.asset = asset
        self.limit = limit


class AnswerAccessError(ClassifierError, LookupError):
    """A typed accessor was asked for an absent key, or for an answer of another type."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


class ConfigError(ClassifierError, ValueError):
    """An option or argument was rejected: ``create_classifier`` options (at construction, not
    at the first call), a ``${NAME}`` in ``base_url`` or a header that is unset when a request
    is built, a batch concurrency below 1 or no states, a value that is not JSON, a bad cache
    argument. Nothing was sent."""


class HookError(ClassifierError):
    """A host hook (``body_transform``, ``on_error``) raised, or returned a value outside its
    contract. The message names the hook and the exception TYPE only (a hook's own message may
    quote headers)."""


class HostBackendError(BackendError):
    """The host's own decision source failed: the custom style's ``evaluate`` or the llm
    style's chat client raised, or returned something that is not a decision."""


class CacheError(ClassifierError):
    """A cache cannot be opened, read or written (a SQLite or OS error, a closed cache, or a
    host cache whose ``get``/``set`` raised). ``path`` is the cache file, when there is one."""

    def __init__(self, message: str, path: str | None = None, *, damaged: bool = False) -> None:
        super().__init__(message)
        self.path = path
        #: The file is not a readable cache (not SQLite, corrupt, another schema): deleting it
        #: is the fix, and ``toolnexus cache clear`` does that.
        self.damaged = damaged


class StaticMiss(ClassifierError):
    """The static style has no recorded decision for this question set and state.

    ``questions_sha256`` is the digest of the canonical question set; ``state_preview`` a short
    excerpt of the state, so the miss can be reported without dumping a whole ticket.
    """

    def __init__(self, message: str, questions_sha256: str, state_preview: str) -> None:
        super().__init__(message)
        self.questions_sha256 = questions_sha256
        self.state_preview = state_preview


class TapeMiss(ClassifierError):
    """A replaying ``Tape`` has no decision for this call name; nothing was sent. §8B's
    message, after the house prefix: ``classifier: tape: no recorded decision for call
    "<name>"`` (the name verbatim between double quotes). ``call`` is the name."""

    def __init__(self, call: str) -> None:
        super().__init__(f'classifier: tape: no recorded decision for call "{call}"')
        self.call = call


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


class TransportError(BackendError):
    """The request got no HTTP answer. ``kind`` is one of ``timeout``, ``connection refused``,
    ``connection reset``, ``network error``, ``protocol error``."""

    def __init__(self, message: str, kind: str, endpoint: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.kind = kind
        self.endpoint = endpoint
        self.attempts = attempts


class HTTPStatusError(BackendError):
    """A non-2xx HTTP answer, as typed fields rather than a sentence to parse.

    ``body`` is the whole response body with account identifiers redacted, and empty for 401/403
    (an auth failure body routinely echoes the credential). ``retry_after`` is the raw
    ``Retry-After`` header value, verbatim, or ``None``; ``retry_after_ms`` the raw
    ``retry-after-ms`` (the official SDK's millisecond form, which wins over it), or ``None``.
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
        retry_after_ms: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.endpoint = endpoint
        self.request_id = request_id
        self.body = body
        self.retry_after = retry_after
        self.attempts = attempts
        self.retry_after_ms = retry_after_ms


class BatchError(ClassifierError):
    """``evaluate_batch`` failed closed. ``index`` is the LOWEST failing state's index;
    ``cause`` is that state's error. No decisions are returned."""

    def __init__(self, message: str, index: int, cause: ClassifierError) -> None:
        super().__init__(message)
        self.index = index
        self.cause = cause


#: Why a run stopped scheduling: a failure every request would repeat (fail fast), a spend cap
#: (issue 23), or an input that cannot be what the user meant (a ``--state-field`` typo).
StopKind: TypeAlias = Literal["systematic", "budget", "input"]


class RunStopped(ClassifierError):
    """A batch stopped scheduling: nothing more is admitted; what was admitted finishes.

    ``kind`` says why (``systematic``, ``budget``, ``input``), for the CLI's exit code; the
    message is the one line to print, naming the cause and what to do."""

    def __init__(self, message: str, kind: StopKind) -> None:
        super().__init__(message)
        self.kind = kind


class RunError(ClassifierError):
    """``toolnexus.run`` (the batch run) refuses what it was asked: an option, an input it
    cannot read, an ``output`` it cannot continue. The message is the one line a user sees,
    named by the flag a CLI user gave (``--output out.jsonl: ...``); ``exit_code`` is the exit
    code ``toolnexus batch`` gives it (2, or 5 for a spend cap refused before the first
    request). No ``classifier: `` prefix: it was the CLI's one line before the run became a
    library (issue 30 item 1), and the CLI prints it as it was."""

    _prefixed = False

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code
