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


def _square(_shared: object, x: int) -> int:
    return x * x


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
    assert list(in_order(_square, list(range(9)), 2, None)) == [x * x for x in range(9)]
    assert waits == [True]
    assert not [t for t in threading.enumerate() if "ExecutorManager" in type(t).__name__]


def test_a_consumer_that_stops_early_joins_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    waits = _spy(monkeypatch)
    results = in_order(_square, list(range(9)), 2, None)
    assert next(results) == 0
    results.close()
    assert waits == [True]


def _own_pid(_shared: object, _: int) -> int:
    import os

    return os.getpid()


def test_meanwhile_runs_here_once_the_workers_are_started() -> None:
    """``meanwhile()`` "runs here once the workers are started, while they work": what the
    report needs next (numpy, for the labelled metrics) is imported off the serial path, and
    after the fork, so no counting worker carries it."""
    import multiprocessing
    import os

    seen: list[tuple[int, int]] = []

    def meanwhile() -> None:
        seen.append((os.getpid(), len(multiprocessing.active_children())))

    pids = list(in_order(_own_pid, list(range(6)), 2, None, meanwhile))
    assert seen == [(os.getpid(), 2)]
    assert os.getpid() not in pids


def test_meanwhile_never_runs_with_one_job() -> None:
    calls: list[int] = []
    assert list(in_order(_square, [1, 2], 1, None, lambda: calls.append(1))) == [
        1,
        4,
    ]
    assert calls == []


_PROBE_NUMPY = """
import sys
from toolnexus.report.labels import read_labels
from toolnexus.report.reader import read_run
import toolnexus.report.reader as reader
labels = read_labels(sys.argv[2], "id") if sys.argv[2] != "-" else None
stats = read_run(sys.argv[1], labels, jobs=2, chunk_bytes=4096)
print("numpy" in sys.modules)
"""


@pytest.mark.parametrize(("labelled", "loaded"), [(True, True), (False, False)])
def test_a_labelled_run_read_in_chunks_has_numpy_loaded_by_the_end_of_the_count(
    tmp_path: Any, labelled: bool, loaded: bool
) -> None:
    """The parent imports numpy while its workers count a labelled run (and only then: an
    unlabelled report never loads it)."""
    import json
    import subprocess

    run = tmp_path / "run.jsonl"
    lines = [
        json.dumps({"id": f"t{i}", "answers": {"q": {"type": "noul", "noul": 0.25}}})
        for i in range(400)
    ]
    run.write_text("\n".join(lines) + "\n", encoding="utf-8")
    labels = tmp_path / "labels.csv"
    labels.write_text("id,q\n" + "".join(f"t{i},yes\n" for i in range(400)), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE_NUMPY, str(run), str(labels) if labelled else "-"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(loaded)


def _what_is_shared(shared: object, _: int) -> tuple[object, int]:
    import os

    return shared, os.getpid()


def test_the_shared_value_reaches_every_worker_as_it_starts() -> None:
    """``task(shared, item)``: the pool installs ``shared`` in each worker once, and a task run
    in this process (one job) gets the same value."""
    import os

    shared = {"labels": list(range(1000))}
    seen = list(in_order(_what_is_shared, list(range(6)), 2, shared))
    assert [value for value, _ in seen] == [shared] * 6
    assert os.getpid() not in {pid for _, pid in seen}
    here = list(in_order(_what_is_shared, [0, 1], 1, shared))
    assert here == [(shared, os.getpid())] * 2
