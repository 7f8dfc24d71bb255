"""Typed values that cross layers, each defined once and passed as objects (httpx ``_config.py``
style): :class:`Timeout`, :class:`RetryPolicy` and :class:`BatchOptions`, plus the types the
retry loop shows a hook (:class:`ErrorInfo`, ``Verdict``, ``OnError``).

A value is checked when it is built, so everything that receives one trusts it:
``ClassifierOptions`` builds a ``RetryPolicy`` and a ``Timeout`` from the seed-named options
(``retries``, ``retry_base_ms``, ``retryable_statuses``, ``on_error``, ``timeout`` /
``timeout_ms``), converting milliseconds to seconds there and nowhere else, and the style and the
transport receive those two objects unchanged. Every batch entry point builds a ``BatchOptions``.

Imports only ``defaults`` and ``errors`` (the admission protocol only for type checking), so every
other module can import it without a cycle. The one rule for ``pack=`` (:func:`check_pack`) lives
here, not in ``packplan``, so that config never imports the batch rank (issue 30 item 3).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from ..core import (
    DEFAULT_BATCH_CONCURRENCY,
    DEFAULT_BATCH_PATIENCE,
    DEFAULT_RETRIES,
    DEFAULT_RETRY_BASE_MS,
    DEFAULT_RETRYABLE_STATUSES,
    DEFAULT_TIMEOUT,
    ConfigError,
    HookError,
)

if TYPE_CHECKING:
    from ..core import Surface
    from ..scheduler import Admission

__all__ = [
    "BACKENDS",
    "BACKEND_NAMES",
    "IMAGES_HEADER",
    "MAX_CONCURRENCY",
    "MAX_TIMEOUT",
    "MIN_CONCURRENCY",
    "PACK_AUTO",
    "Backend",
    "BatchOptions",
    "Budget",
    "ErrorInfo",
    "FailureKind",
    "OnError",
    "PackSize",
    "ResolvedBackend",
    "RetryPolicy",
    "Timeout",
    "TransportKind",
    "Verdict",
    "budget_of",
    "check_pack",
    "resolve_backend",
]

#: ``pack="auto"``: the largest pack under the limits, up to ``packing.PACK_CAP``.
PACK_AUTO: Literal["auto"] = "auto"
#: What ``pack=`` takes.
PackSize: TypeAlias = int | Literal["auto"]


def check_pack(pack: object) -> PackSize:
    """``pack`` as given when it is a whole number >= 1 or ``"auto"``; a ConfigError else."""
    if pack == PACK_AUTO:
        return PACK_AUTO
    if isinstance(pack, bool) or not isinstance(pack, int) or pack < 1:
        raise ConfigError(f"classifier: pack takes a whole number >= 1 or 'auto', got {pack!r}")
    return pack


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

#: A timeout past a day is a typo (or ``inf``/``nan``), not a plan: the event loop's timers
#: overflow on inf and nan compares false with everything.
MAX_TIMEOUT = 86_400.0


def _shown(value: object) -> str:
    """``repr(value)`` for a message, cut to 60 characters; an integer too long to print whole
    (Python refuses past 4,300 digits) is named by its size instead."""
    if isinstance(value, int) and value.bit_length() > 200:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class Timeout:
    """How long ONE request may take, in seconds (seed 004 ``timeout-ms``: "per REQUEST, not per
    run"). The adapters bound connecting and each read by it, the retry loop the whole attempt."""

    seconds: float = DEFAULT_TIMEOUT

    def __post_init__(self) -> None:
        s = self.seconds
        if isinstance(s, bool) or not isinstance(s, int | float) or not 0 < s < MAX_TIMEOUT:
            raise ConfigError(
                "classifier: timeout must be a number of seconds above 0 and below "
                f"{MAX_TIMEOUT:g}, got {_shown(s)}"
            )
        object.__setattr__(self, "seconds", float(s))

    @classmethod
    def of(cls, timeout: float | Timeout | None = None, timeout_ms: int | None = None) -> Timeout:
        """The value for ``timeout`` (seconds, or a ``Timeout``) or seed 004's ``timeout_ms``
        (milliseconds, converted HERE); neither means the default, both is an error."""
        if timeout_ms is not None:
            if timeout is not None:
                raise ConfigError("classifier: give timeout= (seconds) or timeout_ms=, not both")
            # Bounded BEFORE dividing: a 400-digit int overflows a float (OverflowError).
            if not _is_int(timeout_ms) or not 0 < timeout_ms < MAX_TIMEOUT * 1000:
                raise ConfigError(
                    "classifier: timeout_ms must be a whole number of milliseconds above 0 and "
                    f"below {MAX_TIMEOUT * 1000:.0f}, got {_shown(timeout_ms)}"
                )
            return cls(timeout_ms / 1000)
        if isinstance(timeout, Timeout):
            return timeout
        return cls() if timeout is None else cls(timeout)


def _statuses(statuses: object) -> frozenset[int]:
    """``retryable_statuses`` as a set, every member an HTTP status, or a ConfigError."""
    if isinstance(statuses, str | bytes) or not isinstance(statuses, Iterable):
        raise ConfigError(
            "classifier: retryable_statuses must be a list of HTTP statuses, got "
            f"{type(statuses).__name__}"
        )
    found = list(statuses)
    for s in found:
        if not _is_int(s) or not 100 <= s <= 599:
            raise ConfigError(
                f"classifier: retryable_statuses holds {_shown(s)}, not an HTTP status"
            )
    return frozenset(found)


_DIGITS = re.compile(r"[0-9]+", re.ASCII)
_RETRY_AFTER_MAX = 2147483647


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When and how long the transport retries (seed 004 ``retries``, ``retry-base-ms``,
    ``retryable-statuses``, ``on-error``).

    ``retries`` is the transient-failure budget (0 = exactly one attempt). ``base`` is the
    backoff base in SECONDS: the wait before retry ``n + 1`` is ``base * 2**n``, no jitter, and
    a ``Retry-After`` in delay-seconds form wins; a base of 0 means the default.
    ``retryable_statuses`` WIDENS the default set (it can never remove 429). ``on_error`` runs on
    every failed attempt and has the final say.
    """

    retries: int = DEFAULT_RETRIES
    base: float = DEFAULT_RETRY_BASE_MS / 1000
    retryable_statuses: frozenset[int] = frozenset()
    on_error: OnError | None = None

    def __post_init__(self) -> None:
        if not _is_int(self.retries) or self.retries < 0:
            raise ConfigError(
                f"classifier: retries must be a whole number >= 0, got {_shown(self.retries)}"
            )
        b = self.base
        if isinstance(b, bool) or not isinstance(b, int | float) or not 0 <= b < MAX_TIMEOUT:
            raise ConfigError(f"classifier: the retry base must be seconds >= 0, got {_shown(b)}")
        object.__setattr__(self, "retryable_statuses", _statuses(self.retryable_statuses))
        if self.on_error is not None and not callable(self.on_error):
            raise ConfigError("classifier: on_error must be callable")

    @classmethod
    def of(
        cls,
        *,
        retries: int = DEFAULT_RETRIES,
        retry_base_ms: int | None = DEFAULT_RETRY_BASE_MS,
        retryable_statuses: Iterable[int] = (),
        on_error: OnError | None = None,
    ) -> RetryPolicy:
        """The policy for the seed-named options: ``retry_base_ms`` is converted HERE, once."""
        if retry_base_ms is None:
            retry_base_ms = DEFAULT_RETRY_BASE_MS
        # Bounded BEFORE dividing: a 400-digit int overflows a float (OverflowError).
        if not _is_int(retry_base_ms) or not 0 <= retry_base_ms < MAX_TIMEOUT * 1000:
            raise ConfigError(
                "classifier: retry_base_ms must be a whole number of milliseconds >= 0 and "
                f"below {MAX_TIMEOUT * 1000:.0f}, got {_shown(retry_base_ms)}"
            )
        return cls(retries, retry_base_ms / 1000, _statuses(retryable_statuses), on_error)

    @property
    def retryable(self) -> frozenset[int]:
        """Every status retried by default: ``DEFAULT_RETRYABLE_STATUSES`` plus the extra ones."""
        return DEFAULT_RETRYABLE_STATUSES | self.retryable_statuses

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` zero-based).

        ``Retry-After`` wins only in delay-seconds form: ASCII digits, 0..2147483647, including 0.
        Every other form falls back to ``base * 2**attempt``, never raises, never goes negative.
        """
        if retry_after is not None:
            value = retry_after.strip(" \t")
            if _DIGITS.fullmatch(value) and int(value) <= _RETRY_AFTER_MAX:
                return float(int(value))
        base_ms = round(self.base * 1000) if self.base > 0 else DEFAULT_RETRY_BASE_MS
        return float(base_ms * (1 << attempt)) / 1000.0

    def verdict(self, info: ErrorInfo) -> Verdict:
        """``on_error``'s verdict on a failed attempt, or the default one; a hook that raises or
        answers anything else is a HookError."""
        if self.on_error is None:
            return "retry" if info.retryable else "fail"
        try:
            verdict: object = self.on_error(info)
        except Exception as e:
            raise HookError(f"classifier: on_error raised {type(e).__name__}") from None
        if verdict == "retry":
            return "retry"
        if verdict == "fail":
            return "fail"
        raise HookError(
            f"classifier: on_error must return 'retry' or 'fail', got {_shown(verdict)}"
        )


#: The accepted ``concurrency`` range. Above it a value is a typo, not a plan: the connection
#: pool holds 100 sockets, and a worker per unit of 99999999999 once ran a machine out of memory.
MIN_CONCURRENCY = 1
MAX_CONCURRENCY = 1000


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """What every batch entry point (``evaluate_batch``, ``evaluate_stream``, ``states(...)``,
    the CLI's ``batch``, the engine adapters) takes besides states and questions, checked here
    once for all of them. Every request of a batch goes through one scheduler built from them
    (``scheduler.Scheduler.for_run``).

    - ``concurrency``: at most this many requests in flight (seed 004
      ``default-batch-concurrency``); the scheduler starts at 2 and opens up to it.
    - ``rate``: a hard cap in requests per minute (the CLI's ``--rate``), or None for none:
      the scheduler rides the server's 429s without it.
    - ``pack``: states per request, or ``"auto"`` (as many as fit, up to ``packing.PACK_CAP``);
      1 sends one request per state, byte for byte the per-state evaluate (``packplan``).
    - ``admission``: extra admission members (a limiter shared by workers, a spend budget),
      chained after the run's own limiter and fail fast; each sees every request of the batch.
    - ``patience``: seconds a storm of 429/503/529 is ridden out without one success (counted
      from the last success, or the start) before the run stops (the CLI's ``--patience``).
    - ``flush``: ``evaluate_stream`` only, when packing: seconds a part-filled pack waits for
      more states before it is sent (a pipe that stays open still gets its answers); None
      waits for a full pack or the end of the states.
    - ``on_over_limit``: called as ``on_over_limit(state, phrase)`` before a request of one
      state is sent whose upper token estimate passes the wire's limits (the server will
      refuse it; the CLI's one warning, issue 34 item 4). A pack is never sent over a limit:
      it is split, so only a state alone can be. Only requests over
      ``scheduler.tokens.LIMIT_SAFE_BYTES`` are estimated for it.
    """

    concurrency: int = DEFAULT_BATCH_CONCURRENCY
    rate: float | None = None
    pack: int | Literal["auto"] = 1
    admission: tuple[Admission, ...] = ()
    patience: float = DEFAULT_BATCH_PATIENCE
    flush: float | None = None
    on_over_limit: Callable[[Any, str], None] | None = field(default=None, compare=False)
    #: whose words a stop speaks (``failures.Surface``: ``batch``, ``filter``, ``mcp``,
    #: ``library``), so a script is told ``resume=True`` and a command line ``--resume``
    surface: Surface = "library"

    def __post_init__(self) -> None:
        c = self.concurrency
        if not _is_int(c) or not MIN_CONCURRENCY <= c <= MAX_CONCURRENCY:
            raise ConfigError(
                f"classifier: concurrency takes {MIN_CONCURRENCY}..{MAX_CONCURRENCY}, "
                f"got {_shown(c)}"
            )
        r = self.rate
        if r is not None and (
            isinstance(r, bool) or not isinstance(r, int | float) or not 0 < r < math.inf
        ):
            raise ConfigError(
                f"classifier: rate takes a number of requests per minute above 0, got {_shown(r)}"
            )
        p = self.patience
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 < p < math.inf:
            raise ConfigError(
                f"classifier: patience takes a number of seconds above 0, got {_shown(p)}"
            )
        if self.pack != 1 or isinstance(self.pack, bool):  # True == 1, but is no pack size
            check_pack(self.pack)
        members = self.admission
        if isinstance(members, str | bytes) or not isinstance(members, Iterable):
            raise ConfigError(
                "classifier: admission takes a tuple of admission members, got "
                f"{type(members).__name__}"
            )
        members = tuple(members)
        for m in members:
            if not callable(getattr(m, "acquire", None)) or not callable(
                getattr(m, "release", None)
            ):
                raise ConfigError(
                    f"classifier: admission member {_shown(m)} has no acquire/release methods"
                )
        object.__setattr__(self, "admission", members)
        f = self.flush
        if f is not None and (
            isinstance(f, bool) or not isinstance(f, int | float) or not 0 <= f < math.inf
        ):
            raise ConfigError(f"classifier: flush takes seconds (0 or more), got {_shown(f)}")


# --- the front door: generated by move.py --doors; other rooms import these names (issue 44:
# another room imports only what this door names), each from the module that defines it,
# imported on first use (PEP 562): entering a room loads only what is asked for.
if TYPE_CHECKING:
    from .backends import BACKEND_NAMES as BACKEND_NAMES
    from .backends import BACKENDS as BACKENDS
    from .backends import IMAGES_HEADER as IMAGES_HEADER
    from .backends import Backend as Backend
    from .backends import ResolvedBackend as ResolvedBackend
    from .backends import resolve_backend as resolve_backend
    from .requestbudget import Budget as Budget
    from .requestbudget import budget_of as budget_of

_LAZY: dict[str, str] = {
    "BACKENDS": "backends",
    "BACKEND_NAMES": "backends",
    "Backend": "backends",
    "Budget": "requestbudget",
    "IMAGES_HEADER": "backends",
    "ResolvedBackend": "backends",
    "budget_of": "requestbudget",
    "resolve_backend": "backends",
}

if not TYPE_CHECKING:  # mypy resolves the names through the imports above

    def __getattr__(name: str) -> object:
        # not cached here: a test that patches the defining module is seen through the door
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        from importlib import import_module

        return getattr(import_module(f".{module}", __name__), name)


# --- end of the front door
