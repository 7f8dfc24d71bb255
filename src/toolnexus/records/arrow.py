"""Batch records as Arrow tables: the typed schema of a run, and the conversion both ways.

A record here is the JSON-ready dict a JSONL run holds per line (``{"id", "questions_sha256",
...decision record..., "error"?}``). The schema is derived from the question set, so every
question key is a typed struct under one ``answers`` column: a question keyed ``id`` or
``model`` can never collide with a run column.

=================  ==========================================================================
column             type
=================  ==========================================================================
id                 string (an integer id is written as its decimal text; an id that is not
                   UTF-8, a lone surrogate in it, shows U+FFFD here and is kept in ``extra``)
schema_version     int64: the record shape (``records.model.SCHEMA_VERSION``); null in a
                   record written before it (a run written before it has no such column)
questions_sha256   string: the question-set digest
model              string: what served the request
calibrated         bool
cached             bool
packed             int64: how many states the request that answered it asked about (null in a
                   run written before it existed)
position           int64: the state's index in that request's ``states``
reasked            bool: a packed answer that failed validation, asked again alone
usage              struct<input_tokens int64, output_tokens int64, cost float64>
thresholds         struct<yes float64, no float64, min_confidence float64>
answers            struct<one struct per question key, in question order>
flags              list<string>
invalid            string: the validation message, null when valid
recalibrated       struct<file string, sha256 string>: the calibration file that recalibrated
                   the answers (``--calibration``), null when none
error              struct<code string, message string>: null for a decided state
extra              string: JSON of any other record member (none today), null when none
=================  ==========================================================================

Per answer: noul ``{type, noul float64, band, thresholds, flags}``; choice ``{type, choice
string, probabilities map<string, float64>, confidence float64, near_uniform bool, band,
thresholds, flags}``; score ``{type, score float64, legend map<string, string>, probabilities
map<string, float64>, confidence float64, level int32, label string, band, thresholds, flags}``
(``thresholds``: the struct of the record's, the cut-points that decided the band; null in a
record written before schema_version 2); raw (a type the library does not
model) ``{type, value string (JSON)}``. A noul, choice or score answer also has
``recalibrated``, what ``--calibration`` put beside the wire answer: noul ``{noul, band}``,
choice and score ``{probabilities, confidence, band}`` (null when not recalibrated). Every
answer struct also has ``json``: the answer as JSON
text when it does not fit its question's type (an invalid decision), so nothing is lost. A
legend level that is not a string (a structured level) is its JSON text.

pyarrow is an optional extra: this module imports it when called, and a missing extra is one
line naming ``pip install 'toolnexus-classifier[parquet]'``.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import ConfigError, Question, registry
from .arrowcolumns import RecordColumns, map_fields, record_batch
from .arrowrows import batch_rows
from .fields import wire_fields
from .model import (
    ASKED_KEYS,
    RECORD_KEYS,
    SCHEMA_VERSION_KEY,
    DecisionRecord,
    ErrorRecord,
    thresholds_struct,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "ROW_GROUP_RECORDS",
    "RUN_COLUMNS",
    "RunWriter",
    "answer_kind",
    "iter_parquet_run",
    "records_to_table",
    "require_pyarrow",
    "run_schema",
    "struct_kind",
    "table_to_records",
    "write_parquet_run",
]

INSTALL_HINT = "pip install 'toolnexus-classifier[parquet]'"

#: The record members that are columns of their own, in record order; ``answers`` and ``error``
#: are structs, anything else a record holds goes into ``extra``.
_COLUMN_FIELDS = tuple(
    f for f in wire_fields(DecisionRecord) if f.arrow is not None or f.name == "answers"
)
RUN_COLUMNS = (*(f.name for f in _COLUMN_FIELDS), "error", "extra")

#: A raw answer's struct: its type and the whole answer as JSON text.
_RAW_FIELDS = ("type", "value")


def require_pyarrow() -> Any:
    """The pyarrow module, or one line naming the extra that brings it."""
    try:
        import pyarrow
    except ImportError:
        raise ConfigError(f"classifier: Parquet and Arrow need pyarrow: {INSTALL_HINT}") from None
    return pyarrow


def _stored(qtype: registry.QuestionType | None) -> registry.QuestionType | None:
    """The type whose own struct holds its answers; ``None``: stored as a raw answer."""
    return qtype if qtype is not None and qtype.is_modelled and qtype.arrow else None


def answer_kind(question: Question) -> str:
    """The answer struct a question's answers are stored in: its type's name (each type's
    module gives its fields, ``qtypes``), or ``raw``."""
    qtype = _stored(registry.of_question(question))
    return qtype.name if qtype is not None else registry.RAW_NAME


def _answer_type(pa: Any, kind: str) -> pa.DataType:
    qtype = _stored(registry.find(kind))
    if qtype is None or qtype.arrow is None:
        fields = [pa.field(name, pa.string()) for name in _RAW_FIELDS]
        return pa.struct([*fields, pa.field("json", pa.string())])
    # Every answer's record: its type, its own fields, then band, the thresholds that decided
    # it (schema_version 2) and flags (answer_record).
    own = qtype.arrow(pa)
    fields = [
        pa.field("type", pa.string()),
        *(pa.field(name, t) for name, t in own),
        pa.field("band", pa.string()),
        pa.field("thresholds", thresholds_struct(pa)),
        pa.field("flags", pa.list_(pa.string())),
    ]
    if qtype.recalibrated:
        by_name = dict(own)
        recalibrated = [pa.field(name, by_name[name]) for name in qtype.recalibrated]
        recalibrated.append(pa.field("band", pa.string()))
        fields.append(pa.field("recalibrated", pa.struct(recalibrated)))
    return pa.struct([*fields, pa.field("json", pa.string())])


def run_schema(questions: Mapping[str, Question]) -> pa.Schema:
    """The typed schema of a run of ``questions`` (see the module docstring)."""
    pa = require_pyarrow()
    answers = pa.struct(
        [pa.field(key, _answer_type(pa, answer_kind(q))) for key, q in questions.items()]
    )
    # The record's typed columns as its fields declare them (records.model), then the error
    # struct and ``extra``: nothing here lists them again.
    columns = [
        pa.field(f.name, answers if f.arrow is None else f.arrow(pa), nullable=not f.required)
        for f in _COLUMN_FIELDS
    ]
    error = [pa.field(f.name, f.arrow(pa)) for f in wire_fields(ErrorRecord) if f.arrow and f.nest]
    return pa.schema(
        [*columns, pa.field("error", pa.struct(error)), pa.field("extra", pa.string())]
    )


def records_to_table(
    records: Iterable[Mapping[str, Any]], questions: Mapping[str, Question]
) -> pa.Table:
    """Records (decision or error) as one table of :func:`run_schema`, in the order given."""
    pa = require_pyarrow()
    kinds = {key: answer_kind(q) for key, q in questions.items()}
    schema = run_schema(questions)
    return pa.Table.from_batches([record_batch(schema, kinds, list(records))], schema=schema)


class _AnswerBack:
    """One question's answer struct read back as the answer's JSON object. Which of its fields
    are maps (read as pairs, made objects again) comes from the struct's types, which fields
    stay when null from its type's record class (``AnswerRecord.written_null``): nothing here
    names a type's field."""

    __slots__ = ("kept", "maps", "raw", "recalibrated_maps")

    def __init__(self, struct: Any) -> None:
        pa = require_pyarrow()
        kind = struct_kind(struct)
        self.raw = kind == registry.RAW_NAME
        self.maps = frozenset(map_fields(pa, struct))
        names = {f.name for f in struct}
        by = struct.field("recalibrated").type if "recalibrated" in names else ()
        self.recalibrated_maps = frozenset(map_fields(pa, by))
        self.kept = registry.of(kind).answer_record.written_null

    def __call__(self, row: Mapping[str, Any] | None) -> Any:
        if row is None:
            return None
        if row.get("json") is not None:
            return json.loads(row["json"])
        if self.raw:
            return json.loads(row["value"])
        maps, kept = self.maps, self.kept
        out: dict[str, Any] = {}
        for name, value in row.items():
            if name == "json":
                continue
            if name in maps and value is not None:
                value = dict(value)
            if name == "recalibrated" and value is not None:
                inner = self.recalibrated_maps
                value = {k: dict(v) if k in inner else v for k, v in value.items()}
            if value is None and name not in kept:
                continue
            out[name] = value
        return out


