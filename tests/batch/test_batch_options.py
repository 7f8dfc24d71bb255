"""Issue 16 item 6: "Concurrency (and every other batch option) is validated in one place for
every entry point, and can never collide with a question key". And the executor, event-loop and
exit-noise rules of the same item.
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from loopback import Loopback
from toolnexus import ConfigError, NoulQuestion, create_classifier
from toolnexus.classifier.client import Classifier

QS = {"holds": NoulQuestion("Does it hold?")}


def _body(state: Any, questions: Any) -> dict[str, Any]:
    answers = {key: {"type": "noul", "noul": 0.5} for key in questions}
    return {"model": "stub", "answers": answers}


def _custom(fn: Callable[[Any, Any], Any] = _body) -> Classifier:
    return create_classifier(style="custom", evaluate=fn)


async def _stream(judge: Classifier, concurrency: Any) -> list[Any]:
    return [r async for r in judge.evaluate_stream([(0, "a")], QS, concurrency=concurrency)]


#: Every entry point that takes a concurrency, called with ``value``.
ENTRY_POINTS = [
    pytest.param(lambda j, c: asyncio.run(j.evaluate_batch(["a"], QS, c)), id="evaluate_batch"),
    pytest.param(lambda j, c: asyncio.run(_stream(j, c)), id="evaluate_stream"),
    pytest.param(
        lambda j, c: asyncio.run(j.states(["a"], concurrency=c).evaluate(**QS)), id="states"
    ),
]


@pytest.mark.parametrize("call", ENTRY_POINTS)
@pytest.mark.parametrize("value", [0, -1, 1001, 2.5, True, "4"], ids=repr)
def test_every_entry_point_refuses_a_bad_concurrency_with_one_message(
    call: Callable[[Classifier, Any], Any], value: Any
) -> None:
    """'validated in one place for every entry point': the same ConfigError, the same words."""
    with pytest.raises(ConfigError) as caught:
        call(_custom(), value)
    assert caught.value.message == f"classifier: concurrency takes 1..1000, got {value!r}"


def test_states_evaluate_zero_concurrency_no_longer_returns_empty_results() -> None:
    """Issue 16: "`states(xs).evaluate(0, q=...)` returns `StateResult(decision=None,
    error=None)` for every state". Concurrency is bound by states(); evaluate takes questions."""
    judge = _custom()
    with pytest.raises(TypeError):
        asyncio.run(judge.states(["a", "b"]).evaluate(0, **QS))  # type: ignore[misc]
    with pytest.raises(ConfigError, match=r"concurrency takes 1\.\.1000, got 0"):
        judge.states(["a", "b"], concurrency=0)


def test_a_question_keyed_concurrency_is_a_question() -> None:
    """'can never collide with a question key': `.evaluate(**questions)` takes questions only."""
    results = asyncio.run(
        _custom().states(["a", "b"], concurrency=2).evaluate(concurrency=NoulQuestion("Many?"))
    )
    assert [sorted(r.decision.answers) for r in results if r.decision] == [["concurrency"]] * 2


def test_the_old_spelling_says_how_to_migrate() -> None:
    """`states(xs).evaluate(concurrency=4, ...)` was the old way: the error names the new one."""
    with pytest.raises(ConfigError, match=r"states\(values, concurrency=4\)"):
        asyncio.run(_custom().states(["a"]).evaluate(concurrency=4, **QS))


def _barrier_evaluate(parties: int) -> Callable[[Any, Any], Any]:
    barrier = threading.Barrier(parties, timeout=20)

    def evaluate(state: Any, questions: Any) -> dict[str, Any]:
        barrier.wait()  # broken (BrokenBarrierError) unless `parties` calls overlap
        return _body(state, questions)

    return evaluate


@pytest.mark.parametrize(
    "run",
    [
        pytest.param(
            lambda j, xs, n: asyncio.run(j.evaluate_batch(xs, QS, concurrency=n)), id="batch"
        ),
        pytest.param(
            lambda j, xs, n: [
                r.decision for r in asyncio.run(j.states(xs, concurrency=n).evaluate(**QS))
            ],
            id="states",
        ),
    ],
)
@pytest.mark.parametrize("n", [4, 20])
def test_a_synchronous_custom_evaluate_runs_concurrency_calls_at_once(
    run: Callable[[Classifier, list[str], int], list[Any]], n: int
) -> None:
    """'A synchronous custom evaluate runs off the event loop on an executor sized to
    concurrency (not asyncio.to_thread, whose pool is 6 threads on 2 cores), so four slow calls
    at concurrency 4 overlap'. 20 is past any default pool on a small machine."""
    decisions = run(_custom(_barrier_evaluate(n)), [f"s{i}" for i in range(n)], n)
    assert len(decisions) == n and all(d is not None for d in decisions)


@pytest.mark.parametrize(
    "transport",
    [
        pytest.param(lambda: None, id="default-aiohttp-pool"),
        pytest.param(
            lambda: httpx.AsyncHTTPTransport(),
            id="host-httpx-transport",
            # The host's pool keeps the first loop's socket, which Python warns about when it
            # collects it: that socket is the host transport's, not the classifier's.
            marks=pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
        ),
    ],
)
def test_one_classifier_serves_successive_event_loops(transport: Callable[[], Any]) -> None:
    """'A classifier works from any event loop (one connection pool per loop, never reused
    across loops) - never a bare RuntimeError or "Event loop is closed" noise'. A host's own
    httpx transport keeps one pool: its dead connection is a retried network error."""
    with Loopback() as server:
        judge = create_classifier(base_url=server.base_url, retry_base_ms=1, transport=transport())
        decisions = [asyncio.run(judge.evaluate(f"state {i}", QS)) for i in range(3)]
        asyncio.run(judge.aclose())
        del judge
        gc.collect()  # the host pool's dead sockets are collected HERE, under this test's filter
    assert [d.answers.keys() for d in decisions] == [{"holds"}] * 3


NEVER_CLOSED = """
import asyncio, sys
from toolnexus import NoulQuestion, create_classifier

judge = create_classifier(base_url=sys.argv[1], retry_base_ms=1)

async def main():
    print(type(await judge.evaluate("a state", {"q": NoulQuestion("Does it hold?")})).__name__)

asyncio.run(main())
asyncio.run(main())
"""

#: The same, on a loop the script closes by hand (no ``shutdown_asyncgens``): older code's way.
CLOSED_BY_HAND = """
import asyncio, sys
from toolnexus import NoulQuestion, create_classifier

judge = create_classifier(base_url=sys.argv[1], retry_base_ms=1)
for _ in range(2):
    loop = asyncio.new_event_loop()
    d = loop.run_until_complete(judge.evaluate("a state", {"q": NoulQuestion("Holds?")}))
    print(type(d).__name__)
    loop.close()
"""


@pytest.mark.parametrize(
    ("script", "flags"),
    [
        # -W default shows ResourceWarnings too: after asyncio.run, not even a socket is left.
        pytest.param(NEVER_CLOSED, ["-W", "default"], id="asyncio.run"),
        # A loop closed by hand leaves its sockets to Python (a ResourceWarning, hidden by
        # default); what aiohttp prints on every run, "Unclosed client session", must not show.
        pytest.param(CLOSED_BY_HAND, [], id="loop-closed-by-hand"),
    ],
)
def test_a_classifier_never_closed_prints_no_aiohttp_noise_at_exit(
    script: str, flags: list[str]
) -> None:
    """'A classifier that is never closed prints no aiohttp "Unclosed connector" noise at exit
    (the seeds' own examples never close it; test on a subprocess's stderr)'."""
    with Loopback() as server:
        proc = subprocess.run(
            [sys.executable, *flags, "-c", textwrap.dedent(script), server.base_url],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["Decision", "Decision"]
    assert proc.stderr == ""
