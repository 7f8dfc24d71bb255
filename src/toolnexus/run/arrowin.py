"""Parquet and Arrow IPC (Feather) inputs for ``toolnexus batch`` (issue 21).

A ``.parquet`` file, a directory holding ``.parquet`` files (read in name order, not recursed),
or an Arrow IPC file (``.arrow``, ``.feather``, ``.ipc``) is read one record batch at a time, so
memory follows a batch, not the file. Each row is one state, exactly as a JSONL object would be:
``--id-field`` names the id column, ``--state-field`` the state column (a string column is a
text state, a struct column an object, a list column an array); several ``--state-field``
columns make an object of those columns. Without ``--state-field`` the row is the state.

Ids without ``--id-field`` are ``<file>:<row>`` (1-based row of that file). Columns are checked
once per file, before any row is read: a missing column or a column whose type can never be a
state (binary, timestamps, decimals) is one line for that file (an error item, so nothing that
was decided is lost), never one error per row. A file that is not Parquet or Arrow (truncated,
another format) is one line too.

``toolnexus.arrow`` reads its table through the same two pieces (issue 30 item 1):
:func:`column_problem` (the column checks, worded alike) and :func:`row_block` (a record batch
-> each row's id and state, or its error item, by ``items.from_object``'s rules, as a JSONL
object would be).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from ..core import one_line
from ..records import require_pyarrow
from .items import (
    ARROW_SUFFIXES,
    MALFORMED,
    InputItem,
    InputSpec,
    from_object,
    parquet_files,
)

__all__ = [
    "RowBlock",
    "column_problem",
    "parquet_rows",
    "read_arrow",
    "read_columns",
    "row_block",
]

#: Rows per record batch: big enough that Arrow's per-batch cost vanishes, small enough that a
#: batch of large tickets stays a few MiB.
BATCH_ROWS = 1024


def _never_a_state(pa: Any, kind: Any) -> str | None:
    """Why values of Arrow type ``kind`` can never be (part of) a JSON state, or None."""
    t = pa.types
    if t.is_binary(kind) or t.is_large_binary(kind) or t.is_fixed_size_binary(kind):
        return "binary data"
    if t.is_temporal(kind):
        return "dates or times"
    if t.is_decimal(kind):
        return "decimals"
    if t.is_dictionary(kind):
        return _never_a_state(pa, kind.value_type)
    if t.is_struct(kind):
        for f in kind:
            why = _never_a_state(pa, f.type)
            if why is not None:
                return why
    if t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind):
        return _never_a_state(pa, kind.value_type)
    if t.is_map(kind):
        if not t.is_string(kind.key_type) and not t.is_large_string(kind.key_type):
            return "a map whose keys are not strings"
        return _never_a_state(pa, kind.item_type)
    return None


def _plain(value: Any) -> Any:
    """A row value as JSON: maps (pairs from Arrow) become objects, recursively."""
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {k: _plain(v) for k, v in value}
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _file_error(path: str, message: str) -> InputItem:
    return InputItem(path, error=(MALFORMED, f"{path}: {message}"))


def _batches(path: str, columns: list[str] | None) -> tuple[Any, Iterator[Any]]:
    """(schema, record batches) of one file; raises the reader's own error when unreadable."""
    pa = require_pyarrow()
    if path.endswith(ARROW_SUFFIXES):
        import pyarrow.ipc as ipc

        reader = ipc.open_file(pa.memory_map(path))
        schema = reader.schema

        def ipc_batches() -> Iterator[Any]:
            for i in range(reader.num_record_batches):
                batch = reader.get_batch(i)
                yield batch.select(columns) if columns is not None else batch

        return schema, ipc_batches()
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    schema = parquet.schema_arrow
    return schema, parquet.iter_batches(batch_size=BATCH_ROWS, columns=columns)


def _has_map(pa: Any, kind: Any) -> bool:
    """Whether values of Arrow type ``kind`` hold a map anywhere (read as pairs: see ``_plain``)."""
    t = pa.types
    if t.is_map(kind):
        return True
    if t.is_dictionary(kind):
        return _has_map(pa, kind.value_type)
    if t.is_struct(kind):
        return any(_has_map(pa, f.type) for f in kind)
    if t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind):
        return _has_map(pa, kind.value_type)
    return False