def table_to_records(table: pa.Table | Any) -> Iterator[dict[str, Any]]:
    """The records of a run table, as the JSONL run would hold them (a record batch reader or
    a table; read batch by batch, so memory follows one batch, not the file)."""
    batches = table.to_batches() if hasattr(table, "to_batches") else table
    for batch in batches:
        answer_fields = batch.schema.field("answers").type
        readers = {f.name: _AnswerBack(f.type) for f in answer_fields}
        for row in batch_rows(batch):
            yield _record_back(row, readers)


def struct_kind(struct: Any) -> str:
    """The answer kind (``noul``, ``choice``, ``score``, another registered type, or ``raw``)
    an answer struct holds: a type's struct has a field named after the type."""
    names = {f.name for f in struct}
    for qtype in registry.registered():
        if qtype.name in names and _stored(qtype) is not None:
            return qtype.name
    return registry.RAW_NAME


def _record_back(row: Mapping[str, Any], readers: Mapping[str, _AnswerBack]) -> dict[str, Any]:
    extra = json.loads(row["extra"]) if row.get("extra") else {}
    unasked = extra.pop("answers", {})
    out: dict[str, Any] = {"id": extra.pop("id", row["id"])}
    if row.get(SCHEMA_VERSION_KEY) is not None:  # none in a run written before versions
        out[SCHEMA_VERSION_KEY] = row[SCHEMA_VERSION_KEY]
    if row.get("questions_sha256") is not None:
        out["questions_sha256"] = row["questions_sha256"]
    if row.get("error") is not None:
        out["error"] = dict(row["error"])
        out.update(extra)
        return out
    for name in RECORD_KEYS[: RECORD_KEYS.index("answers")]:
        value = row.get(name)
        if value is None and name in ASKED_KEYS:
            continue  # a run written before records said how a state was asked
        out[name] = dict(value) if isinstance(value, Mapping) else value
    answers = row.get("answers") or {}
    back = {k: read(answers.get(k)) for k, read in readers.items()}
    out["answers"] = {k: v for k, v in back.items() if v is not None} | unasked
    out["flags"] = list(row.get("flags") or [])
    out["invalid"] = row.get("invalid")
    if row.get("recalibrated") is not None:
        out["recalibrated"] = dict(row["recalibrated"])
    out.update(extra)
    return out


