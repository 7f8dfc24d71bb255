"""Issue 30 item 1: Ray's ``previous=`` is ``batch --resume``'s rule ("same notion of decided:
ok records, and errors retried only as --retry-errors would; same schema_version handling;
same errors for an unreadable previous run"). The same Parquet run is given to ``batch``
(a library run continuing it) and to ``evaluate_dataset`` (read on the driver: no Ray job)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from serving import ThreadedServer
from toolnexus import ChoiceQuestion, NoulQuestion, create_classifier
from toolnexus.core.canonical import questions_sha256
from toolnexus.core.errors import ConfigError, RunError
from toolnexus.records.model import SCHEMA_VERSION
from toolnexus.run import RunConfig, run_batch
from toolnexus.serve import ServeOptions
from toolnexus.serve.script import ScriptedReply, ScriptedRequest

pa = pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
pytest.importorskip("ray", reason="platform: the ray extra is not installed")

import pyarrow.parquet as pq  # noqa: E402

from toolnexus.ray import decided_ids, evaluate_dataset  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")

QUESTIONS: dict[str, Any] = {"urgent": NoulQuestion("Does this ticket need a human today?")}
OTHER: dict[str, Any] = {
    "desk": ChoiceQuestion(
        "Which desk should own this ticket?",
        {"billing": "money that moved", "shipping": "a parcel"},
    )
}
FAIL = "ticket 3: help"


class Counting:
    """A serve script that keeps the states it was sent and fails ``FAIL`` while ``failing``."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.failing = True

    def __call__(self, req: ScriptedRequest) -> ScriptedReply | None:
        if req.endpoint != "systemone":
            return None
        self.seen.append(req.json["state"])
        if self.failing and req.json["state"] == FAIL:
            return ScriptedReply(400, json.dumps({"detail": "this state is refused"}).encode())
        return None


@pytest.fixture(scope="module")
def script() -> Counting:
    return Counting()


@pytest.fixture(scope="module")
def server(script: Counting) -> Iterator[ThreadedServer]:
    with ThreadedServer(ServeOptions(synthetic=True, script=script)) as s:
        yield s


def _inputs(tmp_path: Path, n: int) -> Path:
    src = tmp_path / f"in-{n}.jsonl"
    rows = [json.dumps({"id": f"T-{i}", "text": f"ticket {i}: help"}) for i in range(n)]
    src.write_text("\n".join(rows) + "\n")
    return src


def _batch(
    server: ThreadedServer, src: Path, out: Path, questions: Any = None, **more: Any
) -> None:
    run_batch(
        RunConfig(
            questions or QUESTIONS,
            (str(src),),
            classifier={"base_url": server.url, "retries": 0},
            id_field="id",
            state_fields=("text",),
            output=str(out),
            fmt="parquet",
            **more,
        )
    )


