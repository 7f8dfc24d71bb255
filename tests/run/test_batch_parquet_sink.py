"""``cli/batch_parquet_sink``: a fresh Parquet run's file is written by a child process fed the
journal's lines, so the run's own thread never builds Arrow columns. The file must be the one
the run would have written itself; a child that dies mid-run costs nothing but speed (the run's
end folds the journal in); an end of input without END (the parent was killed) leaves nothing
but the journal, as a kill always did."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from toolnexus import create_classifier
from toolnexus.records import DecisionRecord, ErrorRecord, Record
from toolnexus.records.parquet import journal_line, parquet_records
from toolnexus.run.parquet import ParquetOutput
from toolnexus.run.parquet_sink import ParquetSink

pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")

QUESTIONS = create_classifier().prepare({"q": {"type": "noul", "instructions": "Refund?"}})


def _records(start: int, n: int) -> list[Record]:
    out: list[Record] = []
    for i in range(start, start + n):
        if i % 7 == 3:
            out.append(ErrorRecord(f"t{i}", "http_503", "classifier: HTTP 503 (request id r)"))
        else:
            answer = {"type": "noul", "noul": i / 1000, "band": "yes", "flags": []}
            out.append(DecisionRecord(f"t{i}\n\u2028", model="m", answers={"q": answer}))
    return out


def _objects(records: Any) -> list[dict[str, Any]]:
    return [r.to_object() for r in records]


def _in_process(tmp_path: Path, records: list[Record]) -> list[dict[str, Any]]:
    """What the run's own process writes for ``records`` (the writer a resumed run uses)."""
    from toolnexus.records.arrow import write_parquet_run

    reference = tmp_path / "reference" / "run.parquet"
    reference.parent.mkdir()
    write_parquet_run(reference, _objects(records), QUESTIONS)
    return _objects(parquet_records(str(reference)))


def _spy_finish(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    results: list[int | None] = []
    finish = ParquetSink.finish

    def recording(self: ParquetSink) -> int | None:
        results.append(finish(self))
        return results[-1]

    monkeypatch.setattr(ParquetSink, "finish", recording)
    return results


def test_the_child_writes_the_file_the_run_would_have(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    finished = _spy_finish(monkeypatch)
    path = tmp_path / "run.parquet"
    records = _records(0, 300)
    out = ParquetOutput(str(path), QUESTIONS)
    for record in records:
        out.write(record)
    out.close()
    assert out.settle(set()) == 300
    assert finished == [300]  # the child wrote it, not the fallback
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.parquet"]
    assert _objects(parquet_records(str(path))) == _in_process(tmp_path, records)


def test_a_child_that_dies_mid_run_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'A batch never loses a finished result': the end folds the journal in itself."""
    finished = _spy_finish(monkeypatch)
    path = tmp_path / "run.parquet"
    records = _records(0, 500)
    out = ParquetOutput(str(path), QUESTIONS)
    for record in records[:100]:
        out.write(record)
    sink = out._sink
    assert sink is not None and sink._proc is not None
    os.kill(sink._proc.pid, signal.SIGKILL)
    sink._proc.wait()
    for record in records[100:]:
        out.write(record)
    out.close()
    assert out.settle(set()) == 500
    assert finished == [None]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.parquet"]
    assert _objects(parquet_records(str(path))) == _in_process(tmp_path, records)


def test_an_input_that_ends_without_end_leaves_no_file(tmp_path: Path) -> None:
    """The parent's death closes the pipe without END (what ``abort`` does): the child drops
    its temporary file and never renames a half run into place."""
    path = tmp_path / "run.parquet"
    sink = ParquetSink(str(path), QUESTIONS)
    for record in _records(0, 200):
        sink.send(journal_line(record, record.to_object()))
    sink.abort()
    assert list(tmp_path.iterdir()) == []