#: Records per Parquet row group: ``report --jobs`` splits a run by row group, and a group of
#: 10,000 records is a few MiB of memory on either side.
ROW_GROUP_RECORDS = 10_000


#: Records turned into Arrow at once while a run is written (a divisor of ROW_GROUP_RECORDS).
_SLICE_RECORDS = 1_000

#: Records held before they are flattened into columns (a divisor of _SLICE_RECORDS): few
#: enough that their dicts never outlive the garbage collector's youngest generation (700
#: containers; a record is ~15).
_FLATTEN_RECORDS = 25


class RunWriter:
    """ONE Parquet run at ``path``, written as records arrive (:meth:`add`) and put in place
    atomically by :meth:`finish`: a temporary file beside it is written, flushed to disk and
    renamed over ``path``, so a reader (or a kill) never sees a half-written run.
    :meth:`abort` removes the temporary file and leaves ``path`` as it was.

    Records are flattened into columns a few at a time (``records.arrowcolumns``), the columns
    become Arrow a slice at a time, and a row group's slices are written together: memory
    holds one group as Arrow data."""

    def __init__(self, path: str | os.PathLike[str], questions: Mapping[str, Question]) -> None:
        self._pa = require_pyarrow()
        import pyarrow.parquet as pq

        self.target = Path(path)
        self.schema = run_schema(questions)
        kinds = {key: answer_kind(q) for key, q in questions.items()}
        fd, self._tmp = tempfile.mkstemp(
            prefix=f".{self.target.name}.", suffix=".tmp", dir=self.target.parent
        )
        os.close(fd)
        self._writer = pq.ParquetWriter(self._tmp, self.schema)
        self._columns = RecordColumns(self.schema, kinds)
        self._pending: list[Mapping[str, Any]] = []
        self._group: list[Any] = []
        self.written = 0

    def add(self, record: Mapping[str, Any]) -> None:
        """One record (a JSONL run's object)."""
        self._pending.append(record)
        if len(self._pending) == _FLATTEN_RECORDS:
            self._flatten()

    def _flatten(self) -> None:
        self._columns.extend(self._pending)
        self._pending = []
        if self._columns.rows >= _SLICE_RECORDS:
            self._group.append(self._columns.batch())
            if sum(b.num_rows for b in self._group) >= ROW_GROUP_RECORDS:
                self._write_group()

    def _write_group(self) -> None:
        table = self._pa.Table.from_batches(self._group, schema=self.schema)
        self._writer.write_table(table, row_group_size=ROW_GROUP_RECORDS)
        self.written += int(table.num_rows)
        self._group = []

    def finish(self) -> int:
        """Close the file and rename it over ``path``; returns the records written."""
        try:
            self._flatten()
            if self._columns.rows:
                self._group.append(self._columns.batch())
            if self._group or not self.written:
                self._write_group()
            self._writer.close()
            with open(self._tmp, "rb+") as f:
                # mkstemp makes the file 0600: the run keeps the mode of the file it replaces
                # (``batch`` creates its output 0644 under the umask to lock it), else 0644.
                try:
                    mode = os.stat(self.target).st_mode & 0o777
                except OSError:
                    mode = 0o644
                os.fchmod(f.fileno(), mode)
                os.fsync(f.fileno())
            os.replace(self._tmp, self.target)
        except BaseException:
            self.abort()
            raise
        return self.written

    def abort(self) -> None:
        """Drop what was written; ``path`` stays as it was."""
        with contextlib.suppress(Exception):
            self._writer.close()
        with contextlib.suppress(OSError):
            os.unlink(self._tmp)


def write_parquet_run(
    path: str | os.PathLike[str],
    records: Iterable[Mapping[str, Any]],
    questions: Mapping[str, Question],
) -> int:
    """Write ``records`` as ONE Parquet file at ``path``, atomically (:class:`RunWriter`).
    Returns the number of records written."""
    writer = RunWriter(path, questions)
    try:
        for record in records:
            writer.add(record)
    except BaseException:
        writer.abort()
        raise
    return writer.finish()


def iter_parquet_run(
    path: str | os.PathLike[str], row_groups: Sequence[int] | None = None
) -> Iterator[dict[str, Any]]:
    """The records of a Parquet run, one row group at a time (``row_groups`` picks some)."""
    require_pyarrow()
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    groups = range(parquet.num_row_groups) if row_groups is None else row_groups
    for group in groups:
        yield from table_to_records(parquet.read_row_group(group))