@pytest.fixture(scope="module")
def first_run(
    server: ThreadedServer, script: Counting, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A Parquet run of T-0..T-5 in which T-3 failed (T-6..T-9 never ran), made once: a run
    that starts a Parquet file starts its writer process, which is most of its time."""
    where = tmp_path_factory.mktemp("first")
    out = where / "run.parquet"
    script.failing = True
    _batch(server, _inputs(where, 6), out)
    script.failing = False
    return out


@pytest.fixture
def earlier(first_run: Path, script: Counting, tmp_path: Path) -> Path:
    """This test's own copy of ``first_run`` (tests spoil it or continue it)."""
    script.seen.clear()
    return Path(shutil.copy(first_run, tmp_path / "run.parquet"))


@pytest.mark.parametrize(
    "retry_errors",
    [pytest.param(False, id="resume"), pytest.param(True, id="retry-errors")],
)
def test_previous_skips_exactly_the_ids_batch_resume_skips(
    server: ThreadedServer, script: Counting, earlier: Path, tmp_path: Path, retry_errors: bool
) -> None:
    """What ``batch --resume [--retry-errors]`` sends over a run is what Ray's ``previous=``
    does not skip: decisions are decided, errors only without ``retry_errors``."""
    again = tmp_path / "again.parquet"
    shutil.copy(earlier, again)
    src = _inputs(tmp_path, 10)
    _batch(server, src, again, resume=True, retry_errors=retry_errors)
    sent_by_batch = {s.split(":")[0].removeprefix("ticket ") for s in script.seen}

    qs = create_classifier().prepare(QUESTIONS)
    skipped = set(decided_ids(earlier, questions_sha256(qs), retry_errors=retry_errors).to_pylist())
    not_skipped = {f"T-{i}" for i in range(10)} - skipped
    assert not_skipped == {f"T-{n}" for n in sent_by_batch}
    assert ("T-3" in not_skipped) is retry_errors


def _newer(run: Path) -> None:
    table = pq.read_table(run)
    at = table.schema.get_field_index("schema_version")
    versions = pa.array([SCHEMA_VERSION + 1] * table.num_rows, pa.int64())
    pq.write_table(table.set_column(at, "schema_version", versions), run)


def _truncate(run: Path) -> None:
    data = run.read_bytes()
    run.write_bytes(data[: len(data) // 2])


def _journal_newer(run: Path) -> None:
    journal = run.parent / f".{run.name}.journal"
    record = {"id": "T-9", "schema_version": 9, "error": {"code": "x", "message": "y"}}
    journal.write_text(json.dumps(record) + "\n")


@pytest.mark.parametrize(
    ("spoil", "questions"),
    [
        pytest.param(_newer, QUESTIONS, id="newer-schema-version"),
        pytest.param(_journal_newer, QUESTIONS, id="newer-record-in-its-journal"),
        pytest.param(None, OTHER, id="another-question-set"),
        pytest.param(_truncate, QUESTIONS, id="not-a-readable-parquet-file"),
    ],
)
def test_a_run_batch_resume_refuses_is_refused_by_previous_in_the_same_words(
    server: ThreadedServer, earlier: Path, tmp_path: Path, spoil: Any, questions: Any
) -> None:
    """Issue 30 item 1: "same schema_version handling; same errors for an unreadable previous
    run": ``--output RUN: cannot resume...`` and ``previous=RUN: cannot resume...`` say the
    same after the name of the file."""
    if spoil is not None:
        spoil(earlier)
    with pytest.raises(RunError) as by_batch:
        _batch(server, _inputs(tmp_path, 10), earlier, questions, resume=True)
    with pytest.raises(ConfigError) as by_ray:
        evaluate_dataset(
            None,
            questions,
            state_column="text",
            id_column="id",
            previous=earlier,
            base_url=server.url,
        )
    batch_said = str(by_batch.value).removeprefix(f"--output {earlier}")
    ray_said = str(by_ray.value).removeprefix(f"classifier: evaluate_dataset: previous={earlier}")
    assert batch_said.startswith(": cannot resume")
    assert ray_said == batch_said


def test_a_directory_of_parquet_parts_decides_as_the_one_file(
    earlier: Path, tmp_path: Path
) -> None:
    """Ray Data writes a run as a directory of parts: its ``.parquet`` files are the run (as a
    directory input is read: a README beside them is not); a missing path is one line."""
    sha = questions_sha256(create_classifier().prepare(QUESTIONS))
    table = pq.read_table(earlier)
    parts = tmp_path / "run"
    parts.mkdir()
    pq.write_table(table.slice(0, 2), parts / "part-0.parquet")
    pq.write_table(table.slice(2), parts / "part-1.parquet")
    (parts / "README").write_text("not a run\n")
    assert sorted(decided_ids(parts, sha).to_pylist()) == [f"T-{i}" for i in range(6)]
    assert sorted(decided_ids(parts, sha, retry_errors=True).to_pylist()) == [
        f"T-{i}" for i in (0, 1, 2, 4, 5)
    ]
    with pytest.raises(ConfigError) as e:
        decided_ids(tmp_path / "nope", sha)
    assert str(e.value) == (
        f"classifier: evaluate_dataset: previous={tmp_path / 'nope'}: cannot resume from it: no "
        "such file or directory; give the Parquet output of an earlier run"
    )


def test_a_batch_runs_journal_counts_as_resume_counts_it(earlier: Path) -> None:
    """A ``batch -o run.parquet`` killed with ``kill -9`` leaves its last records in
    ``.run.parquet.journal``; ``--resume`` reads them after the file, and so does ``previous=``."""
    from toolnexus.records.arrow import table_to_records

    sha = questions_sha256(create_classifier().prepare(QUESTIONS))
    decided_row = next(iter(table_to_records(pq.read_table(earlier).slice(0, 1))))
    journal = earlier.parent / f".{earlier.name}.journal"
    lines = [json.dumps({**decided_row, "id": "T-8"}), json.dumps({**decided_row, "id": "T-3"})]
    journal.write_text("\n".join(lines) + "\n")
    # T-3's error in the file is superseded by the journal's decision: decided even when
    # errors are retried; T-8 is decided by the journal alone.
    got = set(decided_ids(earlier, sha, retry_errors=True).to_pylist())
    assert got == {f"T-{i}" for i in (0, 1, 2, 3, 4, 5, 8)}
