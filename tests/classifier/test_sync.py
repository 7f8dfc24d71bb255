"""toolnexus.sync, the synchronous API (issue 18): the same parameters, results and errors as
the async API, as plain calls, from a script, a running loop and many threads at once."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import itertools
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import toolnexus
import toolnexus.sync
from serving import ThreadedServer
from toolnexus import (
    BatchError,
    ClassifierError,
    ConfigError,
    Decision,
    HTTPStatusError,
    InvalidDecision,
    NoulAnswer,
    NoulQuestion,
    QuestionError,
    StaticMiss,
)
from toolnexus.serve import ServeOptions
from toolnexus.sync._loop import background

Q = {"refund": NoulQuestion("Is a refund requested?")}
WIRE_Q = {"refund": {"type": "noul", "instructions": "Is a refund requested?"}}
BASE = "http://sync.test/v1"
#: How long a thread running a sync call may take before the test calls it a deadlock. Not a
#: timing assertion: the calls take milliseconds; only a hang reaches it.
HANG = 60.0


def stub(value: float = 0.9) -> Callable[[Any, dict[str, Any]], Decision]:
    def evaluate(state: Any, questions: dict[str, Any]) -> Decision:
        return Decision("stub", {k: NoulAnswer(value) for k in questions})

    return evaluate


def noul_of(state: str) -> float:
    """What the mock server answers for a state: its number in hundredths, so a reply shows
    which request it answers."""
    return int(state.rsplit(" ", 1)[1]) / 100


def answering(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    answers = {k: {"type": "noul", "noul": noul_of(body["state"])} for k in body["questions"]}
    return httpx.Response(200, json={"model": "jev-1.13.0", "answers": answers})


def in_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` on a fresh thread; a call that has not returned after HANG fails the test."""
    box: list[Any] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            box.append(fn())
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(HANG)
    assert not t.is_alive(), "the sync call deadlocked"
    if errors:
        raise errors[0]
    return box[0]


# --- one definition of the parameters --------------------------------------------------------


@pytest.mark.parametrize(
    ("sync_fn", "async_fn"),
    [
        pytest.param(
            toolnexus.sync.create_classifier, toolnexus.create_classifier, id="create_classifier"
        ),
        pytest.param(
            toolnexus.sync.static_classifier, toolnexus.static_classifier, id="static_classifier"
        ),
        pytest.param(
            toolnexus.sync.SyncClassifier.evaluate, toolnexus.Classifier.evaluate, id="evaluate"
        ),
        pytest.param(
            toolnexus.sync.SyncClassifier.evaluate_batch,
            toolnexus.Classifier.evaluate_batch,
            id="evaluate_batch",
        ),
        pytest.param(
            toolnexus.sync.SyncClassifier.evaluate_stream,
            toolnexus.Classifier.evaluate_stream,
            id="evaluate_stream",
        ),
        pytest.param(
            toolnexus.sync.SyncBoundState.evaluate, toolnexus.BoundState.evaluate, id="state"
        ),
        pytest.param(
            toolnexus.sync.SyncBoundStates.evaluate, toolnexus.BoundStates.evaluate, id="states"
        ),
    ],
)
def test_the_sync_form_takes_exactly_the_async_parameters(
    sync_fn: Callable[..., Any], async_fn: Callable[..., Any]
) -> None:
    """issue 18: 'takes exactly the same options as toolnexus.create_classifier (one
    definition ...; a test holds the two signatures equal)'. Only the result differs."""
    sync_sig, async_sig = inspect.signature(sync_fn), inspect.signature(async_fn)
    assert list(sync_sig.parameters.values()) == list(async_sig.parameters.values())


def test_the_factories_say_they_return_a_sync_classifier() -> None:
    for fn in (toolnexus.sync.create_classifier, toolnexus.sync.static_classifier):
        assert inspect.signature(fn).return_annotation == "SyncClassifier"
        assert fn.__module__ == "toolnexus.sync"


# --- plain calls ------------------------------------------------------------------------------


