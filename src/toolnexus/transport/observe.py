"""The transport's internal hook: who is told of each HTTP attempt and each wait (issue 23).

The retry loop is the one place that knows when an attempt starts, what it got back and how long
the next one waits. OpenTelemetry's attempt spans (``telemetry.py``) and a spend budget's retry
count (``scheduler.budget.Budget.resent``) both hang on this hook; the seed-defined
``on_metric`` events are not built from it and stay exactly as they are.

Observers are per task, not per transport: one classifier's transport serves many evaluates at
once, and each wants its own attempts. :func:`observing` adds an observer for the code it wraps
(a :class:`~contextvars.ContextVar`, so tasks started inside inherit it and concurrent tasks never
see each other's). With no observer the loop pays one ``ContextVar.get`` per request.

Pure: no I/O, no HTTP library.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Protocol

__all__ = ["AttemptObserver", "AttemptWatch", "observers", "observing"]


class AttemptWatch(Protocol):
    """One attempt as an observer follows it: exactly one of :meth:`response` / :meth:`failed`
    is called (unless the task is cancelled), then :meth:`end`."""

    def response(self, status: int, request_id: str | None) -> None:
        """An HTTP answer came back (any status); ``request_id`` is already scrubbed."""

    def failed(self, kind: str) -> None:
        """No HTTP answer: ``kind`` is the transport's own words (``timeout``, ...)."""

    def end(self) -> None:
        """The attempt is over (also after a cancellation)."""


class AttemptObserver(Protocol):
    """Told of every attempt of every request sent inside :func:`observing`."""

    def attempt(self, resend_count: int) -> AttemptWatch | None:
        """An attempt starts; ``resend_count`` is 0 for the first, n for the n-th retry. Return
        a watch to follow it, or None."""

    def waited(self, seconds: float, resend_count: int) -> None:
        """The loop is about to wait ``seconds`` before resend ``resend_count``."""


_OBSERVERS: ContextVar[tuple[AttemptObserver, ...]] = ContextVar(
    "toolnexus_transport_observers", default=()
)


def observers() -> tuple[AttemptObserver, ...]:
    """The observers of the current task, outermost first."""
    return _OBSERVERS.get()


def observing(observer: AttemptObserver) -> AbstractContextManager[None]:
    """Tell ``observer`` of every attempt sent by the code inside (and the tasks it starts)."""
    return _Observing(observer)


class _Observing:
    """:func:`observing`'s context manager: a class, not a generator, as it wraps every
    evaluate of a classifier with telemetry on (a generator's frame was a measured cost)."""

    __slots__ = ("_observer", "_token")

    def __init__(self, observer: AttemptObserver) -> None:
        self._observer = observer

    def __enter__(self) -> None:
        self._token = _OBSERVERS.set((*_OBSERVERS.get(), self._observer))

    def __exit__(self, *exc: object) -> None:
        _OBSERVERS.reset(self._token)
