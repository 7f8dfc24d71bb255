"""Parquet and Arrow IPC inputs for batch (issue 21 item 1), read batch by batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolnexus.run.arrowin import read_arrow
from toolnexus.run.items import InputSpec, is_arrow_input

pa = pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
pq = pytest.importorskip("pyarrow.parquet", reason="platform: the parquet extra is not installed")


def _write(path: Path, columns: dict[str, Any], schema: Any = None) -> Path:
    pq.write_table(pa.table(columns, schema=schema), path, row_group_size=2)
    return path


def _items(arg: Path, *fields: str, id_field: str | None = "id") -> list[tuple[Any, Any, Any]]:
    spec = InputSpec(id_field=id_field, state_fields=fields)
    return [(i.id, i.state, i.error) for i in read_arrow(str(arg), spec)]


def test_a_text_column_is_a_text_state(tmp_path: Path) -> None:
    run = _write(tmp_path / "t.parquet", {"id": ["a", "b", "c"], "text": ["x", "y", "z"]})
    assert _items(run, "text") == [("a", "x", None), ("b", "y", None), ("c", "z", None)]


def test_a_struct_column_is_an_object_state_and_maps_are_objects(tmp_path: Path) -> None:
    ticket = pa.struct([("subject", pa.string()), ("tags", pa.map_(pa.string(), pa.int64()))])
    run = _write(
        tmp_path / "s.parquet",
        {
            "id": pa.array([1, 2]),
            "ticket": pa.array(
                [{"subject": "refund", "tags": [("vip", 1)]}, {"subject": "late", "tags": []}],
                type=ticket,
            ),
        },
    )
    assert _items(run, "ticket") == [
        (1, {"subject": "refund", "tags": {"vip": 1}}, None),
        (2, {"subject": "late", "tags": []}, None),
    ]


def test_several_state_fields_make_an_object_of_those_columns(tmp_path: Path) -> None:
    """`--state-field subject --state-field body` makes an object of those columns."""
    run = _write(
        tmp_path / "m.parquet",
        {"id": ["a"], "subject": ["refund"], "body": ["charged twice"], "secret": ["s"]},
    )
    assert _items(run, "subject", "body") == [
        ("a", {"subject": "refund", "body": "charged twice"}, None)
    ]


def test_without_an_id_field_ids_are_file_and_row(tmp_path: Path) -> None:
    run = _write(tmp_path / "n.parquet", {"text": ["x", "y"]})
    assert [i for i, _, _ in _items(run, "text", id_field=None)] == [f"{run}:1", f"{run}:2"]


def test_a_null_state_is_an_error_row_naming_the_row(tmp_path: Path) -> None:
    run = _write(tmp_path / "null.parquet", {"id": ["a", "b"], "text": ["x", None]})
    got = _items(run, "text")
    assert got[0] == ("a", "x", None)
    assert got[1][0] == "b" and got[1][2] is not None
    assert got[1][2][1] == f"{run}:2: a state must be a string, an object or an array, got null"


@pytest.mark.parametrize(
    "column, why",
    [
        pytest.param(pa.array([b"\x89PNG" * 10, b""]), "binary data", id="binary"),
        pytest.param(pa.array([1, 2], type=pa.timestamp("s")), "dates or times", id="timestamp"),
    ],
)
def test_a_column_that_can_never_be_a_state_is_one_line(
    tmp_path: Path, column: Any, why: str
) -> None:
    run = _write(tmp_path / "bad.parquet", {"id": ["a", "b"], "blob": column})
    (only,) = _items(run, "blob")
    assert only[0] == str(run)
    assert only[2][0] == "malformed_input"
    assert why in only[2][1] and "'blob'" in only[2][1]


def test_a_wrong_typed_state_column_fails_per_row_with_the_row(tmp_path: Path) -> None:
    run = _write(tmp_path / "int.parquet", {"id": ["a"], "text": [5]})
    ((_, _, error),) = _items(run, "text")
    assert error[1] == f"{run}:1: a state must be a string, an object or an array, got a number"


def test_a_truncated_file_is_one_line(tmp_path: Path) -> None:
    run = _write(tmp_path / "t.parquet", {"id": ["a"], "text": ["x"]})
    data = run.read_bytes()
    run.write_bytes(data[: len(data) // 2])
    (only,) = _items(run, "text")
    assert only[2][0] == "malformed_input"
    assert only[2][1].startswith(f"{run}: not a readable Parquet or Arrow file: ")
    assert "\n" not in only[2][1]


def test_a_directory_whose_schema_changes_loses_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "lake"
    folder.mkdir()
    _write(folder / "part-0.parquet", {"id": ["a", "b"], "text": ["x", "y"]})
    _write(folder / "part-1.parquet", {"id": ["c"], "body": ["z"]})
    _write(folder / "part-2.parquet", {"id": ["d"], "text": ["w"]})
    (folder / "notes.txt").write_text("not read")
    assert is_arrow_input(str(folder))
    got = _items(folder, "text")
    assert [g[0] for g in got] == ["a", "b", str(folder / "part-1.parquet"), "d"]
    assert "--state-field 'text' is not a column (id, body)" in got[2][2][1]


def test_feather_is_read_too(tmp_path: Path) -> None:
    import pyarrow.feather as feather

    run = tmp_path / "t.feather"
    feather.write_feather(pa.table({"id": ["a"], "text": ["x"]}), run)
    assert is_arrow_input(str(run))
    assert _items(run, "text") == [("a", "x", None)]


def test_a_5_mb_text_cell_is_a_state_like_any_other_as_in_jsonl(tmp_path: Path) -> None:
    big = "x" * 5_000_000
    run = _write(tmp_path / "big.parquet", {"id": ["a", "b"], "text": [big, "small"]})
    got = _items(run, "text")
    assert [g[0] for g in got] == ["a", "b"]
    assert len(got[0][1]) == 5_000_000


_READS = """\
import sys
from toolnexus.run.arrowin import read_arrow
from toolnexus.run.inputs import InputSpec
items = list(read_arrow(sys.argv[1], InputSpec(id_field="id", state_fields=("text",))))
print([i.error is None for i in items], "pyarrow.compute" in sys.modules)
"""


def test_reading_a_parquet_input_leaves_pyarrow_compute_unimported(tmp_path: Path) -> None:
    """A batch's Parquet reader finds its null and empty cells by null counts and a search of
    the ids, not with ``pyarrow.compute``, whose kernels add about 9 MiB to the run's peak
    memory (``bench/parquet.py``: 143 → 157 MiB when the reader used it). The rows that need
    the per-row rules are still found: an empty id, a null id, a null state."""
    import subprocess
    import sys

    import pyarrow as pa
    import pyarrow.parquet as pq

    # written here: pyarrow's write_table imports pyarrow.compute itself
    table = pa.table({"id": ["a", "", None, "d"], "text": ["x", "y", "z", None]})
    pq.write_table(table, tmp_path / "in.parquet")
    done = subprocess.run(
        [sys.executable, "-c", _READS, str(tmp_path / "in.parquet")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[True, False, False, False] False\n"
