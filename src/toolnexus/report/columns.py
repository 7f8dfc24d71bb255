"""A Parquet run's row group counted from its columns (``report`` on ``batch --format
parquet``), without a record object per row.

The record path (``runs._iter_parquet``) turns every row back into the record the JSONL run
holds, and counts that: a dict per record and per answer, built value by value, which cost
about four times the JSONL report (issue 21: ``report`` on the Parquet run <= 1.0x the JSONL
run). Here each column is converted once (``records.arrowrows``), and every answer is counted
by its accumulator's ``count`` from its fields, the same method the record path reaches
through ``add``: the same numbers, in the same order.

Only a plain group is counted here: no error rows, nothing in ``extra`` (an id that is not
UTF-8, a field the schema has no column for), no answer kept as JSON, nothing recalibrated,
and a report of one run (two runs compare per id, on the record path). Anything else, and any
problem met while counting, returns ``None``: the caller counts the group on the record path,
which names the line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from itertools import pairwise, repeat
from typing import Any

from .aggregation import RunStats
from .runs import Span

__all__ = ["count_columns"]

#: Per answer kind, the struct fields its accumulator's ``count`` takes, in its order (then
#: the label and the id).
_COUNTED = {
    "noul": ("noul", "band", "flags"),
    "choice": ("choice", "probabilities", "confidence", "near_uniform", "flags"),
    "score": ("probabilities", "level", "legend", "score", "confidence", "flags"),
}
#: Run columns that must be all null for a group to be plain.
_ABSENT = ("error", "extra", "recalibrated")


def count_columns(path: str, span: Span, stats: RunStats) -> set[str] | None:
    """Count the row groups of ``span`` into ``stats`` (fresh); the ids counted, or ``None``
    when the record path must count them (``stats`` is then to be dropped). A repeated id is
    also ``None``: the record path sees it and reads the run whole."""
    try:
        tables = _tables(path, span)
        if tables is None:
            return None
        seen: set[str] = set()
        for table in tables:
            if not _count_table(table, stats, seen):
                return None
        return seen
    except Exception:  # the record path counts it again and words what is wrong
        return None


def _tables(path: str, span: Span) -> list[Any] | None:
    import pyarrow.parquet as pq

    with open(path, "rb") as raw:
        st = os.fstat(raw.fileno())
        if (st.st_dev, st.st_ino) != span.file:
            return None
        parquet = pq.ParquetFile(raw)
        return [parquet.read_row_group(g) for g in range(span.start, span.end)]


def _count_table(table: Any, stats: RunStats, seen: set[str]) -> bool:
    from ..arrowrecords import struct_kind

    names = table.schema.names
    n = table.num_rows
    for name in ("id", "answers", *_ABSENT):
        if name not in names:
            return False
    for name in _ABSENT:
        if table.column(name).null_count != n:
            return False
    answers = table.column("answers").combine_chunks()
    if answers.null_count:
        return False
    counted: list[tuple[str, str, int, list[Any]]] = []
    for index, field in enumerate(answers.type):
        kind = struct_kind(field.type)
        if kind not in _COUNTED:
            return False
        answered = _answer_columns(answers.field(index), kind)
        if answered is None:
            return False
        first, args = answered
        if args is not None:
            counted.append((field.name, kind, first, args))
    ids = _values(table.column("id"))
    if len(set(ids)) != n or not seen.isdisjoint(ids):
        return False
    usage = _usage(table, n)
    run_fields = [
        _values(table.column(name)) if name in names else [None] * n
        for name in ("model", "questions_sha256", "calibrated", "cached")
    ]
    plans = _plans(stats, counted)
    stats.records += n
    count_record = stats.count_record
    rows = stats._rows
    for i, (sid, model, digest, calibrated, cached) in enumerate(
        zip(ids, *run_fields, strict=True)
    ):
        seen.add(sid)
        count_record(model, digest, None, None, None, calibrated, cached, usage[i])
        row = rows.get(sid)
        labelled = False
        for count, column, values in plans:
            answer = values[i]
            if answer is None:
                continue
            label = row[column] if row is not None and column else None
            if label:
                labelled = True
            else:
                label = None
            count(*answer, label, sid)
        if labelled:
            stats.labelled += 1
    return True


def _answer_columns(struct: Any, kind: str) -> tuple[int, list[Any] | None] | None:
    """``(first valid row, each row's count arguments or None)`` of one answer struct column
    (``(-1, None)`` when no row answers it), or ``None`` when it is not plain."""
    import pyarrow.compute as pc

    fields = {f.name: i for i, f in enumerate(struct.type)}
    if any(name not in fields for name in ("type", *_COUNTED[kind])):
        return None
    children = struct.flatten()
    for name in ("json", "recalibrated"):
        if name in fields and children[fields[name]].null_count != len(struct):
            return None
    valid = struct.is_valid()
    if struct.null_count == len(struct):
        return -1, None
    kinds = children[fields["type"]]
    # every answer carries its kind, and only the answers do
    if not pc.all(pc.equal(kinds.is_valid(), valid)).as_py():
        return None
    if kinds.drop_null().unique().to_pylist() != [kind]:
        return None
    columns = [_field(children[fields[name]], name) for name in _COUNTED[kind]]
    args: list[Any] = list(zip(*columns, strict=True))
    first = 0
    if struct.null_count:
        ok = valid.to_pylist()
        args = [a if v else None for a, v in zip(args, ok, strict=True)]
        first = ok.index(True)
    return first, args


def _field(array: Any, name: str) -> list[Any]:
    """One answer field's values as the record path reads them: a map as a dict, a null
    field as None (the record path drops it, and every accumulator reads it with ``get``)."""
    if name in ("probabilities", "legend"):
        return _dicts(array)
    return _values(array)


def _dicts(array: Any) -> list[Any]:
    """A map column as one dict per row (None for a null row). A run's rows almost always
    name the same keys in the same order: their dicts are then made in C from one key list
    (and a row group whose values repeat too, a legend, shares one dict: nothing mutates it)."""
    offsets = array.offsets.to_pylist()
    keys, items = _values(array.keys), _values(array.items)
    n = len(array)
    start, width = offsets[0], (offsets[1] - offsets[0]) if n else 0
    rows: list[Any]
    uniform = offsets == list(range(start, start + width * n + 1, width)) if width else False
    if uniform and keys[start : start + width * n] == keys[start : start + width] * n:
        names = keys[start : start + width]
        values = items[start : start + width * n]
        if values == values[:width] * n:
            rows = [dict(zip(names, values[:width], strict=True))] * n
        else:
            rows = list(
                map(dict, map(zip, repeat(names), zip(*[iter(values)] * width, strict=True)))
            )
    else:
        rows = [dict(zip(keys[a:b], items[a:b], strict=True)) for a, b in pairwise(offsets)]
    if array.null_count:
        valid = array.is_valid().to_pylist()
        rows = [r if v else None for r, v in zip(rows, valid, strict=True)]
    return rows


def _usage(table: Any, n: int) -> list[Any]:
    """Each row's ``usage`` object (the record path's ``dict`` of the struct), or None."""
    if "usage" not in table.schema.names:
        return [None] * n
    usage = table.column("usage").combine_chunks()
    names = [f.name for f in usage.type]
    fields = zip(*map(_values, usage.flatten()), strict=True)
    rows: list[Any] = [dict(zip(names, r, strict=True)) for r in fields]
    if usage.null_count:
        valid = usage.is_valid().to_pylist()
        rows = [r if v else None for r, v in zip(rows, valid, strict=True)]
    return rows


def _plans(
    stats: RunStats, counted: Sequence[tuple[str, str, int, list[Any]]]
) -> list[tuple[Callable[..., None], int, list[Any]]]:
    """Each answered key's ``count``, label column and rows; keys new to ``stats`` are met in
    the order the record path meets them (by first answering row, then schema order)."""
    order = sorted(range(len(counted)), key=lambda j: (counted[j][2], j))
    plans = []
    steps = {}
    for j in order:
        key, kind, _, values = counted[j]
        st, _, qtype, column, track = stats.plan_for(key, kind)
        if qtype != kind or track is not None:
            raise ValueError(f"answer {key!r}: counted on the record path")
        steps[j] = (st.count, column, values)  # type: ignore[attr-defined]
    for j in range(len(counted)):
        plans.append(steps[j])
    return plans


def _values(array: Any) -> list[Any]:
    from ..records.arrowrows import column_values

    return column_values(array)
