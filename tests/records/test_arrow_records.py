"""Batch records as Arrow tables (issue 21): the typed schema, lossless both ways, DuckDB-ready."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolnexus import ChoiceQuestion, NoulQuestion, RawQuestion, ScoreQuestion
from toolnexus.records.arrow import records_to_table, run_schema, table_to_records

pa = pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
pq = pytest.importorskip("pyarrow.parquet", reason="platform: the parquet extra is not installed")

SHA = "e0444a3ebaaa015b04a5453abb7b1e7c8c00931bd9f73507cee2698eac02fd95"

QUESTIONS = {
    # Keys that are also run columns: they must not collide with them.
    "id": NoulQuestion("Is it a refund?"),
    "model": ChoiceQuestion("Which desk?", {"billing": "money moved", "tech": "product broke"}),
    "urgency": ScoreQuestion("How urgent?", ["later", {"label": "now", "description": "x"}]),
    "box": RawQuestion("box", "Where is the cat?"),
}

THRESHOLDS = {"yes": 0.8, "no": 0.2, "min_confidence": 0.6}


def _decided(item_id: Any, *, near_uniform: bool = False) -> dict[str, Any]:
    p = {"billing": 0.5, "tech": 0.5} if near_uniform else {"billing": 0.9, "tech": 0.1}
    return {
        "id": item_id,
        "questions_sha256": SHA,
        "model": "jev-1.13.0",
        "calibrated": True,
        "cached": False,
        "usage": {"input_tokens": 516, "output_tokens": 72, "cost": None},
        "thresholds": THRESHOLDS,
        "answers": {
            "id": {"type": "noul", "noul": 0.99, "band": "yes", "flags": []},
            "model": {
                "type": "choice",
                "choice": "billing",
                "probabilities": p,
                "confidence": 0.0 if near_uniform else 0.8,
                "near_uniform": near_uniform,
                "band": "uncertain" if near_uniform else "yes",
                "flags": ["near-uniform", "uncertain"] if near_uniform else [],
            },
            "urgency": {
                "type": "score",
                "score": 0.49,
                "legend": {"0": "later", "1": {"label": "now", "description": "x"}},
                "probabilities": {"0": 0.51, "1": 0.49},
                "confidence": 0.27,
                "level": 0,
                "label": "later",
                "band": "uncertain",
                "flags": ["uncertain"],
            },
            "box": {"type": "box", "box": {"top": 1, "left": 2}, "confidence": None},
        },
        "flags": ["near-uniform", "uncertain"] if near_uniform else ["uncertain"],
        "invalid": None,
    }


def _error(item_id: Any) -> dict[str, Any]:
    return {
        "id": item_id,
        "questions_sha256": SHA,
        "error": {"code": "http_503", "message": "classifier: HTTP 503 (request id r-1)"},
    }


def _expected(record: dict[str, Any]) -> dict[str, Any]:
    """What comes back: the same record, but an integer id as its text and a structured legend
    level as its JSON text (documented in the module)."""
    out = copy.deepcopy(record)
    out["id"] = str(out["id"])
    legend = out.get("answers", {}).get("urgency", {}).get("legend")
    if legend is not None:
        legend["1"] = '{"label":"now","description":"x"}'
    return out


RECORDS = [
    pytest.param(_decided("T-1"), id="decided"),
    pytest.param(_decided(7, near_uniform=True), id="integer-id-near-uniform"),
    pytest.param(_error("a\\b\nc\u2028\ud800"), id="error-hostile-id"),
]


@pytest.mark.parametrize("record", RECORDS)
def test_a_record_survives_arrow_both_ways(record: dict[str, Any]) -> None:
    table = records_to_table([record], QUESTIONS)
    assert table.schema == run_schema(QUESTIONS)
    assert list(table_to_records(table)) == [_expected(record)]


def test_an_answer_that_does_not_fit_its_question_is_kept_as_json() -> None:
    """An invalid decision (a noul question answered as a choice) loses nothing."""
    record = _decided("T-2")
    record["answers"]["id"] = {"type": "choice", "choice": "x", "probabilities": {"x": 1}}
    record["answers"]["stray"] = {"type": "noul", "noul": 0.5}
    record["invalid"] = 'classifier: invalid decision: answer "id" is a choice answer'
    record["packed"] = 20  # a member this module has no column for: kept in `extra`
    (back,) = table_to_records(records_to_table([record], QUESTIONS))
    assert back == _expected(record)


def test_the_schema_is_typed_per_question(tmp_path: Path) -> None:
    schema = run_schema(QUESTIONS)
    answers = schema.field("answers").type
    assert answers.field("id").type.field("noul").type == pa.float64()
    choice = answers.field("model").type
    assert choice.field("probabilities").type == pa.map_(pa.string(), pa.float64())
    assert choice.field("near_uniform").type == pa.bool_()
    score = answers.field("urgency").type
    assert score.field("level").type == pa.int32()
    assert score.field("label").type == pa.string()
    assert schema.field("flags").type == pa.list_(pa.string())
    assert schema.field("error").type.field("code").type == pa.string()


def test_duckdb_reads_a_run_with_typed_columns(tmp_path: Path) -> None:
    """README: SELECT id, answers.<key>.choice FROM 'run.parquet' WHERE answers.<key>.near_uniform
    — and the types DuckDB sees (DESCRIBE), a map lookup on probabilities."""
    duckdb = pytest.importorskip("duckdb", reason="platform: duckdb is not installed")
    run = tmp_path / "run.parquet"
    records = [_decided("T-1"), _decided("T-2", near_uniform=True), _error("T-3")]
    pq.write_table(records_to_table(records, QUESTIONS), run)
    con = duckdb.connect()
    rows = con.execute(
        f"SELECT id, answers.model.choice FROM '{run}' WHERE answers.model.near_uniform"
    ).fetchall()
    assert rows == [("T-2", "billing")]
    described = dict(
        (name, kind) for name, kind, *_ in con.execute(f"DESCRIBE SELECT * FROM '{run}'").fetchall()
    )
    assert described["id"] == "VARCHAR"
    assert described["flags"] == "VARCHAR[]"
    assert "MAP(VARCHAR, DOUBLE)" in described["answers"]
    (p,) = con.execute(
        f"SELECT answers.model.probabilities['billing'] FROM '{run}' WHERE id = 'T-1'"
    ).fetchone()
    assert p == 0.9
    (failed,) = con.execute(f"SELECT count(*) FROM '{run}' WHERE error.code IS NOT NULL").fetchone()
    assert failed == 1


@given(st.one_of(st.text(), st.integers(min_value=-(2**63), max_value=2**63)), st.booleans())
def test_any_id_survives_arrow(item_id: str | int, failed: bool) -> None:
    """Issue 16's round trip, for the Arrow codec: any id (newline, CR, \\, U+2028, lone
    surrogates, control characters) comes back as the same record."""
    record = _error(item_id) if failed else _decided(item_id)
    (back,) = table_to_records(records_to_table([record], QUESTIONS))
    assert back == _expected(record)


def test_a_parquet_run_is_written_atomically_and_read_by_row_group(tmp_path: Path) -> None:
    from toolnexus.records import arrow as arrowrecords

    run = tmp_path / "run.parquet"
    run.write_bytes(b"the previous run")
    records = [_decided(f"T-{i}") if i % 3 else _error(f"T-{i}") for i in range(25)]
    old = arrowrecords.ROW_GROUP_RECORDS
    arrowrecords.ROW_GROUP_RECORDS = 10
    try:
        assert arrowrecords.write_parquet_run(run, iter(records), QUESTIONS) == 25
    finally:
        arrowrecords.ROW_GROUP_RECORDS = old
    import pyarrow.parquet as pq

    assert pq.ParquetFile(run).num_row_groups == 3
    assert list(arrowrecords.iter_parquet_run(run)) == [_expected(r) for r in records]
    assert list(arrowrecords.iter_parquet_run(run, [2])) == [_expected(r) for r in records[20:]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.parquet"]


def test_a_failed_write_leaves_the_previous_run_intact(tmp_path: Path) -> None:
    from toolnexus.records import arrow as arrowrecords

    run = tmp_path / "run.parquet"
    run.write_bytes(b"the previous run")

    def records() -> Iterator[dict[str, Any]]:
        yield _decided("T-1")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        arrowrecords.write_parquet_run(run, records(), QUESTIONS)
    assert run.read_bytes() == b"the previous run"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.parquet"]


def test_an_empty_run_is_still_a_parquet_file_with_the_schema(tmp_path: Path) -> None:
    from toolnexus.records import arrow as arrowrecords

    run = tmp_path / "run.parquet"
    assert arrowrecords.write_parquet_run(run, [], QUESTIONS) == 0
    assert pq.read_schema(run) == run_schema(QUESTIONS)


@pytest.mark.parametrize(
    ("start", "length"),
    [
        pytest.param(0, None, id="whole"),
        pytest.param(1, 3, id="a-slice"),
        pytest.param(5, 0, id="empty-slice"),
    ],
)
def test_rows_built_column_by_column_are_what_to_pylist_gives(
    start: int, length: int | None
) -> None:
    """records.arrowrows: the same rows as pyarrow's own conversion, nulls (an error record's
    answers, a null map) and a sliced batch (whose child arrays ignore the slice) included."""
    from toolnexus.records.arrowrows import batch_rows

    records = [p.values[0] for p in RECORDS] * 2
    batch = records_to_table(records, QUESTIONS).combine_chunks().to_batches()[0]
    batch = batch.slice(start, length)
    assert batch_rows(batch) == batch.to_pylist()


def test_recalibrated_answers_are_typed_columns_and_come_back() -> None:
    """Issue 21 item 2: the answers struct holds 'whatever the record model holds,
    recalibrated values included': typed, not the json fallback; the record comes back."""
    record = _decided("R-1")
    record["answers"]["id"]["recalibrated"] = {"noul": 0.61, "band": "uncertain"}
    for key in ("model", "urgency"):
        record["answers"][key]["recalibrated"] = {
            "probabilities": {**record["answers"][key]["probabilities"]},
            "confidence": 0.5,
            "band": "no",
        }
    record["recalibrated"] = {"file": "maps.json", "sha256": "ab" * 32}
    table = records_to_table([record], QUESTIONS)
    (row,) = table.to_pylist()
    assert row["extra"] is None
    assert all(row["answers"][k]["json"] is None for k in ("id", "model", "urgency"))
    assert row["answers"]["id"]["recalibrated"] == {"noul": 0.61, "band": "uncertain"}
    assert row["recalibrated"] == {"file": "maps.json", "sha256": "ab" * 32}
    assert list(table_to_records(table)) == [_expected(record)]


