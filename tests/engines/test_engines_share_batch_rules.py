"""Issue 30 item 1: "``toolnexus.arrow`` and ``toolnexus.ray`` use the same pieces instead of
their own". The same bad input is given to ``batch`` (a library run over a Parquet file, the
CLI's run) and to ``evaluate_table``; the records (or the one-line refusal) must agree, but for
where a row is named: ``FILE:ROW`` (1-based) in batch, ``row N`` (0-based) in a table."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from serving import ThreadedServer
from toolnexus import ChoiceQuestion, NoulQuestion
from toolnexus.core.errors import ConfigError
from toolnexus.run import RunConfig, run_batch
from toolnexus.serve import ServeOptions

pa = pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
pq = pytest.importorskip("pyarrow.parquet", reason="platform: the parquet extra is not installed")

from toolnexus.arrow import evaluate_table  # noqa: E402

QUESTIONS: dict[str, Any] = {
    "urgent": NoulQuestion("Does this ticket need a human today?"),
    "desk": ChoiceQuestion(
        "Which desk should own this ticket?",
        {
            "billing": "own it here when the problem is money that moved",
            "shipping": "own it here when the problem is a parcel",
        },
    ),
}


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with ThreadedServer(ServeOptions(synthetic=True)) as s:
        yield s


def _batch(server: ThreadedServer, table: Any, tmp_path: Path, **fields: Any) -> list[Any]:
    """The records ``toolnexus batch QUESTIONS t.parquet --id-field ... --state-field ...``
    writes, in input order."""
    src, out = tmp_path / "t.parquet", tmp_path / "out.jsonl"
    pq.write_table(table, src)
    config = RunConfig(
        QUESTIONS,
        (str(src),),
        classifier={"base_url": server.url},
        output=str(out),
        ordered=True,
        **fields,
    )
    run_batch(config)
    return [json.loads(line) for line in out.read_text().splitlines()]


def _located(message: str, src: str) -> str:
    """A batch message with its ``FILE:ROW`` put as a table names the row (``row N-1``)."""
    assert message.startswith(src + ":"), message
    row, rest = message[len(src) + 1 :].split(":", 1)
    return f"row {int(row) - 1}:{rest}"


@pytest.mark.parametrize(
    ("ids", "states", "row"),
    [
        pytest.param(["a", "b"], ["x", None], 1, id="null-state"),
        pytest.param(["a", "b"], [5, 6], 0, id="number-state"),
        pytest.param(["a", None], ["x", "y"], 1, id="null-id"),
        pytest.param(["a", ""], ["x", "y"], 1, id="empty-id"),
        pytest.param([1.5, 2.5], ["x", "y"], 0, id="float-id"),
        pytest.param([True, False], ["x", "y"], 1, id="bool-id"),
    ],
)
def test_a_bad_row_is_the_error_record_batch_writes(
    server: ThreadedServer, tmp_path: Path, ids: list[Any], states: list[Any], row: int
) -> None:
    """Issue 30 item 1: evaluate_table reads its rows "through the same row/column rules as
    arrowin ... a null row gets the same record batch gives" (code and message)."""
    table = pa.table({"ticket": ids, "text": states})
    by_batch = _batch(server, table, tmp_path, id_field="ticket", state_fields=("text",))
    by_table = evaluate_table(
        table, QUESTIONS, state_column="text", id_column="ticket", base_url=server.url
    ).to_pylist()
    src = str(tmp_path / "t.parquet")
    assert len(by_batch) == len(by_table) == 2
    for ours, theirs in zip(by_table, by_batch, strict=True):
        assert (ours["error"] is None) == (theirs.get("error") is None)
    error = by_batch[row]["error"]
    assert by_table[row]["error"] == {
        "code": error["code"],
        "message": _located(error["message"], src),
    }


