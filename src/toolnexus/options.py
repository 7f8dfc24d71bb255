"""Small things shared by the classifier, its styles, batches and the transport: the option
types (``ClassifierOptions``, ``RecordedDecision``, ``ErrorInfo``, the callables' types) and the
styles. (The state check knows about images, so it lives in ``state.py``.)

Small and low on purpose: it imports only ``defaults`` from the package, which imports nothing,
so every other module can import it without forming a cycle (``tests/test_import_graph.py``
checks the module graph).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from .defaults import DEFAULT_MODEL, DEFAULT_RETRIES, DEFAULT_RETRY_BASE_MS, DEFAULT_TIMEOUT

__all__ = [
    "STYLES",
    "ClassifierOptions",
    "CustomEvaluate",
    "ErrorInfo",
    "FailureKind",
    "Metric",
    "OnError",
    "OnMetric",
    "RecordedDecision",
    "TransportKind",
    "Verdict",
]

#: The four styles; "systemone" is the default, "static" is what CI runs, "llm" is deprecated.
STYLES = ("systemone", "llm", "custom", "static")

Metric: TypeAlias = dict[str, Any]
#: The metric sink: one call per event (``classifier.evaluate``, ``classifier.warning``).
OnMetric: TypeAlias = Callable[[Metric], object]
#: The custom style's function: ``(state, questions) -> Decision | response body``, sync or async.
CustomEvaluate: TypeAlias = Callable[[Any, dict[str, Any]], Any]

#: What ``on_error`` answers: retry (still bounded by ``retries``) or fail now.
Verdict: TypeAlias = Literal["retry", "fail"]

#: Why an attempt got no HTTP answer (``TransportError.kind``).
TransportKind: TypeAlias = Literal[
    "timeout",
    "connection refused",
    "connection reset",
    "network error",
    "protocol error",
]
#: Why an attempt failed: a non-2xx HTTP status, or a transport failure.
FailureKind: TypeAlias = Literal["http status", TransportKind]


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """One failed attempt, as ``on_error`` sees it. Typed and frozen: a hook reads fields, it
    cannot change what the retry loop does next except through its verdict.

    ``attempt`` is zero-based (0 = the first request). ``retryable`` is the default verdict: the
    status is in the retryable set (``DEFAULT_RETRYABLE_STATUSES`` plus ``retryable_statuses``),
    or the failure is a network error. ``wait`` is the seconds the loop sleeps before the next
    attempt if the verdict is "retry" (a numeric ``Retry-After`` wins, else the backoff).
    ``status``, ``retry_after`` (the raw header, verbatim) and ``request_id`` are ``None`` when
    there was no HTTP answer.
    """

    attempt: int
    kind: FailureKind
    retryable: bool
    wait: float
    status: int | None = None
    retry_after: str | None = None
    request_id: str | None = None


#: ``on_error(info) -> "retry" | "fail"``: runs on EVERY failed attempt and has the final say.
OnError: TypeAlias = Callable[[ErrorInfo], Verdict]


@dataclass(frozen=True)
class RecordedDecision:
    """One entry of the static corpus: a state, its question set, and the response body the
    backend gave (``response``: a parsed object, or bytes/str of JSON). ``answers`` is the
    shorthand for a body that is only its answers.

    Images: ``state`` may hold ``Image`` objects or image parts (lifted as the systemone style
    lifts them), or be the state AS SENT with its placeholders plus ``assets``, the map
    ``{placeholder: {"type": "image", "sha256": <hex>}}`` that a recording file stores instead
    of image bytes. Either way the entry matches on the images' sha256, never on their bytes."""

    state: Any
    questions: Mapping[str, Any]
    response: Any = None
    answers: Mapping[str, Any] | None = None
    assets: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ClassifierOptions:
    """Every option of seed 004's ``create-classifier``, in Python spelling.

    Secrets: ``api_key_env`` is the NAME of an environment variable, read at call time and never
    logged; ``headers`` values expand ``${NAME}`` at call time and are never logged either.
    ``retries=0`` means exactly one attempt, no retry at all; unset means 2.
    """

    style: str = "systemone"
    backend: str = "typesafe"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    # Header values may hold a literal credential: they never appear in a repr.
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT
    transport: Any = None
    http_client: Any = None
    retries: int = DEFAULT_RETRIES
    retry_base_ms: int = DEFAULT_RETRY_BASE_MS
    retryable_statuses: Sequence[int] = ()
    on_error: OnError | None = None
    request_params: Mapping[str, Any] | None = None
    body_transform: Callable[[dict[str, Any]], Any] | None = None
    on_metric: OnMetric | None = None
    client: Any = None
    evaluate: CustomEvaluate | None = None
    decisions: Sequence[RecordedDecision | Mapping[str, Any]] | None = None
    supports: Mapping[str, bool] | None = None
    #: The image limits checked before any request (``ImageLimits`` or a mapping of its fields);
    #: unset means seed 004's byte limits and the proposed side limits.
    image_limits: Any = None
    cache: Any = None
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key_env: str | None = None

    @property
    def resolved_model(self) -> str:
        if self.style == "llm":
            # The llm style asks its chat endpoint for llm_model: naming "jev-latest" in its
            # metric events and repr would be a lie. "llm" when a ready chat client picks it.
            return self.llm_model or "llm"
        return self.model or DEFAULT_MODEL
