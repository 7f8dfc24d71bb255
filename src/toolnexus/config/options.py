"""The classifier's options: ``ClassifierOptions`` (the one field list, checked when built),
``RecordedDecision``, the callables' types and the styles. The typed values that cross layers
(``RetryPolicy``, ``Timeout``, ``ErrorInfo``) live in ``config/__init__.py``.
(The state check knows about images, so it lives in ``state.py``.)

Low on purpose: it imports only ``config``, ``defaults``, ``envname``, ``errors`` (and ``images``
for its limits), so every other module can import it without forming a cycle
(``tests/house/test_import_graph.py`` checks the module graph).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, TypeAlias

from ..core import DEFAULT_MODEL, DEFAULT_RETRIES, DEFAULT_RETRY_BASE_MS, ENV_NAME, ConfigError
from . import (
    OnError,
    RetryPolicy,
    Timeout,
)

__all__ = [
    "LLM_OPTIONS",
    "STYLES",
    "ClassifierOptions",
    "CustomEvaluate",
    "Metric",
    "OnMetric",
    "RecordedDecision",
    "check_option",
    "option_names",
]

#: The four styles; "systemone" is the default, "static" is what CI runs, "llm" is deprecated.
STYLES = ("systemone", "llm", "custom", "static")
#: The options only the llm style reads (its chat endpoint, model and key).
LLM_OPTIONS = ("llm_base_url", "llm_model", "llm_api_key_env")

Metric: TypeAlias = dict[str, Any]
#: The metric sink: one call per event (``classifier.evaluate``, ``classifier.warning``).
OnMetric: TypeAlias = Callable[[Metric], object]
#: The custom style's function: ``(state, questions) -> Decision | response body``, sync or async.
CustomEvaluate: TypeAlias = Callable[[Any, dict[str, Any]], Any]


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


@dataclass(frozen=True, kw_only=True)
class ClassifierOptions:
    """Every option of seed 004's ``create-classifier``, in Python spelling: the ONE field list.
    ``create_classifier`` takes exactly these keywords (its signature is derived from this class).

    Built, it is checked: a wrong kind of value, an unknown style and a style missing its required
    option are ConfigErrors HERE, never a TypeError at the first request. The seed-named transport
    options become two typed values, once: ``retry_policy`` (a ``RetryPolicy``) and
    ``request_timeout`` (a ``Timeout``); the style and the transport receive those.

    Each option is documented in ``create_classifier``'s docstring (a test keeps it complete).
    Secrets: ``api_key_env`` is the NAME of an environment variable, read at call time and never
    logged; ``headers`` values expand ``${NAME}`` at call time and are never logged either.
    """

    style: str = "systemone"
    backend: str = "typesafe"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    # Header values may hold a literal credential: they never appear in a repr.
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    timeout: float | Timeout | None = None
    timeout_ms: int | None = None
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
    image_limits: Any = None
    cache: Any = None
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key_env: str | None = None
    #: None: on when the host already imported OpenTelemetry or set ``OTEL_*`` exporters with
    #: the SDK installed; True / False: on / off; or a ready ``telemetry.Telemetry``.
    telemetry: Any = None
    calibration: str | None = None

    #: Derived from ``retries``, ``retry_base_ms``, ``retryable_statuses``, ``on_error``.
    retry_policy: RetryPolicy = field(init=False, repr=False, compare=False)
    #: Derived from ``timeout`` / ``timeout_ms``.
    request_timeout: Timeout = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_style(self)
        _check_values(self)
        object.__setattr__(
            self,
            "retry_policy",
            RetryPolicy.of(
                retries=self.retries,
                retry_base_ms=self.retry_base_ms,
                retryable_statuses=self.retryable_statuses,
                on_error=self.on_error,
            ),
        )
        object.__setattr__(self, "request_timeout", Timeout.of(self.timeout, self.timeout_ms))
        _check_hooks(self)

    @property
    def resolved_model(self) -> str:
        if self.style == "llm":
            # The llm style asks its chat endpoint for llm_model: naming "jev-latest" in its
            # metric events and repr would be a lie. "llm" when a ready chat client picks it.
            return self.llm_model or "llm"
        return self.model or DEFAULT_MODEL


def option_names() -> tuple[str, ...]:
    """The options ``create_classifier`` takes, in declaration order: the init fields."""
    return tuple(f.name for f in fields(ClassifierOptions) if f.init)


def _check_style(opts: ClassifierOptions) -> None:
    if opts.style not in STYLES:
        raise ConfigError(
            f"classifier: unknown style {opts.style!r}: use one of {', '.join(STYLES)}"
        )
    if opts.style == "custom" and not callable(opts.evaluate):
        raise ConfigError("classifier: style 'custom' requires evaluate=<callable>")
    if opts.style == "static" and opts.decisions is None:
        raise ConfigError("classifier: style 'static' requires decisions=[RecordedDecision, ...]")


def _check_env_name(name: str, value: Any) -> None:
    """An ``api_key_env`` that is not a variable name is refused WITHOUT quoting it: a key pasted
    there by mistake must not reach a message or a repr."""
    if value is not None and not (isinstance(value, str) and ENV_NAME.fullmatch(value)):
        raise ConfigError(
            f"classifier: {name} takes the NAME of an environment variable (letters, digits "
            "and _, like TYPESAFE_API_KEY); the value given is not one, and is not shown in "
            "case it is a key"
        )


#: The check of each option that is checked on its own, by option name: what building
#: ``ClassifierOptions`` runs on it (the typed values check themselves as they are built).
_OPTION_CHECKS: dict[str, Callable[[Any], object]] = {
    "api_key_env": lambda value: _check_env_name("api_key_env", value),
    "llm_api_key_env": lambda value: _check_env_name("llm_api_key_env", value),
    "timeout": Timeout.of,
    "retries": lambda value: RetryPolicy.of(retries=value),
}


def check_option(name: str, value: Any) -> None:
    """Check ``value`` for the option ``name`` as ``ClassifierOptions`` does when built, raising
    the same :class:`ConfigError`, whose message starts ``classifier: <name> ``: the one check,
    for a caller that reads the option elsewhere first (the CLI's flags, which name the flag
    instead). An option without a check of its own passes."""
    if value is not None and name in _OPTION_CHECKS:
        _OPTION_CHECKS[name](value)


def _check_values(opts: ClassifierOptions) -> None:
    for name in ("api_key_env", "llm_api_key_env"):
        _check_env_name(name, getattr(opts, name))
    for name in ("base_url", "model", "llm_base_url", "llm_model", "calibration"):
        value = getattr(opts, name)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"classifier: {name} must be a string, got {type(value).__name__}")
    for name in ("headers", "supports", "request_params"):
        value = getattr(opts, name)
        if value is not None and not isinstance(value, Mapping):
            raise ConfigError(f"classifier: {name} must be a mapping, got {type(value).__name__}")
    decisions = opts.decisions
    if decisions is not None and (
        isinstance(decisions, str | bytes | Mapping) or not isinstance(decisions, Iterable)
    ):
        raise ConfigError(
            "classifier: decisions must be a list of RecordedDecision (or recorded mappings), "
            f"got {type(decisions).__name__}"
        )


def _check_hooks(opts: ClassifierOptions) -> None:
    from ..core import (
        ImageLimits,  # the pure image module; only its limits are needed here
    )

    ImageLimits.of(opts.image_limits)
    telemetry = opts.telemetry
    if not (telemetry is None or isinstance(telemetry, bool) or hasattr(telemetry, "evaluate")):
        raise ConfigError(
            "classifier: telemetry takes True, False, None or a "
            "toolnexus.evaluate.telemetry.Telemetry"
        )
    if opts.on_metric is not None and not callable(opts.on_metric):
        raise ConfigError("classifier: on_metric must be callable")
    if opts.cache is not None and not (
        callable(getattr(opts.cache, "get", None)) and callable(getattr(opts.cache, "set", None))
    ):
        raise ConfigError("classifier: cache must have get(key) and set(key, value)")