@pytest.mark.parametrize(
    ("column", "state_field", "flag"),
    [
        pytest.param(pa.array([b"\x89PNG", b""]), "text", None, id="binary"),
        pytest.param(pa.array([1, 2], type=pa.timestamp("s")), "text", None, id="timestamp"),
        pytest.param(pa.array([1, 2], type=pa.decimal128(5, 2)), "text", None, id="decimal"),
        pytest.param(
            pa.array([[b"a"], []], type=pa.list_(pa.binary())), "text", None, id="list-of-binary"
        ),
        pytest.param(pa.array(["x", "y"]), "body", "state", id="missing-state-column"),
    ],
)
def test_a_column_batch_refuses_is_refused_by_evaluate_table_in_the_same_words(
    server: ThreadedServer, tmp_path: Path, column: Any, state_field: str, flag: str | None
) -> None:
    """Issue 30 item 1: "a column type batch refuses is refused by evaluate_table with the same
    wording" (batch: one error line for the file; a table: one ConfigError, nothing sent)."""
    table = pa.table({"ticket": ["a", "b"], "text": column})
    (record,) = _batch(server, table, tmp_path, id_field="ticket", state_fields=(state_field,))
    src = str(tmp_path / "t.parquet")
    assert record["error"]["code"] == "malformed_input"
    assert record["error"]["message"].startswith(src + ": ")
    said_by_batch = record["error"]["message"][len(src) + 2 :]
    table = pq.read_table(src)  # the very table batch read (Parquet widens a timestamp[s])
    with pytest.raises(ConfigError) as e:
        evaluate_table(
            table, QUESTIONS, state_column=state_field, id_column="ticket", base_url=server.url
        )
    expected = (
        said_by_batch if flag is None else said_by_batch.replace("--state-field", "state_column")
    )
    assert str(e.value) == f"classifier: {expected}"


def test_struct_and_list_columns_are_the_states_batch_sends(
    server: ThreadedServer, tmp_path: Path
) -> None:
    """Issue 30 item 1 (arrowin's rule: "struct/list columns -> objects"): a struct column with
    a map inside is the same object state in both, so the same decision comes back."""
    ticket = pa.array(
        [{"subject": "refund", "tags": [("a", 1)]}, {"subject": "parcel", "tags": []}],
        type=pa.struct([("subject", pa.string()), ("tags", pa.map_(pa.string(), pa.int64()))]),
    )
    table = pa.table({"ticket": ["a", "b"], "text": ticket})
    by_batch = _batch(server, table, tmp_path, id_field="ticket", state_fields=("text",))
    by_table = evaluate_table(
        table, QUESTIONS, state_column="text", id_column="ticket", base_url=server.url
    ).to_pylist()
    assert [r["error"] for r in by_table] == [None, None]

    def shown(r: Any) -> tuple[Any, Any]:
        return r["answers"]["urgent"]["noul"], r["answers"]["desk"]["choice"]

    assert [shown(r) for r in by_table] == [shown(r) for r in by_batch]


@pytest.mark.parametrize(
    ("columns", "fields", "id_field"),
    [
        pytest.param(
            {"id": ["a", None, "", "d"], "t": ["x", "y", None, "z"]}, ("t",), "id", id="s"
        ),
        pytest.param(
            {"id": [1, None, 3], "t": [{"k": 1}, None, {"k": None}]}, ("t",), "id", id="i"
        ),
        pytest.param({"id": [1.5, 2.0], "t": ["x", "y"]}, ("t",), "id", id="float-id-per-row"),
        pytest.param({"t": [[1, 2], None, []]}, ("t",), None, id="list-no-id"),
        pytest.param({"t": [1, None]}, ("t",), None, id="number-state-per-row"),
        pytest.param(
            {"id": ["a", None], "x": [None, 1], "y": ["p", None]}, ("x", "y"), "id", id="several"
        ),
        pytest.param({"id": ["a", "b"], "x": [1, 2]}, (), "id", id="row-is-the-state"),
    ],
)
def test_the_vectorised_rows_are_what_from_object_makes_of_each_row(
    columns: dict[str, Any], fields: tuple[str, ...], id_field: str | None
) -> None:
    """The one row rule is ``items.from_object`` (a JSONL object's); ``row_block`` takes whole
    columns only where their types already decide it, so every row must come out as that rule
    makes it, row by row."""
    from toolnexus.run.arrowin import row_block
    from toolnexus.run.items import InputSpec, from_object

    table = pa.table(columns)
    spec = InputSpec(id_field=id_field, state_fields=fields)
    for index_ids in (False, True):
        block = row_block(table, spec, prefix="f:", first=1, index_ids=index_ids)
        got = [
            (block.failed[i].id, None, block.failed[i].error)
            if i in block.failed
            else (block.ids[i], block.states[i], None)
            for i in range(table.num_rows)
        ]
        want = []
        for row, values in enumerate(table.to_pylist(), 1):
            item = from_object(values, row if index_ids else f"f:{row}", f"f:{row}", spec)
            want.append((item.id, item.state, item.error))
        assert got == want
