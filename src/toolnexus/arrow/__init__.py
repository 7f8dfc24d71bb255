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
  ``create_classifier``), a bad question set, a missing column or one whose type no state can
  be, ``concurrency`` out of range.
- **The table is read as ``batch`` reads a Parquet file** (``run.arrowin``: one rule, one
  wording): a struct column is an object state, a list column an array; a null id or state, or
  an id that is not a string or an integer, is the error record ``batch`` writes for that row
  (a row is named ``row N``, 0-based, where ``batch`` names ``FILE:ROW``).
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

from ..classifier import Classifier, create_classifier
from ..config import BatchOptions
from ..core import DEFAULT_BATCH_CONCURRENCY, ConfigError, Question, questions_sha256
from ..records import ErrorRecord, records_to_table, require_pyarrow
from ..run import InputSpec, RowBlock, column_problem, read_columns, result_record, row_block
from ..sync import background

if TYPE_CHECKING:
    import pyarrow as pa

    from ..config import PackSize
    from ..scheduler import Admission

__all__ = ["evaluate_rows", "evaluate_table", "evaluate_table_async"]

#: How ``evaluate_table``'s user names the id and the state column in a column's message
#: (``batch``'s user reads ``--id-field`` / ``--state-field`` in the same words).
COLUMN_KEYWORDS = ("id_column", "state_column")


def _read(table: pa.Table, spec: InputSpec) -> RowBlock:
    """The table's rows as ``batch`` reads a Parquet file's (``run.arrowin``): a column no
    state can be, or a missing one, fails every row and so raises; each row is its state or
    its error, a row named ``row N`` (0-based, as its fallback id is)."""
    problem = column_problem(table.schema, spec, COLUMN_KEYWORDS)
    if problem is not None:
        raise ConfigError(f"classifier: {problem}")
    rows = table.select(read_columns(spec) or table.column_names)
    return row_block(rows, spec, prefix="row ", first=0, index_ids=True)


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
    spec = InputSpec(id_field=id_column, state_fields=(state_column,))
    sha = questions_sha256(qs)
    block = _read(table, spec)
    ids, states = block.ids, block.states
    records: list[dict[str, Any] | None] = [None] * table.num_rows
    for i, item in block.failed.items():
        assert item.error is not None  # what failed means
        # The record batch writes for the same row (code and message).
        records[i] = ErrorRecord(item.id, *item.error, sha).to_object()
    failed = block.failed
    pending = [(i, state) for i, state in enumerate(states) if i not in failed]
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
