"""The synchronous API: the async classifier behind plain calls (httpx's ``Client`` beside
``AsyncClient``).

    from toolnexus.sync import create_classifier

    with create_classifier(model="jev-1.13.0") as judge:
        d = judge.evaluate("Ticket 4021: charged twice.", QUESTIONS)

``create_classifier`` and ``static_classifier`` take exactly the parameters of their async
namesakes, by construction: each is the async factory seen through ``_mirror``, typed with the
factory's own ParamSpec (so mypy checks a call against the async signature, whatever it is) and
given its ``inspect.signature``. The methods are the async ones seen through ``_blocking`` the
same way. There is one definition of every option and of every method's parameters: the async.

Where the work runs: on one background event loop shared by the process (``_loop.py``), in a
copy of the caller's contextvars. ``on_metric`` callbacks and a sync ``custom`` evaluate run on
that loop's thread (``toolnexus-sync``), as they run on the event loop in the async API: keep
them quick, and never call the sync API from them (that is refused: it would wait on itself).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
)
from typing import Any, Concatenate, ParamSpec, TypeVar

from .. import judge as _judge
from ..classifier import client as _async
from ..classifier import factory as _factory
from ..config import BatchOptions
from ..core import (
    DEFAULT_BATCH_CONCURRENCY,
    ConfigError,
    Decision,
    GateResult,
    JudgedAnswer,
    Question,
)
from ..evaluate import (
    BoundState,
    BoundStates,
    StateResult,
)
from ._loop import background as background  # arrow, ray and the pytest plugin enter by it

__all__ = [
    "SyncBoundState",
    "SyncBoundStates",
    "SyncClassifier",
    "Tape",
    "ask",
    "create_classifier",
    "gate",
    "static_classifier",
]

P = ParamSpec("P")
R = TypeVar("R")
A = TypeVar("A")
K = TypeVar("K")


class _Facade:
    """A sync face over one async object (``_target``): what ``_blocking`` methods call."""

    _target: Any


def _signed(fn: Callable[..., Any], like: Callable[..., Any], **replace: Any) -> None:
    """Give ``fn`` the name, docstring and ``inspect.signature`` of ``like``."""
    functools.update_wrapper(fn, like, assigned=("__name__", "__doc__"), updated=())
    fn.__signature__ = inspect.signature(like).replace(**replace)  # type: ignore[attr-defined]


def _blocking(
    method: Callable[Concatenate[A, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[_Facade, P], R]:
    """The async ``method`` as a plain method of a facade: same parameters, same result, the
    same exceptions (the very objects the async one raises)."""

    def call(self: _Facade, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return background.run(method(self._target, *args, **kwargs))

    _signed(call, method)
    return call


class SyncBoundState(_Facade):
    """``judge.state(v)``: one state, evaluated with NAMED questions, validated FAIL-CLOSED."""

    def __init__(self, bound: BoundState) -> None:
        self._target: BoundState = bound

    @property
    def value(self) -> Any:
        return self._target.value

    # BoundState.evaluate takes **questions, so mypy will not match its named self to
    # Concatenate's positional one; the parameters (P) are still taken from it.
    evaluate = _blocking(BoundState.evaluate)  # type: ignore[arg-type]


class SyncBoundStates(_Facade):
    """``judge.states(vs)``: per-state results in order; one failure never fails the batch."""

    def __init__(self, bound: BoundStates) -> None:
        self._target: BoundStates = bound

    @property
    def values(self) -> list[Any]:
        return self._target.values

    evaluate = _blocking(BoundStates.evaluate)


class SyncClassifier(_Facade):
    """A classifier whose calls block until their answer. Build one with
    ``toolnexus.sync.create_classifier``; use ``with`` (or ``close()``) to release the HTTP
    connection pool. Safe to share between threads."""

    def __init__(self, classifier: _async.Classifier) -> None:
        self._target: _async.Classifier = classifier
        background.track(self)

    @property
    def async_classifier(self) -> _async.Classifier:
        """The async classifier behind this one (bound to the background loop: await its
        methods only from code running there)."""
        return self._target

    @property
    def style(self) -> str:
        return self._target.style

    @property
    def model(self) -> str:
        return self._target.model

    def __repr__(self) -> str:
        return f"SyncClassifier(style={self.style!r}, model={self.model!r})"

    def __enter__(self) -> SyncClassifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool. Safe to call twice. A call after it opens a pool again,
        so this closes every time, and the classifier stays tracked for exit to close."""
        background.run(self._target.aclose())

    def _pool_closer(self) -> Coroutine[Any, Any, None]:
        """The async close of the connection pool, for the background loop to run at exit."""
        return self._target.aclose()

    def prepare(self, questions: Mapping[str, Any]) -> dict[str, Question]:
        """Normalise a question set and enforce the limits; nothing is sent."""
        return self._target.prepare(questions)

    evaluate = _blocking(_async.Classifier.evaluate)
    evaluate_batch = _blocking(_async.Classifier.evaluate_batch)

    def evaluate_stream(
        self,
        states: Iterable[tuple[K, Any]] | AsyncIterable[tuple[K, Any]],
        questions: Mapping[str, Any],
        concurrency: int = DEFAULT_BATCH_CONCURRENCY,
        *,
        options: BatchOptions | None = None,
    ) -> Iterator[tuple[K, StateResult]]:
        """``(id, StateResult)`` for each ``(id, state)``, in completion order, as a plain
        iterator over the async ``evaluate_stream``: each ``next()`` takes one result from it,
        so at most ``concurrency`` evaluations are in flight and at most ``concurrency``
        finished results wait, however slow the consumer. ``states`` is pulled on the
        background thread. Leaving the loop early (``break``, ``close()``) cancels the
        evaluations still in flight."""
        return _iterate(
            self._target.evaluate_stream(states, questions, concurrency, options=options)
        )

    def state(self, value: Any) -> SyncBoundState:
        """Bind a state. A VALUE, not a session: nothing is sent until ``evaluate``."""
        return SyncBoundState(self._target.state(value))

    def states(
        self,
        values: Iterable[Any],
        *,
        concurrency: int = DEFAULT_BATCH_CONCURRENCY,
        options: BatchOptions | None = None,
    ) -> SyncBoundStates:
        """Bind a batch of states and the batch options, as the async ``states`` does. See
        ``SyncBoundStates.evaluate``."""
        return SyncBoundStates(
            self._target.states(values, concurrency=concurrency, options=options)
        )


