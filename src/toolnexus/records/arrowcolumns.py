"""Run records as an Arrow record batch, built column by column: the write direction of
``arrowrows``. ``RecordBatch.from_pylist`` over one dict per row (each answer copied into a
row of its struct, each map into pairs) cost a 100,000-state ``batch --format parquet`` a
tenth of its CPU (measured: 2.9 s for 100,000 records, against 1.1 s for these columns);
here each leaf column is one list comprehension over the records, handed to ``pa.array`` at
once, and an answer that fits its question's struct is read in place, never copied.

The schema (``records.arrow.run_schema``) drives it: a struct column takes its fields from its
type, so nothing here lists a field again. What it adds are the rules of the record -> row
mapping, documented in ``records.arrow``: an answer that does not fit its question's struct
is its JSON text in ``json``, a raw answer is its JSON text in ``value``, a legend level that
is not a string is its JSON text, and what a record holds that has no column of its own
(another member, an answer to a question not asked, an id that is not UTF-8, a
``recalibrated`` of another shape) is the JSON text of ``extra``. Called only with pyarrow
imported (by ``records.arrow``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeGuard

from ..core import RAW_NAME

__all__ = ["RecordColumns", "map_fields", "record_batch"]


def _json(value: Any) -> str:
    # ASCII escapes: a lone surrogate (legal in a JSON string, not in UTF-8) survives as \udXXX.
    return json.dumps(value, separators=(",", ":"))


def _utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_map(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return type(value) is dict or isinstance(value, Mapping)


def _cut_points(value: Any, names: frozenset[str]) -> bool:
    """An answer's ``thresholds`` that fits its struct: every cut-point by name (what batch
    writes), each a number; anything else is kept as the answer's JSON."""
    if not _is_map(value) or value.keys() != names:
        return False
    return all(type(v) is float or type(v) is int for v in value.values())


def _names(struct: Any, *drop: str) -> frozenset[str]:
    return frozenset(f.name for f in struct if f.name not in drop)


def map_fields(pa: Any, struct: Any) -> list[str]:
    """The fields of ``struct`` that are maps (an answer's ``probabilities``, a score's
    ``legend``): found from its types, which each question type's ``arrow`` hook gives
    (``qtypes``), so no answer field is named here."""
    return [f.name for f in struct if pa.types.is_map(f.type)]


class _Answers:
    """How the answers of one question become rows of its struct (``kind`` as
    ``records.arrow.answer_kind`` names it). ``json``, ``recalibrated`` and a raw answer's
    ``type`` / ``value`` are the struct's own members (``records.arrow``), the same for every
    type; the type's fields come from the struct."""

    def __init__(self, pa: Any, kind: str, struct: Any) -> None:
        self.kind = kind
        self.raw = kind == RAW_NAME
        self.fields = _names(struct, "json")
        names = {f.name for f in struct}
        self.maps = map_fields(pa, struct)
        by = struct.field("recalibrated").type if "recalibrated" in names else ()
        self.recalibrated = _names(by)
        self.recalibrated_maps = map_fields(pa, by)
        cuts = struct.field("thresholds").type if "thresholds" in names else ()
        self.cut_points = _names(cuts)

    def fits(self, answer: Mapping[str, Any]) -> bool:
        """Whether ``answer`` is stored in its struct's typed fields (else as its JSON)."""
        if self.raw:
            return isinstance(answer.get("type"), str)
        if answer.get("type") != self.kind or not answer.keys() <= self.fields:
            return False
        for name in self.maps:
            value = answer.get(name)
            if value is not None and not _is_map(value):
                return False
        cuts = answer.get("thresholds")
        if cuts is not None and not _cut_points(cuts, self.cut_points):
            return False
        recalibrated = answer.get("recalibrated")
        if recalibrated is None:
            return True
        if not _is_map(recalibrated) or not recalibrated.keys() <= self.recalibrated:
            return False
        # only recalibrated answers reach this, so all()'s generator costs the common case nothing
        return all(_is_map(recalibrated.get(name, {})) for name in self.recalibrated_maps)

    def row(self, answer: Any) -> Mapping[str, Any] | None:
        """The answer as its struct's row: itself when it fits (read in place)."""
        if answer is None:
            return None
        if not _is_map(answer) or not self.fits(answer):
            return {"json": _json(answer)}
        if self.raw:
            return {"type": answer["type"], "value": _json(dict(answer))}
        fitting: Mapping[str, Any] = answer
        return fitting


