"""A long JSONL run is counted in chunks, side by side in processes (report/reader.py).

The rules under test, from the reader's docstring: "Where the cuts fall depends on the file
alone, never on jobs: every number of a report is the same on one CPU or many"; "an id seen
twice: the LAST record of an id counts"; "a question whose type differs between chunks: the
one-piece read names the line"; "A problem in a chunk is named at its line in the file; of
several, the first in file order." The chunk size is made small here so that the 40 records
of the golden run make a dozen chunks.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from clirun import error_line, run_cli
from paths import TESTS
from toolnexus.report.compare import compare_runs
from toolnexus.report.inputs import ReportInputError
from toolnexus.report.jsonshape import to_json
from toolnexus.report.labels import read_labels
from toolnexus.report.reader import CHUNK_BYTES, _count_span, _spans, read_run, read_whole
from toolnexus.report.runs import iter_records

INPUTS = TESTS / "golden" / "report-inputs"
RUN = str(INPUTS / "run.jsonl")
AFTER = str(INPUTS / "after.jsonl")
SMALL = 3000  # bytes: about four records a chunk


def _report(stats: Any) -> Any:
    return to_json({"runs": stats.summary(), "questions": stats.question_reports(0.6)})


def _close(a: Any, b: Any) -> bool:
    """Equal, floats within rounding (a chunked sum adds in another order than one pass)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def test_the_cuts_fall_at_line_ends_and_cover_the_file() -> None:
    data = Path(RUN).read_bytes()
    spans = _spans(RUN, SMALL)
    assert len(spans) > 8
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        assert end == start and data[start - 1 : start] == b"\n"
    assert [span[:2] for span in _spans(RUN, CHUNK_BYTES)] == [(0, len(data))]


def test_a_line_longer_than_a_chunk_stays_whole(tmp_path: Path) -> None:
    lines = Path(RUN).read_text(encoding="utf-8").splitlines()
    long = json.loads(lines[1])
    long["padding"] = "x" * (5 * SMALL)
    run = tmp_path / "run.jsonl"
    run.write_text("\n".join([lines[0], json.dumps(long), *lines[2:]]) + "\n", encoding="utf-8")
    data = run.read_bytes()
    spans = _spans(str(run), SMALL)
    assert all(data[span.end - 1 : span.end] == b"\n" for span in spans)
    assert _close(_report(read_run(str(run), chunk_bytes=SMALL)), _report(read_whole(str(run))))


@pytest.mark.parametrize("labelled", [False, True])
def test_the_numbers_do_not_depend_on_the_number_of_processes(labelled: bool) -> None:
    labels = read_labels(str(INPUTS / "labels.csv")) if labelled else None
    reports = [
        json.dumps(_report(read_run(RUN, labels, jobs=jobs, chunk_bytes=SMALL)))
        for jobs in (1, 2, 3)
    ]
    assert reports[0] == reports[1] == reports[2]  # to the last digit
    whole = _report(read_whole(RUN, labels))
    assert _close(json.loads(reports[0]), whole)


def test_two_runs_compare_alike_in_chunks() -> None:
    labels = read_labels(str(INPUTS / "labels.csv"))

    def comparison(**kw: Any) -> Any:
        a = read_run(RUN, labels, snapshot=True, **kw)
        assert a.snapshots is not None
        b = read_run(AFTER, labels, against=a.snapshots, **kw)
        assert b.deltas is not None
        qa, qb = a.question_reports(), b.question_reports()
        return to_json(compare_runs(a.snapshots, b.deltas, qa, qb, (RUN, AFTER)))

    chunked = comparison(jobs=2, chunk_bytes=SMALL)
    assert chunked == comparison(jobs=1, chunk_bytes=SMALL)
    assert _close(chunked, comparison(chunk_bytes=CHUNK_BYTES))


def _lines() -> list[str]:
    return Path(RUN).read_text(encoding="utf-8").splitlines()


def test_a_repeated_id_in_another_chunk_counts_its_last_record(tmp_path: Path) -> None:
    lines = _lines()
    retried = json.loads(lines[2])
    retried["answers"]["urgent"]["noul"] = 0.99
    retried["answers"]["urgent"]["band"] = "yes"
    run = tmp_path / "run.jsonl"
    run.write_text("\n".join([*lines, json.dumps(retried)]) + "\n", encoding="utf-8")
    chunked = _report(read_run(str(run), jobs=2, chunk_bytes=SMALL))
    assert chunked == _report(read_whole(str(run)))
    assert chunked["runs"]["records"] == 40


