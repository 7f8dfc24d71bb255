"""What :func:`packed.evaluate_pack` reports, and how it reads a packed request that failed.

``PackOutcome`` is one result per state plus the ``RequestFacts`` of every request made (or
split before sending). A failed request is read three ways (the ``packed`` module docstring says
what each leads to): whether it reached the server and may be billed; whether a smaller pack
may pass (a 413, or the API's context-length 400); whether some one state of the pack may cause
it (a 400 or 422 about the request's own body, not a systematic ``api_usage_error``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core import (
    ClassifierError,
    ClassifierUsage,
    Decision,
    DecisionError,
    HTTPStatusError,
    TransportError,
)
from ..scheduler import OutcomeKind, TokenEstimate, error_type, outcome_of

__all__ = [
    "CONTEXT_ERROR_TYPE",
    "PackOutcome",
    "RequestFacts",
    "context_error",
    "one_states_error",
    "reached_server",
]

#: The ``error_type`` of the API's 400 for a request past the context (system-one-wire.md).
CONTEXT_ERROR_TYPE = "max_tokens_exceeded"


@dataclass(frozen=True)
class RequestFacts:
    """One request :func:`evaluate_pack` made (or would have made: ``sent`` False for a pack
    over a limit that was split before sending).

    ``states`` are positions in the states given; ``estimate`` the scheduler's estimate of its
    input tokens (None for a body under ``LIMIT_SAFE_BYTES`` without images: the scheduler
    makes it only if a member asks); ``usage`` what the server charged (zero when nothing came
    back); ``packed`` whether it asked several states at once; ``error`` how it failed, or
    None."""

    states: tuple[int, ...]
    estimate: TokenEstimate | None
    usage: ClassifierUsage = field(default_factory=ClassifierUsage)
    sent: bool = True
    packed: bool = False
    error: ClassifierError | None = None


@dataclass(frozen=True)
class PackOutcome:
    """One result per state, in order (a Decision, or the error that state ended with), and
    the requests that produced them."""

    results: list[Decision | ClassifierError]
    requests: list[RequestFacts]


def reached_server(error: ClassifierError) -> bool:
    """Whether a request that ended in ``error`` reached the server (and may be billed)."""
    return isinstance(error, HTTPStatusError | TransportError | DecisionError)


def context_error(error: ClassifierError) -> bool:
    """A 413, or the API's 400 for a request past the context: a smaller pack may pass."""
    if not isinstance(error, HTTPStatusError):
        return False
    return error.status == 413 or (
        error.status == 400 and error_type(error.body) == CONTEXT_ERROR_TYPE
    )


def one_states_error(error: ClassifierError) -> bool:
    """A 400 or 422 about the request's own body (a content policy, a validation error of one
    state): some state of the pack may cause it, so the halves are asked apart. Not a
    systematic one (the API's ``api_usage_error`` for an unknown model would fail every half
    the same way, and stops the run instead)."""
    return (
        isinstance(error, HTTPStatusError)
        and error.status in (400, 422)
        and outcome_of(error).kind is OutcomeKind.FAILED
    )
