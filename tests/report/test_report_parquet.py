"""``report`` reads Parquet runs and Parquet labels (issue 21 item 3): "with --jobs splitting
by row group and the output identical to the last digit for any --jobs, as for JSONL". The
golden JSONL run is written as a Parquet run of four records a row group (ten groups)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from clirun import error_line, run_cli
from paths import TESTS
from toolnexus.questionfile.load import load_question_set
from toolnexus.records.arrow import records_to_table
from toolnexus.records.parquet import journal_path
from toolnexus.report.formats import parquet_group_spans
from toolnexus.report.jsonshape import to_json
from toolnexus.report.labels import read_labels
from toolnexus.report.reader import read_run, read_whole

pa = pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
pq = pytest.importorskip("pyarrow.parquet", reason="platform: the parquet extra is not installed")

INPUTS = TESTS / "golden" / "report-inputs"
RUN = INPUTS / "run.jsonl"

#: The golden run's question set, as far as the run schema needs it (each key's type).
QUESTIONS = """\
questions:
  urgent:
    type: noul
    instructions: Does this need a human today?
  desk:
    type: choice
    instructions: Which desk owns it?
    criteria:
      billing: money moved
      shipping: a parcel is late
      technical: the product errors
  impact:
    type: score
    instructions: How much of the service is down?
    criteria: [nothing, some of it, all of it]
"""


def _records(path: Path = RUN) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write_run(tmp_path: Path, records: list[dict[str, Any]], group: int = 4) -> Path:
    qfile = tmp_path / "q.yaml"
    qfile.write_text(QUESTIONS, encoding="utf-8")
    _, questions = load_question_set(qfile)
    run = tmp_path / "run.parquet"
    pq.write_table(records_to_table(records, questions), run, row_group_size=group)
    return run


def _report(stats: Any) -> Any:
    """The report's numbers, without the run's path."""
    report = to_json({"runs": stats.summary(), "questions": stats.question_reports(0.6)})
    report["runs"].pop("path", None)
    return report


def _close(a: Any, b: Any) -> bool:
    """Equal, floats within rounding: for runs whose records come in another order (a
    retried record counted where the journal holds it), so the means add in another order."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("labelled", [False, True])
def test_a_parquet_run_reports_the_same_for_any_jobs_and_as_its_jsonl(
    tmp_path: Path, labelled: bool
) -> None:
    """'--jobs splitting by row group and the output identical to the last digit for any
    --jobs'; the same numbers as the JSONL run it holds."""
    run = _write_run(tmp_path, _records())
    assert len(parquet_group_spans(str(run))) == 10
    labels = read_labels(str(INPUTS / "labels.csv")) if labelled else None
    reports = [json.dumps(_report(read_run(str(run), labels, jobs=jobs))) for jobs in (1, 2, 3)]
    assert reports[0] == reports[1] == reports[2]
    parquet = json.loads(reports[0])
    assert _report(read_whole(str(run), labels)) == parquet
    assert parquet == _report(read_whole(str(RUN), labels))


def test_the_report_command_reads_a_parquet_run_with_parquet_labels(tmp_path: Path) -> None:
    run = _write_run(tmp_path, _records())
    labels_csv = INPUTS / "labels.csv"
    rows = [line.split(",") for line in labels_csv.read_text(encoding="utf-8").splitlines()]
    header, body = rows[0], rows[1:]
    table = pa.table({c: [r[i] or None for r in body] for i, c in enumerate(header)})
    pq.write_table(table, tmp_path / "labels.parquet")
    parquet_labels = read_labels(str(tmp_path / "labels.parquet"))
    csv_labels = read_labels(str(labels_csv))
    assert parquet_labels.keys == csv_labels.keys
    # The same labels; a Parquet label is named by its row, a CSV one by its line.
    assert {k: v[1:] for k, v in parquet_labels.rows.items()} == {
        k: v[1:] for k, v in csv_labels.rows.items()
    }
    got = run_cli(
        "report", str(run), "--labels", str(tmp_path / "labels.parquet"), "--format", "json"
    )
    want = run_cli("report", str(RUN), "--labels", str(labels_csv), "--format", "json")
    assert got.code == want.code == 0, got.stderr
    assert got.out.replace(str(run), "RUN") == want.out.replace(str(RUN), "RUN")


