"""The Arrow-batch seam (issue 21 item 4): one Arrow table of states in, one table of records
out, in the typed schema of a Parquet run (``records.arrow.run_schema``). Every engine calls
this: the Ray Data adapter (``ray.py``) maps it over a Dataset's blocks.

::

    from toolnexus.arrow import evaluate_table

    out = evaluate_table(tickets, QUESTIONS, state_column="text", id_column="id",
                         api_key_env="TYPESAFE_API_KEY")

Promises:

- **Rows in input order**, one output row per input row; the id is ``id_column``'s value, else
  the row's index in ``table``.
- **One row's failure is one error row** (``error: {code, message}``, the codes of ``batch``'s
  records), never an exception: a null state, a null id, a state the library refuses, a reply
  that fails validation, an HTTP failure after the retries. What does raise, before anything is
  sent, is what would fail every row: an unknown option (the same ``ConfigError`` as
  ``create_classifier``), a bad question set, a missing column, ``concurrency`` out of range.
- The keywords are ``create_classifier``'s, checked by it, so the two can never disagree.
- ``pack`` and ``admission`` are ``config.BatchOptions``' (checked there, by ``packplan``'s one
  rule for ``pack``): ``pack=N`` asks N states per request (``packed.py``: a packed decision
  says ``calibrated=False``); ``admission`` members (a limiter shared by workers, a spend
  budget) see every request the batch sends, one ticket per request, estimated from its bytes.

pyarrow is the ``parquet`` extra and is imported only here and in ``records.arrow``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .canonical import questions_sha256
from .classifier import Classifier
from .config import BatchOptions
from .defaults import DEFAULT_BATCH_CONCURRENCY
from .errors import ConfigError
from .factory import create_classifier
from .questions import Question
from .records import ErrorRecord
from .records.arrow import records_to_table, require_pyarrow
from .run.stream import result_record
from .sync._loop import background

if TYPE_CHECKING:
    import pyarrow as pa

    from .packplan import PackSize
    from .scheduler import Admission

__all__ = ["evaluate_rows", "evaluate_table", "evaluate_table_async"]

#: The record code of a row with no state or no id: the one ``batch`` gives a state the
#: library refuses (``failures.py``), so a reader groups them with it.
_NULL_CODE = "invalid_state"


def _column(table: Any, name: str, what: str) -> list[Any]:
    if name not in table.column_names:
        raise ConfigError(
            f"classifier: {what} {name!r} is not a column of the table; its columns: "
            + ", ".join(repr(c) for c in table.column_names)
        )
    values: list[Any] = table.column(name).to_pylist()
    return values


def _as_table(table: Any) -> pa.Table:
    pa = require_pyarrow()
    if isinstance(table, pa.RecordBatch):
        return pa.Table.from_batches([table])
    if not isinstance(table, pa.Table):
        raise ConfigError(
            f"classifier: evaluate_table takes a pyarrow.Table, got {type(table).__name__}"
        )
    return table


async def evaluate_rows(
    classifier: Classifier,
    table: Any,
    questions: Mapping[str, Any],
    *,
    state_column: str,
    id_column: str | None = None,
    options: BatchOptions | None = None,
) -> pa.Table:
    """:func:`evaluate_table_async` with a classifier the caller owns (and closes): what a
    long-lived engine worker calls for each batch, so its connection pool outlives a batch.
    ``options``: the batch's (concurrency, pack, admission), default ``BatchOptions()``."""
    options = options if options is not None else BatchOptions()
    table = _as_table(table)
    qs: dict[str, Question] = classifier.prepare(questions)
    states = _column(table, state_column, "state_column")
    ids: list[Any] = (
        list(range(len(states))) if id_column is None else _column(table, id_column, "id_column")
    )
    sha = questions_sha256(qs)
    records: list[dict[str, Any] | None] = [None] * len(states)
    pending: list[tuple[int, Any]] = []
    for i, (item_id, state) in enumerate(zip(ids, states, strict=True)):
        if item_id is None:
            message = f"row {i}: the id column {id_column!r} is null; give every row an id"
            records[i] = ErrorRecord(str(i), _NULL_CODE, message, sha).to_object()
        elif state is None:
            message = (
                f"row {i} (id {item_id!r}): the state column {state_column!r} is null; "
                "give every row a state"
            )
            records[i] = ErrorRecord(item_id, _NULL_CODE, message, sha).to_object()
        else:
            pending.append((i, state))
    if pending:
        async for i, result in classifier.evaluate_stream(pending, qs, options=options):
            # The run's one result -> record rule: the codes and bytes of batch's records.
            records[i] = result_record(ids[i], result, qs, sha).to_object()
    return records_to_table((r for r in records if r is not None), qs)


async def evaluate_table_async(
    table: Any,
    questions: Mapping[str, Any],
    *,
    state_column: str,
    id_column: str | None = None,
    pack: PackSize = 1,
    concurrency: int = DEFAULT_BATCH_CONCURRENCY,
    admission: tuple[Admission, ...] = (),
    **classifier_options: Any,
) -> pa.Table:
    """Every row of ``table`` evaluated over ``questions``: a table of ``run_schema(questions)``
    records, rows in input order (see the module docstring for what fails a row and what
    raises). ``pack``, ``concurrency`` and ``admission`` are ``BatchOptions``' fields;
    ``classifier_options`` are ``create_classifier``'s keywords."""
    options = BatchOptions(concurrency=concurrency, pack=pack, admission=admission)
    classifier = create_classifier(**classifier_options)
    async with classifier:
        return await evaluate_rows(
            classifier,
            table,
            questions,
            state_column=state_column,
            id_column=id_column,
            options=options,
        )


def evaluate_table(
    table: Any,
    questions: Mapping[str, Any],
    *,
    state_column: str,
    id_column: str | None = None,
    pack: PackSize = 1,
    concurrency: int = DEFAULT_BATCH_CONCURRENCY,
    admission: tuple[Admission, ...] = (),
    **classifier_options: Any,
) -> pa.Table:
    """The synchronous form of :func:`evaluate_table_async`: same keywords, same table. It runs
    on the sync API's background loop (``toolnexus.sync``), so it also works inside a running
    event loop (a notebook, an async handler)."""
    return background.run(
        evaluate_table_async(
            table,
            questions,
            state_column=state_column,
            id_column=id_column,
            pack=pack,
            concurrency=concurrency,
            admission=admission,
            **classifier_options,
        )
    )