def _by_fits(value: Any, by: frozenset[str]) -> bool:
    """A record's ``recalibrated`` that fits its column (else it is kept in ``extra``)."""
    return (
        _is_map(value)
        and value.keys() <= by
        and all(isinstance(v, str | None) for v in value.values())
    )


def _extra(
    record: Mapping[str, Any], columns: frozenset[str], asked: Mapping[str, Any], by: frozenset[str]
) -> tuple[str, str | None]:
    """(the id column's text, ``extra``'s JSON or None) of one record."""
    item_id = record["id"]
    text = item_id if type(item_id) is str else str(item_id)
    answers = record.get("answers")
    recalibrated = record.get("recalibrated")
    regular = (
        record.keys() <= columns
        and (not _is_map(answers) or answers.keys() <= asked.keys())
        and (recalibrated is None or _by_fits(recalibrated, by))
        and _utf8(text)
    )
    if regular:
        return text, None
    extra = {k: v for k, v in record.items() if k not in columns}
    if recalibrated is not None and not _by_fits(recalibrated, by):
        extra["recalibrated"] = recalibrated
    if _is_map(answers):
        unasked = {k: v for k, v in answers.items() if k not in asked}
        if unasked:
            extra["answers"] = unasked
    if not _utf8(text):
        # Arrow strings are UTF-8: the column shows the id with U+FFFD for what cannot be
        # encoded, and `extra` keeps the exact id, which the reader restores.
        extra["id"] = text
        text = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return text, _json(extra) if extra else None


class _Leaf:
    """A primitive column: its values as they come, converted by ``pa.array`` at once."""

    def __init__(self, pa: Any, kind: Any) -> None:
        self.pa, self.kind = pa, kind
        self.values: list[Any] = []

    def extend(self, values: list[Any]) -> None:
        self.values.extend(values)

    def finish(self) -> Any:
        values, self.values = self.values, []
        return self.pa.array(values, self.kind)


class _Struct:
    """A struct column: its null mask and one column per field. ``prepare`` turns a field's
    value into what its column takes (an answer into its struct's row)."""

    def __init__(
        self, pa: Any, kind: Any, prepare: Mapping[str, Callable[[Any], Any]] | None = None
    ) -> None:
        self.pa, self.kind = pa, kind
        self.fields = [(f.name, _column(pa, f.type), (prepare or {}).get(f.name)) for f in kind]
        self.nulls: list[bool] = []

    def extend(self, values: list[Any]) -> None:
        nulls = [v is None for v in values]
        self.nulls.extend(nulls)
        if False not in nulls:
            for _, column, _ in self.fields:
                column.extend([None] * len(nulls))
            return
        for name, column, prepare in self.fields:
            if prepare is None:
                column.extend([None if v is None else v.get(name) for v in values])
            else:
                column.extend([None if v is None else prepare(v.get(name)) for v in values])

    def finish(self) -> Any:
        nulls, self.nulls = self.nulls, []
        children = [column.finish() for _, column, _ in self.fields]
        if False not in nulls or not children:
            return self.pa.nulls(len(nulls), self.kind)
        mask = self.pa.array(nulls, self.pa.bool_()) if True in nulls else None
        return self.pa.StructArray.from_arrays(children, fields=list(self.kind), mask=mask)