def test_a_killed_runs_journal_is_read_after_the_file_last_record_wins(tmp_path: Path) -> None:
    """A run killed mid-write left its journal: report reads the file, then the journal."""
    records = _records()
    run = _write_run(tmp_path, records[:30])
    journal = Path(journal_path(str(run)))
    retried = {**records[2], "answers": {**records[2]["answers"]}}
    lines = [json.dumps(r) for r in [*records[30:], retried]]
    journal.write_text("\n".join(lines) + "\n" + '{"id": "cut', encoding="utf-8")
    assert parquet_group_spans(str(run)) == []
    assert _close(_report(read_run(str(run), jobs=2)), _report(read_run(str(RUN))))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(
            lambda p: p.write_bytes(p.read_bytes()[:-100]),
            "not a readable Parquet run",
            id="truncated",
        ),
        pytest.param(
            lambda p: pq.write_table(pa.table({"id": ["a"], "text": ["x"]}), p),
            "not a batch Parquet run: no 'answers' column",
            id="not-a-run",
        ),
    ],
)
def test_a_parquet_file_that_is_no_run_is_one_line(tmp_path: Path, make: Any, message: str) -> None:
    run = _write_run(tmp_path, _records())
    make(run)
    ran = run_cli("report", str(run))
    assert ran.code == 2
    assert error_line(ran.stderr).startswith(f"{run}: {message}")


def _varied_records(n: int, seed: int, mixed: bool) -> list[dict[str, Any]]:
    """Records as a long real run holds them: error records, a key left unanswered, options
    in another order or one more of them, a pick outside its probabilities, a missing
    confidence, probabilities of many digits, flags (not ``mixed``: every record names the
    same options, a shape counted a column at a time)."""
    import random

    rng = random.Random(seed)

    def split(names: list[str]) -> dict[str, float]:
        raw = [rng.random() ** 2 for _ in names]
        return {k: v / sum(raw) for k, v in zip(names, raw, strict=True)}

    records: list[dict[str, Any]] = []
    for i in range(n):
        if 1000 <= i < 1500 and rng.random() < 0.02:  # the errors in one row group
            records.append({"id": f"t{i}", "error": {"code": "timeout", "message": "slow"}})
            continue
        desks = ["billing", "shipping", "technical"]
        if mixed and rng.random() < 0.1:
            desks.append("legal")
        if mixed and rng.random() < 0.2:
            rng.shuffle(desks)
        desk = split(desks)
        levels = split(["0", "1", "2"])
        p = rng.random()
        answers: dict[str, Any] = {
            "urgent": {"type": "noul", "noul": p, "band": "yes" if p > 0.8 else None,
                       "flags": ["uncertain"] if p < 0.5 else []},
            "desk": {"type": "choice", "choice": max(desk, key=desk.__getitem__)
                     if not mixed or rng.random() < 0.95 else "other", "probabilities": desk,
                     "confidence": None if rng.random() < 0.05 else rng.random(),
                     "near_uniform": rng.random() < 0.1, "band": None,
                     "flags": rng.choice([[], ["near-uniform"], ["invalid"]])},
            "impact": {"type": "score", "score": sum(int(k) * v for k, v in levels.items()),
                       "legend": {"0": "nothing", "1": "some of it", "2": "all of it"},
                       "probabilities": levels, "confidence": rng.random(),
                       "level": int(max(levels, key=levels.__getitem__)), "label": None,
                       "band": None, "flags": []},
        }  # fmt: skip
        if mixed and rng.random() < 0.05:
            del answers["impact"]
        records.append({"id": f"t{i}", "model": rng.choice(["m1", "m2"]), "calibrated": True,
                        "cached": rng.random() < 0.2, "answers": answers, "flags": [],
                        "usage": {"input_tokens": rng.randrange(900), "output_tokens": 9,
                                  "cost": None}})  # fmt: skip
        if answers["desk"]["choice"] == "other":
            # issue 42 item 5: only a record batch found invalid holds a pick outside its
            # probabilities (report refuses one whose invalid is null)
            records[-1]["invalid"] = "answer 'desk': chose 'other', which was not offered"
    return records