#: What ``_step`` returns at the end of the stream (``StopAsyncIteration`` cannot cross a task).
_END = object()


async def _step(stream: AsyncIterator[Any]) -> Any:
    try:
        return await anext(stream)
    except StopAsyncIteration:
        return _END


def _iterate(stream: AsyncIterator[tuple[K, StateResult]]) -> Iterator[tuple[K, StateResult]]:
    try:
        while (item := background.run(_step(stream))) is not _END:
            yield item
    finally:
        # evaluate_stream is an async generator, typed as the AsyncIterator it promises.
        closing = stream.aclose()  # type: ignore[attr-defined]
        if background.on_loop_thread():  # finalised by a collection on the loop thread itself
            background.run_soon(closing)
        else:
            background.run(closing)


def _mirror(factory: Callable[P, _async.Classifier]) -> Callable[P, SyncClassifier]:
    """The async ``factory`` returning a ``SyncClassifier``: the same parameters, checked the
    same way, raising the same errors."""

    def build(*args: P.args, **kwargs: P.kwargs) -> SyncClassifier:
        return SyncClassifier(factory(*args, **kwargs))

    _signed(build, factory, return_annotation=SyncClassifier.__name__)
    build.__qualname__ = factory.__name__
    build.__doc__ = (
        f"The synchronous ``toolnexus.{factory.__name__}``: the same parameters, a "
        f"``SyncClassifier``.\n\n{inspect.getdoc(factory)}"
    )
    return build


create_classifier = _mirror(_factory.create_classifier)
static_classifier = _mirror(_factory.static_classifier)


def _async_of(classifier: Any) -> _async.Classifier:
    if not isinstance(classifier, SyncClassifier):
        raise ConfigError(
            "classifier: toolnexus.sync's ask/gate/Tape take a SyncClassifier (the async ones "
            f"are toolnexus.ask/gate/Tape), got {type(classifier).__name__}"
        )
    return classifier.async_classifier


def ask(
    classifier: SyncClassifier,
    state: Any,
    questions: Any,
    bands: Any = None,
    *,
    thresholds: Mapping[str, float] | None = None,
) -> dict[str, JudgedAnswer]:
    """The blocking ``toolnexus.ask``: the same parameters, a ``SyncClassifier``."""
    c = _async_of(classifier)
    return background.run(_judge.ask(c, state, questions, bands, thresholds=thresholds))


def gate(
    classifier: SyncClassifier, state: Any, questions: Any, rules: Any, bands: Any = None
) -> GateResult:
    """The blocking ``toolnexus.gate``: the same parameters, a ``SyncClassifier``."""
    return background.run(_judge.gate(_async_of(classifier), state, questions, rules, bands))


class Tape:
    """The blocking ``toolnexus.Tape``: ``Tape(live).call(name)`` records, ``Tape(recorded=
    ...).call(name)`` replays; each call is a ``SyncClassifier``."""

    def __init__(
        self, live: SyncClassifier | None = None, *, recorded: Mapping[str, Decision] | None = None
    ) -> None:
        self._tape = _judge.Tape(None if live is None else _async_of(live), recorded=recorded)

    @property
    def recorded(self) -> dict[str, Decision]:
        """The decisions on the tape, by call name (a copy)."""
        return self._tape.recorded

    def call(self, name: str) -> SyncClassifier:
        """A classifier for the call ``name``: recording, or replaying."""
        return SyncClassifier(self._tape.call(name))