@pytest.mark.parametrize("where", [3, 25, 39])
def test_a_bad_line_in_any_chunk_is_named_at_its_line_in_the_file(
    tmp_path: Path, where: int
) -> None:
    lines = _lines()
    run = tmp_path / "run.jsonl"
    for bad, reason in (
        ("{not json", "not a JSON record"),
        ('{"id": "x", "answers": []}', "not a batch record: answers is []"),
        ('{"id": "x"}', "not a batch record: missing 'answers'"),
    ):
        run.write_text("\n".join([*lines[: where - 1], bad, *lines[where:]]) + "\n")
        with pytest.raises(ReportInputError) as chunked:
            read_run(str(run), jobs=2, chunk_bytes=SMALL)
        with pytest.raises(ReportInputError) as whole:
            read_whole(str(run))
        assert str(chunked.value) == str(whole.value)
        assert str(chunked.value).startswith(f"{run}:{where}: {reason}")


def test_of_two_bad_lines_the_first_in_the_file_is_named(tmp_path: Path) -> None:
    lines = _lines()
    lines[5] = "{not json"
    lines[33] = '{"id": "x"}'
    run = tmp_path / "run.jsonl"
    run.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ReportInputError, match=f"^{run}:6: not a JSON record"):
        read_run(str(run), jobs=3, chunk_bytes=SMALL)


def test_a_question_that_changes_type_in_a_later_chunk_is_named_at_its_line(
    tmp_path: Path,
) -> None:
    lines = _lines()
    record = json.loads(lines[30])
    record["answers"]["urgent"] = record["answers"]["desk"]
    lines[30] = json.dumps(record)
    run = tmp_path / "run.jsonl"
    run.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ReportInputError) as e:
        read_run(str(run), jobs=2, chunk_bytes=SMALL)
    assert str(e.value) == (
        f"{run}:31: not a batch record: answer 'urgent' is 'choice' here but noul in earlier "
        "records"
    )


def test_a_bad_label_met_in_a_later_chunk_names_the_labels_line(tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    text = (INPUTS / "labels.csv").read_text(encoding="utf-8").splitlines()
    row = text[36].split(",")
    row[1] = "maybe"
    text[36] = ",".join(row)
    labels.write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(ReportInputError) as e:
        read_run(RUN, read_labels(str(labels)), jobs=2, chunk_bytes=SMALL)
    assert str(e.value).startswith(f"{labels}:37: question 'urgent' is noul")


def test_a_last_line_cut_by_a_kill_is_skipped_in_the_last_chunk(tmp_path: Path) -> None:
    data = Path(RUN).read_bytes()
    run = tmp_path / "run.jsonl"
    run.write_bytes(data + data.splitlines()[0][:50].replace(b'"t0"', b'"t99"'))
    chunked = _report(read_run(str(run), jobs=2, chunk_bytes=SMALL))
    assert chunked["runs"]["records"] == 40
    assert chunked == _report(read_run(str(run), jobs=1, chunk_bytes=SMALL))


# --- the CLI, with the real chunk size -------------------------------------------------------


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The golden run repeated under fresh ids past three chunks (about 14 MiB)."""
    lines = _lines()
    path = tmp_path_factory.mktemp("long") / "run.jsonl"
    copies = 3 * CHUNK_BYTES // Path(RUN).stat().st_size + 2
    with open(path, "w", encoding="utf-8") as f:
        for c in range(copies):
            for line in lines:
                f.write(line.replace('"id":"t', f'"id":"c{c}-t', 1) + "\n")
    assert len(_spans(str(path), CHUNK_BYTES)) >= 3
    return path


def test_jobs_change_nothing_in_the_output(long_run: Path) -> None:
    one = run_cli("report", str(long_run), "--format", "json", "--jobs", "1")
    two = run_cli("report", str(long_run), "--format", "json", "--jobs", "2")
    assert (one.code, two.code) == (0, 0), one.stderr + two.stderr
    assert one.out == two.out
    assert json.loads(one.out)["records"] == long_run.read_bytes().count(b"\n")


@pytest.mark.parametrize("value", ["0", "65", "-1"])
def test_jobs_out_of_range_is_a_usage_error(value: str) -> None:
    ran = run_cli("report", RUN, "--jobs", value)
    assert ran.code == 2
    assert error_line(ran.stderr) == f"--jobs takes 1..64 processes, got {value}"


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


@pytest.mark.skipif(
    not Path("/proc/self/task").exists(), reason="platform: needs /proc to see the workers"
)
def test_ctrl_c_during_a_parallel_report_exits_130_in_one_line(long_run: Path) -> None:
    """The terminal sends SIGINT to the whole process group: the workers ignore it, the parent
    answers it (exit 130, one line, no traceback from anyone), and no worker outlives it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolnexus", "report", str(long_run), "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    workers: list[int] = []
    while proc.poll() is None and len(workers) < 2 and time.monotonic() < deadline:
        workers = _children(proc.pid)
    if proc.poll() is not None:
        pytest.fail("the report ended before its workers could be seen")
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    text = err.decode()
    assert "Traceback" not in text and len(text.strip().splitlines()) == 1, text
    for pid in workers:  # gone, or a zombie of a parent that is gone
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.01)
        assert not _alive(pid), f"worker {pid} outlived the report"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_run_replaced_while_its_chunks_are_read_is_an_error(tmp_path: Path) -> None:
    """batch compacts its output by renaming a new file over it: a chunk measured in the old
    file and read from the new one would cut records anywhere. Refused, never counted."""
    run = tmp_path / "run.jsonl"
    run.write_bytes(Path(RUN).read_bytes())
    spans = _spans(str(run), SMALL)
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(b"\n" * 7 + Path(RUN).read_bytes())
    replacement.replace(run)
    with pytest.raises(ReportInputError, match="replaced or cut short while it was read"):
        list(iter_records(str(run), "jsonl", spans[1]))
    run.write_bytes(Path(RUN).read_bytes()[: spans[1].end - 1])  # same file, cut short
    spans = [span._replace(file=spans[0].file) for span in spans]
    with pytest.raises(ReportInputError, match="replaced or cut short"):
        list(iter_records(str(run), "jsonl", spans[1]))