def test_every_call_is_plain_and_answers_like_the_async_one() -> None:
    """issue 18: evaluate, evaluate_batch, evaluate_stream, state(v).evaluate and
    states(vs).evaluate are plain calls."""
    states = [f"ticket {i}" for i in range(5)]
    with toolnexus.sync.create_classifier(
        base_url=BASE, transport=httpx.MockTransport(answering)
    ) as judge:
        assert judge.evaluate("ticket 7", Q).noul("refund").noul == 0.07
        batch = judge.evaluate_batch(states, Q, concurrency=2)
        assert [d.noul("refund").noul for d in batch] == [noul_of(s) for s in states]
        streamed = dict(judge.evaluate_stream(enumerate(states), Q, concurrency=2))
        assert {i: r.decision.noul("refund").noul for i, r in streamed.items() if r.decision} == {
            i: noul_of(s) for i, s in enumerate(states)
        }
        assert judge.state("ticket 3").evaluate(**Q).noul("refund").noul == 0.03
        results = judge.states(["ticket 4", 5]).evaluate(**Q)
        assert results[0].decision is not None and results[0].decision.noul("refund").noul == 0.04
        assert not results[1].ok


SCRIPT = """
from toolnexus import NoulQuestion, RecordedDecision
from toolnexus.sync import static_classifier

Q = {"refund": NoulQuestion("Is a refund requested?")}
judge = static_classifier(
    [RecordedDecision(state="s", questions=Q, answers={"refund": {"type": "noul", "noul": 0.8}})]
)
print(judge.evaluate("s", Q).noul("refund").noul)
"""


@pytest.mark.parametrize(
    "tail",
    [
        pytest.param("judge.close()\n", id="closed"),
        pytest.param("", id="never-closed"),
        pytest.param(
            "with judge:\n    print(judge.evaluate_batch(['s'], Q)[0].model)\n", id="with"
        ),
    ],
)
def test_a_script_runs_and_exits_quietly(tail: str) -> None:
    """issue 18: 'works from a script'; a script that never closes its classifier still exits
    at once, with nothing on stderr."""
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT + tail], capture_output=True, text=True, timeout=HANG
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "0.8"
    assert proc.stderr == ""


def test_a_coroutine_calling_it_does_not_deadlock() -> None:
    """issue 18: 'from inside a running event loop (a notebook cell, a coroutine calling it —
    it must not deadlock)'. The work runs on the background loop, not the caller's."""
    judge = toolnexus.sync.create_classifier(
        base_url=BASE, transport=httpx.MockTransport(answering)
    )

    async def cell() -> list[float]:
        one = judge.evaluate("ticket 1", Q).noul("refund").noul
        many = judge.evaluate_batch(["ticket 2", "ticket 3"], Q)
        streamed = [
            r.decision.noul("refund").noul
            for _, r in judge.evaluate_stream([(0, "ticket 4")], Q)
            if r.decision
        ]
        return [one, *(d.noul("refund").noul for d in many), *streamed]

    try:
        assert in_thread(lambda: asyncio.run(cell())) == [0.01, 0.02, 0.03, 0.04]
    finally:
        judge.close()


def test_eight_threads_share_one_classifier_and_one_loop() -> None:
    """issue 18: 'from many threads at once (one background loop shared safely)': every thread
    gets the answers to its own states, and all the work ran on one background thread."""
    ran_on: set[str] = set()

    def handler(request: httpx.Request) -> httpx.Response:
        ran_on.add(threading.current_thread().name)
        return answering(request)

    judge = toolnexus.sync.create_classifier(base_url=BASE, transport=httpx.MockTransport(handler))
    barrier = threading.Barrier(8)

    def work(t: int) -> list[float]:
        barrier.wait()
        return [judge.evaluate(f"ticket {t * 10 + i}", Q).noul("refund").noul for i in range(10)]

    with judge:
        box: dict[int, list[float]] = {}
        threads = [
            threading.Thread(target=lambda t=t: box.__setitem__(t, work(t))) for t in range(8)
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join(HANG)
        assert not any(th.is_alive() for th in threads), "a thread deadlocked"
    assert box == {t: [(t * 10 + i) / 100 for i in range(10)] for t in range(8)}
    assert ran_on == {"toolnexus-sync"}


# --- with and close() --------------------------------------------------------------------------


class CountingTransport(httpx.MockTransport):
    def __init__(self) -> None:
        super().__init__(answering)
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


def test_with_closes_the_connection_pool() -> None:
    transport = CountingTransport()
    with toolnexus.sync.create_classifier(base_url=BASE, transport=transport) as judge:
        judge.evaluate("ticket 1", Q)
        assert transport.closed == 0
    assert transport.closed == 1


def test_close_releases_the_pool_and_is_safe_twice() -> None:
    transport = CountingTransport()
    judge = toolnexus.sync.create_classifier(base_url=BASE, transport=transport)
    judge.evaluate("ticket 1", Q)
    judge.close()
    judge.close()
    assert transport.closed == 1


# --- contextvars ------------------------------------------------------------------------------

TENANT: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="unset")


