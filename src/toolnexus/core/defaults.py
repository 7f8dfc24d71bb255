"""Every default, defined once, and the model precedence rule, implemented once.

Imports nothing from the package, so any module (the library, ``cli/``, benches) can import it
without pulling anything else in. Seed 004 names the values; every other module imports them
from here rather than restating a literal.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = [
    "BASE_URL_ENV",
    "DEFAULT_API_KEY_ENV",
    "DEFAULT_BASE_URL",
    "DEFAULT_BATCH_CONCURRENCY",
    "DEFAULT_BATCH_PATIENCE",
    "DEFAULT_MODEL",
    "DEFAULT_RETRIES",
    "DEFAULT_RETRYABLE_STATUSES",
    "DEFAULT_RETRY_BASE_MS",
    "DEFAULT_SERVE_FAULTS",
    "DEFAULT_SERVE_MAX_BODY_BYTES",
    "DEFAULT_SERVE_RETRY_AFTER_MS",
    "DEFAULT_SERVE_STALL_SECONDS",
    "DEFAULT_TIMEOUT",
    "MODEL_ENV",
    "resolve_model",
]

#: The System One endpoint base.
DEFAULT_BASE_URL = "https://api.typesafe.ai/v1"
#: The official SDK's variable for the endpoint: a host ROOT (the SDK appends ``/v1/systemone``),
#: honoured by the typesafe backend when no ``base_url`` is given.
BASE_URL_ENV = "TYPESAFE_BASE_URL"
#: The floating alias. PIN IT (e.g. "jev-1.13.0") once thresholds are tuned.
DEFAULT_MODEL = "jev-latest"
#: The NAME of the environment variable holding the credential, never a value.
DEFAULT_API_KEY_ENV = "TYPESAFE_API_KEY"
#: Bounds ONE request, in seconds. A classifier has no loop to bound.
DEFAULT_TIMEOUT = 10.0
#: Transient-failure budget: ``retries=0`` means exactly one attempt.
DEFAULT_RETRIES = 2
#: Base of the retry backoff: ``base * 2**attempt`` ms, no jitter.
DEFAULT_RETRY_BASE_MS = 500
#: Retryable by default (seed 004: SPEC-8B Appendix A's set plus 408). Exhaustive, not "5xx".
DEFAULT_RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
#: At most this many evaluate calls in flight in one batch.
DEFAULT_BATCH_CONCURRENCY = 16
#: Seconds a batch rides out a storm of 429/503/529 without one success (issue 32).
DEFAULT_BATCH_PATIENCE = 60.0
#: The environment variable that names the model when no flag does (the CLI's).
MODEL_ENV = "TOOLNEXUS_MODEL"


# --- toolnexus serve: the library's serve()/ServeOptions and the CLI's flags share these --------
#: The HTTP faults ``--fault-rate`` draws from (``reset`` and ``stall`` only when named).
DEFAULT_SERVE_FAULTS = "429,500,502,503,504,529"
#: How long a 429/503 asks the client to wait, unless ``--retry-after-ms`` says otherwise.
DEFAULT_SERVE_RETRY_AFTER_MS = 1000
#: How long a stall fault sends nothing: past the official SDK's and toolnexus's 10 s timeouts.
DEFAULT_SERVE_STALL_SECONDS = 15.0
#: The largest request body (decompressed) ``serve`` accepts: 32 MiB of images per request
#: (seed 004) plus room for the JSON around them.
DEFAULT_SERVE_MAX_BODY_BYTES = 48 * 1024 * 1024


def resolve_model(
    flag: str | None,
    file_model: str | None,
    default: str | None = DEFAULT_MODEL,
    environ: Mapping[str, str] | None = None,
) -> str | None:
    """The model to request: ``flag`` > ``$TOOLNEXUS_MODEL`` > the question file's ``model`` >
    ``default`` (issue 4). An empty value counts as absent. ``default=None`` leaves the choice to
    the backend row (an openrouter row names its own model)."""
    env = os.environ if environ is None else environ
    for candidate in (flag, env.get(MODEL_ENV), file_model):
        if candidate:
            return candidate
    return default
