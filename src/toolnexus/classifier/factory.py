"""``create_classifier`` and ``static_classifier``: building a :class:`~.classifier.Classifier`.

``create_classifier``'s keyword-only signature IS ``options.ClassifierOptions``'s (one option
list; mypy checks callers against it, editors show it), and its docstring documents every
option (a test keeps the two equal). Every option is checked here, when the classifier is
built, never at the first call.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ParamSpec

from ..config.options import ClassifierOptions, RecordedDecision, option_names
from ..core import ConfigError
from .client import Classifier

__all__ = ["create_classifier", "static_classifier"]

P = ParamSpec("P")


_OPTION_NAMES = frozenset(option_names())


def _takes_options(
    options: Callable[P, ClassifierOptions],
) -> Callable[[Callable[[ClassifierOptions], Classifier]], Callable[P, Classifier]]:
    """``create_classifier``'s signature IS ``ClassifierOptions``'s: keyword-only, typed, one
    list (mypy checks callers against it; ``inspect.signature`` and editors show it). The
    wrapper only turns an unknown option into a ConfigError naming the known ones."""

    def decorate(build: Callable[[ClassifierOptions], Classifier]) -> Callable[P, Classifier]:
        @functools.wraps(build)
        def create(*args: P.args, **kwargs: P.kwargs) -> Classifier:
            if args:
                raise ConfigError("classifier: create_classifier takes keyword options only")
            unknown = sorted(set(kwargs) - _OPTION_NAMES)
            if unknown:
                raise ConfigError(
                    f"classifier: unknown option {unknown[0]!r}; known options: "
                    + ", ".join(sorted(_OPTION_NAMES))
                )
            return build(options(*args, **kwargs))

        signature = inspect.signature(options)
        create.__dict__["__signature__"] = signature.replace(return_annotation="Classifier")
        return create

    return decorate


@_takes_options(ClassifierOptions)
def create_classifier(options: ClassifierOptions) -> Classifier:
    """Build a classifier. Every option is keyword-only and mirrors seed 004's
    ``create-classifier``; an unknown option, an unknown style, a value of the wrong kind and a
    style missing its required option are rejected HERE rather than at the first call.

    Style:

    - ``style``: "systemone" (default, the System One wire) | "llm" (deprecated, kept working) |
      "custom" | "static".
    - ``backend``: a row of ``BACKENDS``, "typesafe" (default) | "openrouter" | "cloudflare" |
      "vercel" | "custom"; it presets ``base_url`` + ``model`` + ``api_key_env`` as a unit, and
      an explicit option still wins. "custom" requires ``base_url`` and ``supports``.
    - ``supports``: ``{"images": bool}``, overriding the backend row's image column.

    Endpoint and credential:

    - ``base_url``: default the backend row's (``https://api.typesafe.ai/v1``). For the typesafe
      backend, ``$TYPESAFE_BASE_URL`` (the official SDK's variable: a host root, to which
      ``/v1`` is appended, as the SDK does, unless it already ends in ``/v1``) is used when no
      ``base_url`` is given. ``${NAME}`` expands at call time; errors name it unexpanded.
    - ``model``: default "jev-latest" (the floating alias: pin it once thresholds are tuned).
    - ``api_key_env``: the NAME of the environment variable holding the key, never a value; read
      at call time and never logged. Default "TYPESAFE_API_KEY".
    - ``headers``: extra request headers; values expand ``${NAME}`` at call time, never logged.

    Transport (the seed names keep working; they become one ``RetryPolicy`` and one
    ``Timeout``, which the style and the transport receive unchanged):

    - ``timeout``: seconds ONE request may take (a number or a ``Timeout``), default 10;
      ``timeout_ms``: the same bound in milliseconds, seed 004's spelling (give one of the two).
    - ``retries``: the transient-failure budget, default 2; 0 means exactly one attempt.
    - ``retry_base_ms``: the backoff base, default 500: the wait is ``base * 2**attempt`` ms
      with no jitter, and a ``Retry-After`` in delay-seconds form wins.
    - ``retryable_statuses``: extra statuses ADDED to 408/429/500/502/503/504/529 (it can only
      widen); network errors are always retryable.
    - ``on_error``: ``on_error(ErrorInfo) -> "retry" | "fail"``, run on every failed attempt,
      with the final say (still bounded by ``retries``).
    - ``transport``: an httpx async transport (``httpx.MockTransport`` in tests) instead of the
      default aiohttp pool; ``http_client``: a ready ``httpx.AsyncClient`` the host closes.

    Body and observation:

    - ``request_params``: extra top-level body keys, shallow-merged after the classifier's own;
      a param wins on collision. ``body_transform``: runs last on the assembled body; its
      return value is sent.
    - ``on_metric``: the metric sink, "classifier.evaluate" events and the degenerate-criteria
      "classifier.warning"; a sink that raises is ignored.
    - ``cache``: opt-in, any object with ``get(key) -> str | None`` and ``set(key, value)``;
      systemone style only (see ``memory_cache``, ``SqliteCache``).
    - ``image_limits``: the image limits checked before any request (an ``ImageLimits`` or a
      mapping of its fields); default seed 004's byte limits.
    - ``telemetry``: OpenTelemetry spans and metrics (the ``otel`` extra, ``telemetry.py``):
      None (default) records when the host already imported OpenTelemetry or set ``OTEL_*``
      exporters with the SDK installed; True / False switch it on / off; or a ready
      ``Telemetry`` on the host's own providers. ``on_metric`` events are unchanged by it.

    Per style:

    - ``evaluate`` (style "custom", required): ``(state, questions) -> Decision | body``, sync
      or async; a sync one runs on a thread pool sized to the batch's concurrency. Every wire
      option is ignored.
    - ``decisions`` (style "static", required): ``RecordedDecision``s, or mappings with
      ``state``, ``questions`` and ``response`` (or the ``answers`` shorthand).
    - ``client``, ``llm_base_url``, ``llm_model``, ``llm_api_key_env`` (style "llm"): a ready
      chat client, or the chat endpoint (default https://api.openai.com/v1), its model
      (required without a ``ChatClient``) and the NAME of its key's variable (OPENAI_API_KEY).

    Recalibration (issue 24):

    - ``calibration``: the path of a file ``toolnexus report --fit-calibration`` wrote; read
      here. Each decision then carries ``recalibrated`` answers beside the wire's (never
      changed) and ``calibration_sha256``; a map fitted for another question set, model, style
      or pack size is refused with one line naming both.
    """
    return Classifier(options)


def static_classifier(
    decisions: Iterable[RecordedDecision | Mapping[str, Any]], **options: Any
) -> Classifier:
    """A static classifier from recorded decisions in ONE call: what a hermetic test wants.
    Entries carry ``response`` or the ``answers`` shorthand; ``options`` merge in (e.g. model)."""
    return create_classifier(style="static", decisions=list(decisions), **options)