def test_the_callers_contextvars_reach_evaluate_and_on_metric() -> None:
    """issue 18: 'The caller's contextvars are carried into the work': each of 8 threads sets
    its own value, and its custom evaluate and on_metric events see that value, not another's."""
    seen_by_evaluate: dict[str, str] = {}
    seen_by_metric: list[tuple[str, str]] = []

    def evaluate(state: Any, questions: dict[str, Any]) -> Decision:
        seen_by_evaluate[state] = TENANT.get()
        return stub()(state, questions)

    def on_metric(event: dict[str, Any]) -> None:
        seen_by_metric.append((event["model"], TENANT.get()))

    judge = toolnexus.sync.create_classifier(style="custom", evaluate=evaluate, on_metric=on_metric)

    def work(t: int) -> None:
        TENANT.set(f"tenant-{t}")
        judge.evaluate(f"state {t}", Q)
        judge.evaluate_batch([f"batch {t}"], Q)

    with judge:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(HANG)
    assert seen_by_evaluate == {
        **{f"state {t}": f"tenant-{t}" for t in range(8)},
        **{f"batch {t}": f"tenant-{t}" for t in range(8)},
    }
    assert sorted(v for _, v in seen_by_metric) == sorted(
        f"tenant-{t}" for t in range(8) for _ in "ab"
    )
    assert TENANT.get() == "unset"


def test_a_sync_call_from_its_own_background_thread_is_refused() -> None:
    """A sync call inside an async custom evaluate (which runs on the background loop) would
    wait on the loop it runs on: refused with a ClassifierError that says to use the async API
    there, never a hang."""
    inner = toolnexus.sync.create_classifier(style="custom", evaluate=stub())

    async def nested(state: Any, questions: dict[str, Any]) -> Decision:
        return inner.evaluate(state, Q)

    with (
        toolnexus.sync.create_classifier(style="custom", evaluate=nested) as outer,
        pytest.raises(ConfigError, match="use the async API there"),
    ):
        in_thread(lambda: outer.evaluate("s", Q))
    inner.close()


def test_a_sync_custom_evaluate_may_call_the_sync_api() -> None:
    """A synchronous custom evaluate runs on the classifier's own thread pool, not on the
    background loop, so a sync call inside it has a free loop to answer it."""
    inner = toolnexus.sync.create_classifier(style="custom", evaluate=stub())

    def nested(state: Any, questions: dict[str, Any]) -> Decision:
        return inner.evaluate(state, Q)

    with toolnexus.sync.create_classifier(style="custom", evaluate=nested) as outer:
        assert in_thread(lambda: outer.evaluate("s", Q)) == inner.evaluate("s", Q)
    inner.close()


# --- the same errors ----------------------------------------------------------------------------


def _failing(status: int) -> Callable[[], dict[str, Any]]:
    def options() -> dict[str, Any]:
        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(
                status, json={"detail": "boom"}, headers={"x-typesafe-request-id": "req_1"}
            )

        return {"base_url": BASE, "transport": httpx.MockTransport(handler), "retries": 0}

    return options


def _custom(evaluate: Callable[..., Any]) -> Callable[[], dict[str, Any]]:
    return lambda: {"style": "custom", "evaluate": evaluate}


