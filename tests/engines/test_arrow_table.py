"""The Arrow-batch function (issue 21 item 4): "the same schema as the Parquet output; rows in
input order; one error struct per failed row, never an exception for one row's failure", against
``toolnexus serve --synthetic`` on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from toolnexus import ChoiceQuestion, NoulQuestion, create_classifier
from toolnexus.core.errors import ConfigError
from toolnexus.serve import ServeOptions
from toolnexus.serve.script import ScriptedReply, ScriptedRequest

pa = pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")

from serving import ThreadedServer  # noqa: E402
from toolnexus.arrow import evaluate_table, evaluate_table_async  # noqa: E402
from toolnexus.records.arrow import run_schema  # noqa: E402

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
POISON = "ticket 7: the poisoned one"


def _fail_one(req: ScriptedRequest) -> ScriptedReply | None:
    if req.endpoint == "systemone" and req.json.get("state") == POISON:
        return ScriptedReply(400, json.dumps({"detail": "this state is refused"}).encode())
    return None


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedServer]:
    with ThreadedServer(ServeOptions(synthetic=True, script=_fail_one)) as s:
        yield s


def _options(server: ThreadedServer) -> dict[str, Any]:
    return {"base_url": server.url, "retries": 0}


def _table(n: int) -> Any:
    texts: list[str | None] = [f"ticket {i}: charged twice" for i in range(n)]
    if n > 11:
        texts[7] = POISON
        texts[11] = None
    return pa.table({"ticket": [f"t-{i:03d}" for i in range(n)], "text": texts})


def test_one_failing_row_is_one_error_row_and_order_is_kept(server: ThreadedServer) -> None:
    """Issue 21: "one failing row (a serve script that fails one state) gives one error row, the
    rest decided, order kept; a null state is an error row naming the row, not a crash"."""
    table = _table(40)
    out = evaluate_table(
        table, QUESTIONS, state_column="text", id_column="ticket", **_options(server)
    )
    assert out.schema == run_schema(create_classifier().prepare(QUESTIONS))
    rows = out.to_pylist()
    assert [r["id"] for r in rows] == table.column("ticket").to_pylist()
    failed = {r["id"]: r["error"] for r in rows if r["error"] is not None}
    assert sorted(failed) == ["t-007", "t-011"]
    assert failed["t-007"]["code"] == "backend_http"
    assert "400" in failed["t-007"]["message"]
    assert failed["t-011"] == {
        "code": "invalid_state",
        "message": "row 11: a state must be a string, an object or an array, got null",
    }
    decided = [r for r in rows if r["error"] is None]
    assert len(decided) == 38
    assert all(r["answers"]["desk"]["choice"] in ("billing", "shipping") for r in decided)
    assert all(0.0 <= r["answers"]["urgent"]["noul"] <= 1.0 for r in decided)


def test_without_an_id_column_the_id_is_the_row_index(server: ThreadedServer) -> None:
    """Issue 21 (ids): the id is id_column's value, else the row index."""
    out = evaluate_table(_table(12), QUESTIONS, state_column="text", **_options(server))
    assert out.column("id").to_pylist() == [str(i) for i in range(12)]


def test_the_sync_form_works_inside_a_running_event_loop(server: ThreadedServer) -> None:
    """A notebook or an async handler calls the sync form from inside a running loop."""

    async def inside() -> Any:
        return evaluate_table(_table(9), QUESTIONS, state_column="text", **_options(server))

    out = asyncio.run(inside())
    assert out.num_rows == 9 and out.column("error").null_count == 9


def test_the_async_form_gives_the_same_table(server: ThreadedServer) -> None:
    table = _table(20)
    sync = evaluate_table(table, QUESTIONS, state_column="text", **_options(server))
    run = evaluate_table_async(table, QUESTIONS, state_column="text", **_options(server))
    # The answers and the error codes: an error's message carries the server's request id.
    got = asyncio.run(run)
    assert got.column("answers").equals(sync.column("answers"))
    codes = [(e or {}).get("code") for e in got.column("error").to_pylist()]
    assert codes == [(e or {}).get("code") for e in sync.column("error").to_pylist()]


