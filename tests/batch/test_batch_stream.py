"""``Classifier.evaluate_stream``: per-state results as they complete, with bounded memory.

The rules under test (issue 5 + seed 004 ``evaluate-states``): at most ``concurrency`` in flight;
results one per state; "one state's failure NEVER fails the batch"; the reply validated
fail-closed; a question-set error raised once before any request; input pulled lazily.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from toolnexus import (
    ClassifierError,
    InvalidDecision,
    NoulQuestion,
    QuestionError,
    create_classifier,
)

QS = {"holds": NoulQuestion("Does it hold?")}


def _body(p: float) -> dict[str, Any]:
    return {"model": "stub", "answers": {"holds": {"type": "noul", "noul": p}}}


class Probe:
    """A custom evaluate that records how many calls are in flight at once."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.in_flight = 0
        self.peak = 0
        self.calls: list[Any] = []
        self.release = asyncio.Event()
        self.release.set()

    async def __call__(self, state: Any, questions: Any) -> dict[str, Any]:
        self.calls.append(state)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await self.release.wait()
            # Later states finish first, so completion order differs from input order.
            await asyncio.sleep(self.delay / (1 + len(self.calls) % 3))
            if state == "boom":
                raise RuntimeError("backend exploded")
            if state == "bad-answer":
                return _body(1.5)  # outside [0, 1]: fails validate_decision
            return _body(0.5)
        finally:
            self.in_flight -= 1


async def _collect(stream: AsyncIterator[Any]) -> list[Any]:
    return [x async for x in stream]


@pytest.mark.parametrize(
    ("concurrency", "n"),
    [
        pytest.param(1, 5, id="serial"),
        pytest.param(4, 40, id="four-wide"),
        pytest.param(16, 3, id="wider-than-input"),
    ],
)
def test_every_state_once_and_at_most_concurrency_in_flight(concurrency: int, n: int) -> None:
    """'at most --concurrency N requests in flight'; one result per state."""
    probe = Probe(delay=0.002)
    judge = create_classifier(style="custom", evaluate=probe)
    states = [(i, f"state {i}") for i in range(n)]
    got = asyncio.run(_collect(judge.evaluate_stream(states, QS, concurrency=concurrency)))
    assert sorted(k for k, _ in got) == list(range(n))
    assert all(r.ok and r.decision is not None for _, r in got)
    assert probe.peak <= concurrency
    assert len(probe.calls) == n


def test_one_failure_never_fails_the_stream() -> None:
    """'One state's failure NEVER fails the batch'; invalid replies fail closed; a bad state
    is an error with nothing sent."""
    probe = Probe()
    judge = create_classifier(style="custom", evaluate=probe)
    states = [("a", "fine"), ("b", "boom"), ("c", "bad-answer"), ("d", 42), ("e", "fine too")]
    got = dict(asyncio.run(_collect(judge.evaluate_stream(states, QS, concurrency=2))))
    assert set(got) == {"a", "b", "c", "d", "e"}
    assert got["a"].ok and got["e"].ok
    assert "backend exploded" in str(got["b"].error)
    assert isinstance(got["c"].error, InvalidDecision)
    assert isinstance(got["d"].error, ClassifierError) and "a state must be" in str(got["d"].error)
    assert 42 not in probe.calls  # nothing sent for an invalid state


def test_question_set_error_is_raised_before_any_request() -> None:
    probe = Probe()
    judge = create_classifier(style="custom", evaluate=probe)

    async def run() -> None:
        async for _ in judge.evaluate_stream([("a", "x")], {"": NoulQuestion("empty key")}):
            pass

    with pytest.raises(QuestionError):
        asyncio.run(run())
    assert probe.calls == []


def test_input_is_pulled_lazily() -> None:
    """'memory does not grow with the number of states': with the consumer stalled, the stream
    has pulled only what its workers and its bounded result queue can hold."""
    pulled = 0

    def source() -> Iterator[tuple[int, str]]:
        nonlocal pulled
        for i in range(10_000):
            pulled += 1
            yield i, f"s{i}"

    judge = create_classifier(style="custom", evaluate=Probe())

    async def run() -> int:
        stream = judge.evaluate_stream(source(), QS, concurrency=4)
        first = await anext(stream)
        assert first[1].ok
        await asyncio.sleep(0.05)  # let every worker run as far as it can
        seen = pulled
        await stream.aclose()
        return seen

    seen = asyncio.run(run())
    assert seen <= 4 + 4 + 4 + 1  # in flight + waiting in the queue + blocked putting + taken


def test_async_source_and_early_close_cancels_in_flight() -> None:
    probe = Probe()
    probe.release = asyncio.Event()  # calls block until released: they are in flight at close
    judge = create_classifier(style="custom", evaluate=probe)

    async def source() -> AsyncIterator[tuple[int, str]]:
        for i in range(100):
            yield i, f"s{i}"

    async def run() -> tuple[int, int]:
        stream = judge.evaluate_stream(source(), QS, concurrency=3)
        task = asyncio.ensure_future(anext(stream))
        # Until three calls are in flight (a condition, not 10 ms of a busy machine's time: the
        # hang guard only bounds a broken stream), then enough turns of the loop for a fourth
        # worker to start if the stream would start one (issue 29 item 2).
        async with asyncio.timeout(30):
            while len(probe.calls) < 3:
                await asyncio.sleep(0)
        for _ in range(100):
            await asyncio.sleep(0)
        started = len(probe.calls)
        task.cancel()  # the consumer is cancelled (Ctrl-C in the CLI) mid-wait
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await stream.aclose()
        return started, probe.in_flight

    started, still_running = asyncio.run(run())
    assert started == 3
    assert still_running == 0


def test_a_failing_source_raises_from_the_stream() -> None:
    def source() -> Iterator[tuple[int, str]]:
        yield 0, "fine"
        raise OSError("disk went away")

    judge = create_classifier(style="custom", evaluate=Probe())
    with pytest.raises(OSError, match="disk went away"):
        asyncio.run(_collect(judge.evaluate_stream(source(), QS, concurrency=2)))


def test_concurrency_below_one_is_an_error() -> None:
    judge = create_classifier(style="custom", evaluate=Probe())
    with pytest.raises(ClassifierError, match=r"takes 1\.\.1000"):
        asyncio.run(_collect(judge.evaluate_stream([], QS, concurrency=0)))
