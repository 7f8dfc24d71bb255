"""A Parquet run's row group counted from its columns (``report`` on ``batch --format
parquet``), without a record object per row.

The record path (``formats._iter_parquet``) turns every row back into the record the JSONL run
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

import operator
import os
from collections.abc import Sequence
from itertools import compress, repeat
from typing import Any

from ..core import registry
from ..records import SCHEMA_VERSION, SCHEMA_VERSION_KEY, Span, column_values
from .accumulators import QuestionStats
from .aggregation import RunStats
from .fieldchecks import RecordError, _valid_distribution
from .usage import MAX_TOKENS
from .vectorized import count_column, map_dicts

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
    except (NameError, AssertionError):  # a fault of this code, never of the file: shown
        raise
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
    from ..records import struct_kind

    names = table.schema.names
    n = table.num_rows
    for name in ("id", "answers", *_ABSENT):
        if name not in names:
            return False
    for name in _ABSENT:
        if table.column(name).null_count != n:
            return False
    if SCHEMA_VERSION_KEY in names and not _versions_read(table.column(SCHEMA_VERSION_KEY)):
        return False  # the record path stops at the row of a version it does not read
    answers = table.column("answers").combine_chunks()
    if answers.null_count:
        return False
    counted: list[tuple[str, str, int, _Answers]] = []
    for index, field in enumerate(answers.type):
        kind = struct_kind(field.type)
        if kind not in _COUNTED:
            return False
        answered = _answer_columns(answers.field(index), kind)
        if answered is None:
            return False
        first, column = answered
        if column is not None:
            counted.append((field.name, kind, first, column))
    if not _distributions_hold(table, counted):
        return False  # the record path names the line (issue 42 item 5)
    ids = column_values(table.column("id"))
    if len(set(ids)) != n or not seen.isdisjoint(ids):
        return False
    run_fields = [
        column_values(table.column(name)) if name in names else [None] * n
        for name in ("model", "questions_sha256", "calibrated", "cached")
    ]
    # how each row was asked (issue 31 item 1): null in a run written before records said it
    packed = column_values(table.column("packed")) if "packed" in names else [None] * n
    plans = _plans(stats, counted)
    stats.records += n
    if not _count_run_fields(stats, table, run_fields, packed):
        usage = _usage(table, n)
        count_record = stats.count_record
        for i, (model, digest, calibrated, cached) in enumerate(zip(*run_fields, strict=True)):
            count_record(model, digest, None, None, packed[i], calibrated, cached, usage[i])
    seen.update(ids)
    label_rows = list(map(stats._rows.get, ids))
    labelled = [False] * n
    for st, label_column, answers in plans:
        labels = _labels(label_rows, label_column, answers.valid)
        labelled = list(map(operator.or_, labelled, map(bool, labels)))
        if count_column(st, answers.kind, answers.fields, answers.valid, labels, ids):
            continue
        count = st.count  # type: ignore[attr-defined]
        for args, label, sid in zip(answers.args(), labels, ids, strict=True):
            if args is not None:
                count(*args, label, sid)
    stats.labelled += sum(labelled)
    return True


def _distributions_hold(table: Any, counted: list[tuple[str, str, int, _Answers]]) -> bool:
    """Whether every choice and score answer of a row whose ``invalid`` is null holds what
    ``batch`` writes (``fieldchecks._valid_distribution``, the record path's check): else the
    record path counts the group, and refuses the row at its line."""
    n = table.num_rows
    invalid = column_values(table.column("invalid")) if "invalid" in table.schema.names else None
    for _, kind, _, answers in counted:
        if "probabilities" not in answers.fields:  # no distribution to hold
            continue
        probs = map_dicts(answers.fields["probabilities"])
        named = registry.option_field(kind)  # an answer that names its option
        choices = column_values(answers.fields[named]) if named else [None] * n
        valid = answers.valid or [True] * n
        for i in range(n):
            if not valid[i] or (invalid is not None and invalid[i] is not None):
                continue
            try:
                _valid_distribution({"type": kind, "probabilities": probs[i], "choice": choices[i]})
            except RecordError:
                return False
    return True


def _versions_read(column: Any) -> bool:
    """Every row's ``schema_version`` is one this toolnexus reads (0 to ``SCHEMA_VERSION``, or
    null: a record written before versions)."""
    import pyarrow.compute as pc

    low, high = pc.min_max(column).values()
    return (low.as_py() is None or low.as_py() >= 0) and (
        high.as_py() is None or high.as_py() <= SCHEMA_VERSION
    )


def _labels(rows: list[Any], column: int, valid: list[bool] | None) -> list[str | None]:
    """Each row's label of the question in ``column`` (None: none, an empty cell, or a row
    that does not answer it), as the record path reads it."""
    if not column:
        return [None] * len(rows)
    labels = [row[column] or None if row is not None else None for row in rows]
    if valid is not None:
        labels = [label if v else None for label, v in zip(labels, valid, strict=True)]
    return labels


class _Answers:
    """One answer struct column of a row group: its fields (Arrow arrays, one row each) and
    which rows answer it; each row's ``count`` arguments are converted only when asked."""

    def __init__(self, kind: str, fields: dict[str, Any], valid: list[bool] | None) -> None:
        self.kind, self.fields, self.valid = kind, fields, valid

    def args(self) -> list[Any]:
        """Each row's ``count`` arguments (None where the row does not answer)."""
        columns = [_field(self.fields[name], name) for name in _COUNTED[self.kind]]
        args: list[Any] = list(zip(*columns, strict=True))
        if self.valid is not None:
            args = [a if v else None for a, v in zip(args, self.valid, strict=True)]
        return args