def _empty(state: Any, questions: dict[str, Any]) -> Decision:
    return Decision("stub", {})


def _bad_state(state: Any, questions: dict[str, Any]) -> Decision:
    if state == "bad":
        raise ValueError("no such ticket")
    return stub()(state, questions)


ERROR_CASES = [
    pytest.param(_failing(500), lambda c: c.evaluate("s", Q), HTTPStatusError, id="http-500"),
    pytest.param(_failing(401), lambda c: c.evaluate("s", Q), HTTPStatusError, id="http-401"),
    pytest.param(
        lambda: {"style": "static", "decisions": []},
        lambda c: c.evaluate("s", Q),
        StaticMiss,
        id="static-miss",
    ),
    pytest.param(_custom(stub()), lambda c: c.evaluate("s", {}), QuestionError, id="no-questions"),
    pytest.param(
        _custom(_bad_state),
        lambda c: c.evaluate_batch(["ok", "bad"], Q),
        BatchError,
        id="batch-fails-closed",
    ),
    pytest.param(
        _custom(_empty), lambda c: c.state("s").evaluate(**Q), InvalidDecision, id="fail-closed"
    ),
    pytest.param(
        lambda: {"style": "oracle"}, lambda c: c.evaluate("s", Q), ConfigError, id="bad-option"
    ),
]


@pytest.mark.parametrize(("options", "act", "kind"), ERROR_CASES)
def test_an_error_is_the_async_apis_error_with_the_same_text(
    options: Callable[[], dict[str, Any]], act: Callable[[Any], Any], kind: type[ClassifierError]
) -> None:
    """issue 18: 'an exception raised inside is the same ClassifierError the async API raises,
    with the same message'."""

    async def run_async() -> None:
        async with toolnexus.create_classifier(**options()) as c:
            await act(c)

    with pytest.raises(ClassifierError) as from_async:
        asyncio.run(run_async())
    with pytest.raises(ClassifierError) as from_sync:  # noqa: SIM117 (create may raise too)
        with toolnexus.sync.create_classifier(**options()) as c:
            act(c)
    assert type(from_sync.value) is type(from_async.value) is kind
    assert str(from_sync.value) == str(from_async.value)


# --- the stream ---------------------------------------------------------------------------------


def _let_the_loop_run(rounds: int = 50) -> None:
    """Give the background loop many turns, as a slow consumer would between two items."""
    for _ in range(rounds):
        background.run(asyncio.sleep(0))


def test_a_slow_consumer_keeps_the_stream_bounded() -> None:
    """issue 18: evaluate_stream 'does not run ahead of the consumer without limit': over an
    endless source, the states pulled but not yet consumed never pass ``concurrency`` in flight
    plus ``concurrency`` finished and waiting."""
    concurrency = 4
    pulled = itertools.count()
    counter = {"n": 0}

    def endless() -> Iterator[tuple[int, str]]:
        for i in pulled:
            counter["n"] = i + 1
            yield i, f"ticket {i}"

    with toolnexus.sync.create_classifier(style="custom", evaluate=stub()) as judge:
        stream = judge.evaluate_stream(endless(), Q, concurrency=concurrency)
        ahead = []
        for consumed in range(1, 31):
            next(stream)
            _let_the_loop_run()
            ahead.append(counter["n"] - consumed)
        stream.close()  # type: ignore[attr-defined]
    assert max(ahead) <= 2 * concurrency, ahead
    assert max(ahead) > 0, "the stream never ran ahead at all: the test measured nothing"


def test_leaving_a_stream_early_cancels_what_is_in_flight() -> None:
    """Breaking out of the loop cancels the evaluations still running (as the async stream's
    aclose does): none is left behind."""
    started: list[str] = []
    cancelled: list[str] = []
    first = "ticket 0"

    async def evaluate(state: Any, questions: dict[str, Any]) -> Decision:
        started.append(state)
        if state != first:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(state)
                raise
        return stub()(state, questions)

    with toolnexus.sync.create_classifier(style="custom", evaluate=evaluate) as judge:
        states = [(i, f"ticket {i}") for i in range(10)]
        for key, _ in judge.evaluate_stream(states, Q, concurrency=3):
            assert key == 0
            break
    assert sorted(cancelled) == sorted(s for s in started if s != first)
    assert len(started) > 1