def column_problem(
    schema: Any, spec: InputSpec, flags: tuple[str, str] = ("--id-field", "--state-field")
) -> str | None:
    """Why no row of a table of ``schema`` can be read by ``spec``, or None: the column checks
    made once per table (per file for ``batch``), before any row is read. ``flags`` name the id
    and the state column as the caller's user knows them (``batch``'s flags, or
    ``evaluate_table``'s keywords)."""
    pa = require_pyarrow()
    names = schema.names
    for name in (f for f in (spec.id_field, *spec.state_fields) if f is not None):
        if name not in names:
            flag = flags[0] if name == spec.id_field else flags[1]
            return f"{flag} {name!r} is not a column ({', '.join(names)})"
    for name in spec.state_fields or names:
        why = _never_a_state(pa, schema.field(name).type)
        if why is not None:
            return (
                f"column {name!r} ({schema.field(name).type}) holds {why}, which no state can "
                "be: cast it to a string column first"
            )
    return None


def read_columns(spec: InputSpec) -> list[str] | None:
    """The columns a row is read from: the id and state columns, or every column when the row
    is the state (no state field)."""
    wanted = [f for f in (spec.id_field, *spec.state_fields) if f is not None]
    return list(dict.fromkeys(wanted)) if spec.state_fields else None


@dataclass(frozen=True, slots=True)
class RowBlock:
    """The rows of one record batch read by the input rules: row ``i`` is the state
    ``states[i]`` with the id ``ids[i]``, unless it is in ``failed`` (its error item, which
    also carries its id)."""

    ids: list[str | int]
    states: list[Any]
    failed: dict[int, InputItem]


def _whole_state(pa: Any, kind: Any) -> bool:
    """Whether every non-null value of Arrow type ``kind`` is a state as it comes out of
    ``to_pylist`` (a string, an object, an array: ``states.check_state``), with no map in it."""
    t = pa.types
    whole = t.is_string(kind) or t.is_large_string(kind) or t.is_struct(kind)
    whole = whole or t.is_list(kind) or t.is_large_list(kind) or t.is_fixed_size_list(kind)
    return whole and not _has_map(pa, kind)


def _undecided(pa: Any, batch: Any, spec: InputSpec) -> list[int] | None:
    """For a batch whose columns decide most rows by type (see :func:`row_block`): the rows
    a type cannot decide (a null or empty id, a null state), which go through ``from_object``
    one by one; None when the columns' types decide nothing.

    Found from each column's null count and, for string ids, a search of the ids for ``""`` or
    None (C speed), not with ``pyarrow.compute``: importing its kernels adds about 9 MiB to a
    run's peak memory, 10% of a Parquet batch's."""
    schema = batch.schema
    fields = spec.state_fields
    if spec.image_field is not None or not fields:
        return None
    if len(fields) == 1 and not _whole_state(pa, schema.field(fields[0]).type):
        return None
    if len(fields) > 1 and any(_has_map(pa, schema.field(f).type) for f in fields):
        return None
    rows: set[int] = set()
    if len(fields) == 1:
        rows.update(_nulls(batch.column(fields[0])))
    if spec.id_field is not None:
        kind, ids = schema.field(spec.id_field).type, batch.column(spec.id_field)
        if pa.types.is_integer(kind):
            rows.update(_nulls(ids))
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
            values = ids.to_pylist()
            if ids.null_count or "" in values:
                rows.update(i for i, v in enumerate(values) if not v)
        else:
            return None
    return sorted(rows)


def _nulls(column: Any) -> list[int]:
    """The rows of ``column`` (an array or a chunked array) that are null; at once when none."""
    if not column.null_count:
        return []
    return [i for i, v in enumerate(column.to_pylist()) if v is None]