def _answer_columns(struct: Any, kind: str) -> tuple[int, _Answers | None] | None:
    """``(first answering row, the column)`` of one answer struct column (``(-1, None)`` when
    no row answers it), or ``None`` when it is not plain."""
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
    ok = valid.to_pylist() if struct.null_count else None
    arrays = {name: children[i] for name, i in fields.items()}
    return (ok.index(True) if ok else 0), _Answers(kind, arrays, ok)


def _field(array: Any, name: str) -> list[Any]:
    """One answer field's values as the record path reads them: a map as a dict, a null
    field as None (the record path drops it, and every accumulator reads it with ``get``)."""
    if name in ("probabilities", "legend"):
        return map_dicts(array)
    return column_values(array)


def _count_run_fields(
    stats: RunStats, table: Any, run_fields: list[list[Any]], packed: list[Any]
) -> bool:
    """What ``count_record`` counts of each row, over the whole group at once, when every
    row's usage is two token counts in range and no cost (the fast path ``count_record``
    takes row by row); False, with ``stats`` untouched, otherwise."""
    import pyarrow as pa
    import pyarrow.compute as pc

    models, digests, calibrated, cached = run_fields
    n = len(models)
    if "usage" not in table.schema.names or set(map(type, cached)) - {bool, type(None)}:
        return False
    usage = table.column("usage").combine_chunks()
    if usage.null_count or [f.name for f in usage.type] != [
        "input_tokens",
        "output_tokens",
        "cost",
    ]:
        return False
    tokens = usage.flatten()
    if tokens[2].null_count != n:
        return False
    for count in tokens[:2]:
        if count.null_count or not pa.types.is_integer(count.type):
            return False
        bounds = pc.min_max(count).as_py()
        if not 0 <= bounds["min"] <= bounds["max"] <= MAX_TOKENS:
            return False
    n_in, n_out = tokens[0].to_pylist(), tokens[1].to_pylist()
    stats.answered += n
    stats.models.update(models)
    stats.digests.update(digests)
    stats._last_digest = digests[-1]
    for size in set(packed):
        if size is None:
            stats.unasked = True  # a row that does not say how it was asked
        else:
            stats._asked(None, size)
    stats.uncalibrated += sum(1 for c in calibrated if not c)
    was_cached = [c is True for c in cached]
    stats.cached_records += sum(was_cached)
    fresh = [not c for c in was_cached]
    for spent, rows in ((stats.cached, was_cached), (stats.spent, fresh)):
        spent.input_tokens += sum(compress(n_in, rows))
        spent.output_tokens += sum(compress(n_out, rows))
    return True


def _usage(table: Any, n: int) -> list[Any]:
    """Each row's ``usage`` object (the record path's ``dict`` of the struct), or None."""
    if "usage" not in table.schema.names:
        return [None] * n
    usage = table.column("usage").combine_chunks()
    names = [f.name for f in usage.type]
    fields = zip(*map(column_values, usage.flatten()), strict=True)
    rows: list[Any] = list(map(dict, map(zip, repeat(names), fields)))
    if usage.null_count:
        valid = usage.is_valid().to_pylist()
        rows = [r if v else None for r, v in zip(rows, valid, strict=True)]
    return rows


def _plans(
    stats: RunStats, counted: Sequence[tuple[str, str, int, _Answers]]
) -> list[tuple[QuestionStats, int, _Answers]]:
    """Each answered key's stats, label column and answers; keys new to ``stats`` are met in
    the order the record path meets them (by first answering row, then schema order)."""
    order = sorted(range(len(counted)), key=lambda j: (counted[j][2], j))
    steps = {}
    for j in order:
        key, kind, _, answers = counted[j]
        st, _, qtype, column, track = stats.plan_for(key, kind)
        if qtype != kind or track is not None:
            raise ValueError(f"answer {key!r}: counted on the record path")
        steps[j] = (st, column, answers)
    return [steps[j] for j in range(len(counted))]