# --- Ctrl-C -------------------------------------------------------------------------------------


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in the main thread, whatever the runner inherited."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


STATES_40 = [{"i": i} for i in range(40)]


@pytest.mark.usefixtures("sigint_raises")
@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda j: j.evaluate_batch(STATES_40, Q, concurrency=4), id="evaluate_batch"),
        pytest.param(lambda j: j.states(STATES_40, concurrency=4).evaluate(**Q), id="states"),
        pytest.param(
            lambda j: list(j.evaluate_stream(enumerate(STATES_40), Q, concurrency=4)),
            id="evaluate_stream",
        ),
    ],
)
def test_ctrl_c_cancels_every_in_flight_evaluation_before_raising(
    call: Callable[[Any], Any],
) -> None:
    """issue 18: 'Ctrl-C in the calling thread cancels the in-flight requests and raises
    KeyboardInterrupt promptly (no orphaned requests)': by the time KeyboardInterrupt reaches
    the caller, every evaluation it started has been cancelled."""
    assert threading.current_thread() is threading.main_thread()
    started: list[int] = []
    cancelled: list[int] = []
    main = threading.main_thread().ident
    assert main is not None

    async def evaluate(state: Any, questions: dict[str, Any]) -> Decision:
        started.append(state["i"])
        if len(started) == 4:
            signal.pthread_kill(main, signal.SIGINT)  # the user presses Ctrl-C
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(state["i"])
            raise
        return stub()(state, questions)

    with toolnexus.sync.create_classifier(style="custom", evaluate=evaluate) as judge:
        with pytest.raises(KeyboardInterrupt):
            call(judge)
        assert sorted(cancelled) == sorted(started) == [0, 1, 2, 3]


CTRL_C_SCRIPT = """
import signal, sys
# As a terminal has it, whatever disposition this test's runner passed down.
signal.signal(signal.SIGINT, signal.default_int_handler)
from toolnexus.sync import create_classifier

QUESTIONS = {"refund": {"type": "noul", "instructions": "Is a refund requested?"}}
with create_classifier(base_url=sys.argv[1], retries=0, timeout=600) as judge:
    judge.evaluate_batch([f"ticket {i}" for i in range(64)], QUESTIONS, concurrency=4)
"""


def test_ctrl_c_mid_batch_against_serve_exits_at_once_and_starts_nothing_more() -> None:
    """issue 18: 'SIGINT to a subprocess mid-batch: exit promptly, no traceback beyond
    KeyboardInterrupt, the server sees no request start after the signal'. Every request
    stalls for 10 minutes (``toolnexus serve --fault-rate 1 --faults stall``), so the process
    can exit before the timeout below only by cancelling the requests it has in flight. With
    no success yet the batch has its slow start's 2 requests in flight (issue 19: 'until the
    first success a run keeps very few requests in flight'), not its concurrency of 4."""
    arrivals: list[float] = []
    options = ServeOptions(synthetic=True, fault_rate=1.0, faults="stall", stall_seconds=600)
    with ThreadedServer(options) as server:
        server.server.on_request = lambda _raw, _headers: arrivals.append(time.monotonic())
        proc = subprocess.Popen(
            [sys.executable, "-c", CTRL_C_SCRIPT, server.url + "/v1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + HANG
            while len(arrivals) < 2 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.02)
            assert len(arrivals) == 2, "the batch never got its 2 requests in flight"
            signalled = time.monotonic()
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=HANG)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        after = [t for t in arrivals if t > signalled]
    assert proc.returncode == -signal.SIGINT, err
    lines = err.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):", err
    assert lines[-1] == "KeyboardInterrupt", err
    assert err.count("Traceback") == 1, err
    assert not [ln for ln in lines if ln and not ln.startswith(" ")][1:-1], err
    assert after == []