def row_block(
    batch: Any, spec: InputSpec, *, prefix: str, first: int, index_ids: bool = False
) -> RowBlock:
    """The rows of ``batch`` (a record batch or a table whose columns passed
    :func:`column_problem`), numbered from ``first``: each row's state or its error, by the
    rules of a JSONL object (``items.from_object``). A row is named ``<prefix><row>``; without
    ``spec.id_field`` its id is that name, or the row number with ``index_ids``.

    Vectorised: when the columns' types already make every row's id and state valid (a string
    or integer id column; one string, struct or list state column, or several columns), the
    ids and states are whole columns and only the rows Arrow marks (a null or empty id, a null
    state) meet ``from_object``; any other schema reads every row through it."""
    pa = require_pyarrow()
    n = batch.num_rows
    fields = spec.state_fields
    undecided = _undecided(pa, batch, spec)
    if undecided is None:
        # Only a map reads back as pairs that need making into objects.
        plain = any(_has_map(pa, f.type) for f in batch.schema)
        slow: Iterable[int] = range(n)
        rows: list[Any] = batch.to_pylist()
        ids: list[str | int] = [0] * n
        states: list[Any] = [None] * n
    else:
        plain = False
        slow = undecided
        rows = []  # a slow row is read alone
        if spec.id_field is not None:
            ids = batch.column(spec.id_field).to_pylist()
        elif index_ids:
            ids = list(range(first, first + n))
        else:
            ids = [f"{prefix}{row}" for row in range(first, first + n)]
        columns = [batch.column(f).to_pylist() for f in fields]
        states = (
            columns[0]
            if len(fields) == 1
            else [dict(zip(fields, v, strict=True)) for v in zip(*columns, strict=True)]
        )
    failed: dict[int, InputItem] = {}
    for i in slow:
        row, where = first + i, f"{prefix}{first + i}"
        values = rows[i] if undecided is None else batch.slice(i, 1).to_pylist()[0]
        item = from_object(
            _plain(values) if plain else values, row if index_ids else where, where, spec
        )
        ids[i] = item.id
        states[i] = item.state
        if item.error is not None:
            failed[i] = item
    return RowBlock(ids, states, failed)


def _read_file(path: str, spec: InputSpec) -> Iterator[InputItem]:
    pa = require_pyarrow()
    try:
        schema, _ = _batches(path, None)
    except (OSError, pa.ArrowException) as e:
        yield _file_error(path, f"not a readable Parquet or Arrow file: {one_line(str(e))}")
        return
    problem = column_problem(schema, spec)
    if problem is not None:
        yield _file_error(path, problem)
        return
    row = 0
    try:
        _, batches = _batches(path, read_columns(spec))
        for batch in batches:
            block = row_block(batch, spec, prefix=f"{path}:", first=row + 1)
            failed = block.failed
            for i, (item_id, state) in enumerate(zip(block.ids, block.states, strict=True)):
                row += 1
                item = failed.get(i)
                if item is None:
                    yield InputItem(item_id, state=state, line=row)
                else:
                    yield replace(item, line=row)
    except (OSError, pa.ArrowException) as e:
        yield _file_error(
            path, f"unreadable after row {row}: {one_line(str(e))}; the rows before it were read"
        )


def parquet_rows(arg: str) -> int | None:
    """How many rows a Parquet/Arrow INPUT holds, from the files' footers (the progress bar's
    total); None when a file cannot tell."""
    pa = require_pyarrow()
    total = 0
    for path in _paths(arg):
        try:
            if path.endswith(ARROW_SUFFIXES):
                import pyarrow.ipc as ipc

                total += ipc.open_file(pa.memory_map(path)).count_rows()
            else:
                import pyarrow.parquet as pq

                total += pq.ParquetFile(path).metadata.num_rows
        except (OSError, pa.ArrowException):
            return None
    return total


def _paths(arg: str) -> list[str]:
    return parquet_files(arg) if os.path.isdir(arg) else [arg]


def read_arrow(arg: str, spec: InputSpec) -> Iterator[InputItem]:
    """Every state of one Parquet/Arrow INPUT (a file, or a directory of Parquet files)."""
    for path in _paths(arg):
        yield from _read_file(path, spec)