def _shapes() -> list[dict[str, Any]]:
    """One record of every shape the conversion treats apart, for one table."""
    unfit = _decided("S-unfit")
    unfit["answers"]["id"] = {"type": "choice", "choice": "x", "probabilities": {"x": 1}}
    unfit["answers"]["stray"] = {"type": "noul", "noul": 0.5}
    unfit["packed"] = 20
    missing = _decided("S-missing")
    del missing["answers"]["model"]
    recalibrated = _decided("S-recalibrated")
    recalibrated["answers"]["id"]["recalibrated"] = {"noul": 0.61, "band": "uncertain"}
    recalibrated["recalibrated"] = {"file": "maps.json", "sha256": "ab" * 32}
    odd_by = _decided("S-odd-recalibrated")
    odd_by["recalibrated"] = {"file": 3}
    no_maps = _decided("S-no-maps")
    no_maps["answers"]["model"]["probabilities"] = None
    no_maps["answers"]["urgency"]["legend"] = None
    return [
        _error("S-error"),
        _decided("S-1"),
        unfit,
        _decided(8, near_uniform=True),
        missing,
        _error("S-\ud800"),
        recalibrated,
        odd_by,
        no_maps,
    ]


@pytest.mark.parametrize(
    "order",
    [
        pytest.param(slice(None), id="as-listed"),
        pytest.param(slice(None, None, -1), id="reversed"),
        pytest.param(slice(1, None, 2), id="every-other"),
    ],
)
def test_records_of_every_shape_in_one_table_each_come_back(order: slice) -> None:
    """records.arrowcolumns builds a table column by column: in one table mixing every shape
    (an error, a decision, an answer kept as json, a missing answer, a null map, a
    recalibrated answer, an odd member kept in extra), each row is what that record alone
    gives, and each record comes back (issue 21: 'nothing is lost')."""
    records = _shapes()[order]
    table = records_to_table(records, QUESTIONS)
    alone = pa.concat_tables([records_to_table([r], QUESTIONS) for r in records])
    assert table.equals(alone)
    assert table.to_pylist() == alone.to_pylist()
    expected = [_expected(r) for r in records]
    for record in expected:
        for answer in record.get("answers", {}).values():
            # A null map is read back as an absent member, as the reader documents.
            for name in ("probabilities", "legend"):
                if name in answer and answer[name] is None:
                    del answer[name]
    assert list(table_to_records(table)) == expected
