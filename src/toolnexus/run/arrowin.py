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
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from ..failures import one_line
from ..records.arrow import require_pyarrow
from .items import (
    ARROW_SUFFIXES,
    MALFORMED,
    PARQUET_SUFFIXES,
    InputItem,
    InputSpec,
    from_object,
    is_arrow_input,
    parquet_files,
)

__all__ = ["ARROW_SUFFIXES", "PARQUET_SUFFIXES", "is_arrow_input", "parquet_rows", "read_arrow"]

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


def _read_file(path: str, spec: InputSpec) -> Iterator[InputItem]:
    pa = require_pyarrow()
    state_fields = spec.state_fields
    wanted = [f for f in (spec.id_field, *state_fields) if f is not None]
    try:
        schema, _ = _batches(path, None)
    except (OSError, pa.ArrowException) as e:
        yield _file_error(path, f"not a readable Parquet or Arrow file: {one_line(str(e))}")
        return
    names = schema.names
    for name in wanted:
        if name not in names:
            flag = "--id-field" if name == spec.id_field else "--state-field"
            yield _file_error(path, f"{flag} {name!r} is not a column ({', '.join(names)})")
            return
    for name in state_fields or names:
        why = _never_a_state(pa, schema.field(name).type)
        if why is not None:
            yield _file_error(
                path,
                f"column {name!r} ({schema.field(name).type}) holds {why}, which no state can "
                "be: cast it to a string column first",
            )
            return
    columns = list(dict.fromkeys(wanted)) if state_fields else None
    row = 0
    try:
        _, batches = _batches(path, columns)
        for batch in batches:
            for values in batch.to_pylist():
                row += 1
                where = f"{path}:{row}"
                yield replace(from_object(_plain(values), where, where, spec), line=row)
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
