"""``report/pool.in_order``: work side by side in forked processes, taken in order. A pool that
finished is joined before the report goes on, so nothing of it is left for the interpreter's
exit hook to race ("Exception ignored ... Bad file descriptor" at exit, seen on 3.11)."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest

from toolnexus.report.pool import in_order

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the fork pool is Linux's")


def _square(x: int) -> int:
    return x * x


def _nothing(*_: Any) -> None:
    return None


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    waits: list[bool] = []
    shutdown = ProcessPoolExecutor.shutdown

    def recording(self: ProcessPoolExecutor, wait: bool = True, **kw: Any) -> None:
        waits.append(wait)
        shutdown(self, wait=wait, **kw)

    monkeypatch.setattr(ProcessPoolExecutor, "shutdown", recording)
    return waits


def test_a_finished_pool_is_joined_and_its_results_come_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits = _spy(monkeypatch)
    assert list(in_order(_square, list(range(9)), 2, _square, _nothing, ())) == [
        x * x for x in range(9)
    ]
    assert waits == [True]
    assert not [t for t in threading.enumerate() if "ExecutorManager" in type(t).__name__]


def test_a_consumer_that_stops_early_joins_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    waits = _spy(monkeypatch)
    results = in_order(_square, list(range(9)), 2, _square, _nothing, ())
    assert next(results) == 0
    results.close()
    assert waits == [True]