_PARENT = os.getpid()


def _die_on_the_second_chunk(count: Any, span: Any) -> Any:
    from toolnexus.report import reader

    if os.getpid() != _PARENT and span.start and span.start == reader._spans(RUN, SMALL)[1].start:
        os._exit(9)  # as the OOM killer would end it: no exception, no result
    return _count_span(count, span)


@pytest.mark.skipif(sys.platform != "linux", reason="platform: the workers fork on Linux only")
def test_a_worker_that_dies_leaves_the_report_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lost worker (BrokenProcessPool) is no lost report: the chunks not yet counted are
    counted in the parent, to the same digits."""
    from toolnexus.report import reader

    monkeypatch.setattr(reader, "_count_span", _die_on_the_second_chunk)
    labels = read_labels(str(INPUTS / "labels.csv"))
    survived = _report(read_run(RUN, labels, jobs=2, chunk_bytes=SMALL))
    monkeypatch.undo()
    assert survived == _report(read_run(RUN, labels, jobs=1, chunk_bytes=SMALL))


@pytest.mark.skipif(sys.platform != "linux", reason="platform: the workers fork on Linux only")
def test_questions_finished_side_by_side_report_every_digit_of_one_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ "Outputs identical to the last digit for any --jobs": each question's metrics computed
    in its own worker (report/finish.py) are those of one process, in the run's key order."""
    from toolnexus.report import finish

    monkeypatch.setattr(finish, "PARALLEL_LABELLED_MIN", 0)
    labels = read_labels(str(INPUTS / "labels.csv"))
    stats = read_run(RUN, labels, jobs=1)
    serial = stats.question_reports(0.6, True)
    for jobs in (1, 2, 3):
        side_by_side = finish.question_reports(stats, 0.6, True, jobs)
        assert list(side_by_side) == list(serial)
        assert json.dumps(to_json(side_by_side)) == json.dumps(to_json(serial))


def test_a_run_cut_in_chunks_reports_the_means_of_one_piece() -> None:
    """Issue 21: a run's report does not depend on where it was cut (JSONL chunks by bytes,
    Parquet by row group): the mean confidence and score are one sum in record order, not
    per-chunk sums added."""
    labels = read_labels(str(INPUTS / "labels.csv"))
    whole = json.dumps(_report(read_whole(RUN, labels)))
    for chunk_bytes in (SMALL, 2 * SMALL + 1, 5 * SMALL):
        assert json.dumps(_report(read_run(RUN, labels, jobs=1, chunk_bytes=chunk_bytes))) == whole