class _Nested:
    """A list or map column: offsets into one column of its elements (a map's keys and items
    side by side)."""

    def __init__(self, pa: Any, kind: Any) -> None:
        self.pa, self.kind = pa, kind
        self.is_map = pa.types.is_map(kind)
        self.inner = _column(pa, kind.item_type if self.is_map else kind.value_type)
        # A legend level that is not a string (a structured level) is its JSON text.
        self.as_text = self.is_map and pa.types.is_string(kind.item_type)
        self._reset()

    def _reset(self) -> None:
        self.offsets = [0]
        self.keys: list[str] = []
        self.nulls: list[bool] = []

    def extend(self, values: list[Any]) -> None:
        offsets, inner, add = self.offsets, [], self.offsets.append
        end = offsets[-1]
        if self.is_map:
            keys = self.keys
            for value in values:
                if value is not None:
                    keys.extend(map(str, value))
                    inner.extend(value.values())
                    end += len(value)
                add(end)
        else:
            for value in values:
                if value is not None:
                    inner.extend(value)
                    end += len(value)
                add(end)
        if self.as_text:
            inner = [v if v is None or isinstance(v, str) else _json(v) for v in inner]
        self.inner.extend(inner)
        self.nulls.extend([v is None for v in values])

    def finish(self) -> Any:
        pa, nulls = self.pa, self.nulls
        at = pa.array(self.offsets, pa.int32())
        mask = pa.array(nulls, pa.bool_()) if True in nulls else None
        inner = self.inner.finish()
        keys = pa.array(self.keys, pa.string())
        self._reset()
        if self.is_map:
            return pa.MapArray.from_arrays(at, keys, inner, self.kind, mask=mask)
        return pa.ListArray.from_arrays(at, inner, type=self.kind, mask=mask)


def _column(
    pa: Any, kind: Any, prepare: Mapping[str, Callable[[Any], Any]] | None = None
) -> _Leaf | _Struct | _Nested:
    if pa.types.is_struct(kind):
        return _Struct(pa, kind, prepare)
    if pa.types.is_map(kind) or pa.types.is_list(kind):
        return _Nested(pa, kind)
    return _Leaf(pa, kind)


class RecordColumns:
    """Records (the objects a JSONL run holds per line) flattened into one Python list per
    leaf column of ``schema`` as they are given (:meth:`extend`), then one record batch
    (:meth:`batch`). Flattening a few records at a time keeps no record alive: holding a
    thousand records' dicts for one conversion made the garbage collector run seven times as
    often, a tenth of a 100,000-state run's CPU (measured). ``kinds`` is each question key's
    answer kind."""

    def __init__(self, schema: Any, kinds: Mapping[str, str]) -> None:
        import pyarrow as pa

        self._pa = pa
        self.schema = schema
        self._names = frozenset(schema.names)
        self._by = _names(schema.field("recalibrated").type)
        answers = schema.field("answers").type
        self._asked = {key: _Answers(pa, kinds[key], answers.field(key).type) for key in kinds}
        prepare = {key: answer.row for key, answer in self._asked.items()}
        self._columns = [
            (f.name, _column(pa, f.type, prepare if f.name == "answers" else None)) for f in schema
        ]
        self.rows = 0

    def extend(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Flatten ``records`` into the columns, in the order given."""
        split = [_extra(r, self._names, self._asked, self._by) for r in records]
        for name, column in self._columns:
            if name == "id":
                values: list[Any] = [text for text, _ in split]
            elif name == "extra":
                values = [extra for _, extra in split]
            elif name == "answers":
                values = [r.get(name) for r in records]
                values = [v if v is None or _is_map(v) else {} for v in values]
            elif name == "recalibrated":
                by = self._by
                values = [r.get(name) for r in records]
                values = [v if v is None or _by_fits(v, by) else None for v in values]
            else:
                values = [r.get(name) for r in records]
            column.extend(values)
        self.rows += len(records)

    def batch(self) -> Any:
        """The records flattened so far as one record batch; the columns start empty again."""
        arrays = [column.finish() for _, column in self._columns]
        self.rows = 0
        return self._pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def record_batch(
    schema: Any, kinds: Mapping[str, str], records: Sequence[Mapping[str, Any]]
) -> Any:
    """``records`` as one record batch of ``schema``, in the order given."""
    columns = RecordColumns(schema, kinds)
    columns.extend(records)
    return columns.batch()