def _spy_count_columns(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Per row group read, whether the column path counted it (``count_columns`` not None)."""
    from toolnexus.report import columns

    counted: list[bool] = []
    count_columns = columns.count_columns

    def spy(path: str, span: Any, stats: Any) -> Any:
        ids = count_columns(path, span, stats)
        counted.append(ids is not None)
        return ids

    monkeypatch.setattr(columns, "count_columns", spy)
    return counted


@pytest.mark.parametrize("mixed", [True, False], ids=["mixed", "one-shape"])
@pytest.mark.parametrize("labelled", [False, True], ids=["unlabelled", "labelled"])
def test_a_long_parquet_run_reports_its_jsonl_runs_every_digit(
    tmp_path: Path, labelled: bool, mixed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21: "report on it equal to report on the JSONL output of the same run", to the
    last digit, however each is cut (JSONL chunks by bytes, Parquet by row group) and for any
    --jobs; plain row groups are counted from their columns, one with an error record on the
    record path, and both give the same numbers; within the first, a column of one shape is
    counted whole (report/vectorized.py), another row by row."""
    from toolnexus.report import columns

    records = _varied_records(3000, seed=21, mixed=mixed)
    run = _write_run(tmp_path, records, group=500)
    jsonl = tmp_path / "run.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    labels = None
    if labelled:
        lines = ["id,urgent,desk,impact"] + [
            f"t{i},{'yes' if i % 3 else 'no'},{('billing', 'shipping', '')[i % 3]},{i % 3}"
            for i in range(0, 3000, 2)
        ]
        (tmp_path / "labels.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        labels = read_labels(str(tmp_path / "labels.csv"))
    counted = _spy_count_columns(monkeypatch)
    whole_columns: list[bool] = []
    count_column = columns.count_column

    def spy_column(*args: Any) -> bool:
        whole_columns.append(count_column(*args))
        return whole_columns[-1]

    monkeypatch.setattr(columns, "count_column", spy_column)
    want = _report(read_whole(str(jsonl), labels))
    assert _report(read_run(str(jsonl), labels, jobs=2, chunk_bytes=100_000)) == want
    assert _report(read_run(str(run), labels, jobs=1)) == want
    assert True in counted and False in counted, "both paths counted a row group"
    assert True in whole_columns, "a column counted whole"
    assert (False in whole_columns) == mixed, "a mixed column counted row by row"
    assert _report(read_run(str(run), labels, jobs=3)) == want


def test_a_plain_row_group_whose_usage_has_a_cost_is_still_counted_from_its_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run fields' fast path takes two token counts and no cost; a group with costs keeps
    the column path for its answers and counts each row's usage as ``count_record`` does. Any
    error in the column path sends the group to the record path (``count_columns``: None), so
    the path taken is asserted, not only the digits."""

    records = _varied_records(1000, seed=5, mixed=False)
    for r in records:
        r["usage"]["cost"] = 0.0025
    run = _write_run(tmp_path, records, group=250)
    jsonl = tmp_path / "run.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    counted = _spy_count_columns(monkeypatch)
    assert _report(read_run(str(run), None, jobs=1)) == _report(read_whole(str(jsonl)))
    assert counted == [True] * 4