@pytest.mark.parametrize(
    ("kwargs", "column"),
    [
        pytest.param({"state_column": "body"}, "state_column 'body'", id="state-column"),
        pytest.param({"state_column": "text", "id_column": "nope"}, "id_column 'nope'", id="id"),
    ],
)
def test_a_missing_column_is_one_line_naming_it(kwargs: dict[str, Any], column: str) -> None:
    with pytest.raises(ConfigError) as e:
        evaluate_table(_table(3), QUESTIONS, style="static", decisions=[], **kwargs)
    assert str(e.value) == f"classifier: {column} is not a column (ticket, text)"


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"modle": "jev-1.13.0"}, id="unknown-keyword"),
        pytest.param({"retries": -1}, id="bad-value"),
        pytest.param({"style": "custom"}, id="style-missing-its-option"),
    ],
)
def test_the_keywords_are_create_classifiers_checked_by_the_same_typed_options(
    options: dict[str, Any],
) -> None:
    """Issue 21: "the keywords are create_classifier's, checked by the same typed options"."""
    with pytest.raises(ConfigError) as direct:
        create_classifier(**options)
    with pytest.raises(ConfigError) as through:
        evaluate_table(_table(3), QUESTIONS, state_column="text", **options)
    assert str(through.value) == str(direct.value)
    assert "\n" not in str(through.value)


@pytest.mark.parametrize(
    "pack", [pytest.param(0, id="zero"), pytest.param(True, id="bool"), pytest.param("4", id="str")]
)
def test_a_bad_pack_is_refused_by_the_one_rule_before_anything_is_sent(pack: Any) -> None:
    """``pack`` is ``BatchOptions``' and checked by ``packplan.check_pack`` (one rule, one
    message), before a classifier is built."""
    with pytest.raises(ConfigError) as e:
        evaluate_table(_table(3), QUESTIONS, state_column="text", pack=pack)
    assert str(e.value) == f"classifier: pack takes a whole number >= 1 or 'auto', got {pack!r}"


def _requests(server: ThreadedServer) -> int:
    with httpx.Client(trust_env=False) as client:
        statuses = client.get(server.url + "/_stats").json()["statuses"]
    return sum(statuses.values())


def test_pack_5_decides_every_row_as_pack_1_does_but_for_calibrated() -> None:
    """Issue 20 through the Arrow seam: "the decisions of --pack 1 and --pack N are equal but
    for calibrated, packed and usage"; 23 states (one null) at pack=5 are 5 requests, the null
    row is its error row as at pack 1 (a record has no ``packed`` column: ``calibrated`` is
    False for a packed decision, seed 000)."""
    texts: list[str | None] = [f"ticket {i}: charged twice" for i in range(24)]
    texts[9] = None
    table = pa.table({"ticket": [f"t-{i:03d}" for i in range(24)], "text": texts})
    with ThreadedServer(ServeOptions(synthetic=True)) as plain:
        opts = {"state_column": "text", "id_column": "ticket", "base_url": plain.url}
        alone = evaluate_table(table, QUESTIONS, pack=1, **opts)
        sent_alone = _requests(plain)
        packed = evaluate_table(table, QUESTIONS, pack=5, concurrency=2, **opts)
        sent_packed = _requests(plain) - sent_alone
    assert (sent_alone, sent_packed) == (23, 5)
    assert packed.schema == alone.schema
    rows_alone, rows_packed = alone.to_pylist(), packed.to_pylist()
    assert [r["calibrated"] for r in rows_alone] == [True] * 9 + [None] + [True] * 14
    assert [r["calibrated"] for r in rows_packed] == [False] * 9 + [None] + [False] * 14

    def but_calibrated(row: dict[str, Any]) -> dict[str, Any]:
        """The row less calibrated, usage, packed, position and the ``uncalibrated`` flag that
        calibrated=False sets."""

        def unflagged(flags: list[str] | None) -> list[str] | None:
            return None if flags is None else [f for f in flags if f != "uncalibrated"]

        # packed and position say how the state was asked (issue 31 item 1): by design they
        # differ between the two runs.
        skip = ("calibrated", "usage", "flags", "packed", "position")
        out = {k: v for k, v in row.items() if k not in skip}
        out["flags"] = unflagged(row["flags"])
        if row["answers"] is not None:
            out["answers"] = {
                key: {**a, "flags": unflagged(a["flags"])} for key, a in row["answers"].items()
            }
        return out

    decided = [r for r in rows_packed if r["error"] is None]
    assert all("uncalibrated" in r["flags"] for r in decided)

    assert [but_calibrated(r) for r in rows_packed] == [but_calibrated(r) for r in rows_alone]


def test_a_null_id_is_an_error_row_naming_the_row(server: ThreadedServer) -> None:
    """One row's bad input is that row's error, never an exception for the table: the record
    ``batch`` writes for a null id (issue 30 item 1)."""
    table = pa.table({"ticket": ["a", None, "c"], "text": ["one", "two", "three"]})
    out = evaluate_table(
        table, QUESTIONS, state_column="text", id_column="ticket", **_options(server)
    )
    rows = out.to_pylist()
    assert [r["id"] for r in rows] == ["a", "1", "c"]
    assert rows[1]["error"] == {
        "code": "malformed_input",
        "message": "row 1: id field 'ticket' missing, null or empty: an id is a non-empty "
        "string or an integer",
    }
    assert rows[0]["error"] is None and rows[2]["error"] is None
