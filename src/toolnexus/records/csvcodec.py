"""The ``csv`` run format: its columns, its cells and its codec, and the lossless escaping of ids.

A header, then one row per record. The columns are ``id``, ``error.code``, ``error.message``,
then a decision record's fields flattened to dotted names in record order (``schema_version``,
``questions_sha256``, ``model``, ``calibrated``, ``cached``, ``packed``, ``position``,
``reasked``, ``usage.*``, ``thresholds.*``, ``answers.<key>.<field>``, ``flags``, ``invalid``).
Cells: ``true``/``false`` for booleans, empty for null, flags as their words separated by spaces
(``near-uniform uncalibrated``), any other list or object (a probability map, a legend) as
compact JSON; a newline inside a cell is written ``\\n`` so every row is one physical line. The
``id`` cell alone is escaped losslessly (:func:`escape_id`), so that every reader gets every id
back exactly.

Split out of ``records.codec`` (which still names all of it, and holds the JSON codecs and the
registry :data:`~toolnexus.records.codec.CODECS`), so each stays under the house's module size.
Pure: no I/O.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any

from ..core import ReportError, registry
from .fields import wire_fields
from .model import (
    ASKED_KEYS,
    GATES,
    QUESTIONS_SHA256,
    RECALIBRATED,
    SCHEMA_VERSION_KEY,
    DecisionRecord,
    ErrorRecord,
    Record,
    RecordVersionError,
    record_from_object,
)

__all__ = [
    "ERROR_CODE_COLUMN",
    "ERROR_MESSAGE_COLUMN",
    "FLATTEN_DEPTH",
    "CellReaders",
    "CsvCodec",
    "RecordDecodeError",
    "cell_readers",
    "csv_header",
    "csv_line",
    "earlier_headers",
    "escape_id",
    "flatten",
    "read_csv_header",
    "unescape_id",
]

# How each cell of a CSV run is read back, learnt from the declarations: the record classes'
# fields (``records.model``: each field's ``arrow`` metadata says its kind) and each registered
# question type's answer fields (its ``arrow`` hook, ``qtypes``). A field a record class adds, or a
# type registered from its own module, is read with its kind and no table here is edited (issue
# 30 item 2: the shape was written again in the CSV reader's list of names).
#
# Both declarations are functions of the pyarrow module; the CSV codec never imports pyarrow, so
# they are asked with a stand-in (:data:`_KINDS`) whose data types are the readers of a cell
# holding them: a number, a count, ``true``/``false``, JSON text for a map or a list, the text
# itself for a string. A struct opens into its members' columns (``usage.cost``,
# ``thresholds.yes``). A hook that asks for a type the stand-in lacks leaves its fields as text.
# Pure: no I/O.


#: A cell's reader: its text -> the JSON value (ValueError for text of another kind).
CellReader = Callable[[str], Any]


_BOOLS = {"true": True, "false": False}


def _bool_cell(value: str) -> Any:
    return _BOOLS.get(value, value)


def _words_or_json(value: str) -> Any:
    return json.loads(value) if value.startswith("[") else value.split()


class _Members(dict[str, Any]):
    """A struct of the stand-in: its members' readers by name."""


def _struct(fields: Iterable[tuple[str, Any]]) -> _Members:
    return _Members(fields)


def _number() -> CellReader:
    return float


def _count() -> CellReader:
    return int


def _flag() -> CellReader:
    return _bool_cell


def _text() -> None:
    return None  # the cell as it is


def _json(*args: Any, **kwargs: Any) -> CellReader:
    return json.loads


_KINDS = SimpleNamespace(
    **dict.fromkeys(("float16", "float32", "float64"), _number),
    **dict.fromkeys(
        ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"), _count
    ),
    bool_=_flag,
    **dict.fromkeys(("string", "utf8", "large_string"), _text),
    **dict.fromkeys(("map_", "list_", "large_list"), _json),
    field=lambda name, kind, *args, **kwargs: (name, kind),
    struct=_struct,
)


#: The words a flags cell holds (``near-uniform uncalibrated``), a record's or an answer's:
#: the writer's rule (``csvcodec._cell``), not a kind.
_FLAGS = "flags"


#: A recalibrated answer's ``recalibrated`` is one cell (three levels down, ``FLATTEN_DEPTH``).
_ANSWER_RECALIBRATED = "recalibrated"


#: An answer's ``thresholds`` (schema_version 2) is one JSON cell, three levels down too.
_ANSWER_THRESHOLDS = "thresholds"


#: A gate's outcome (``records.gates``): ``{action, escalated, reason}``, mappings by key.
_GATE_CELLS: dict[str, CellReader] = {"escalated": _bool_cell}


class CellReaders:
    """The readers of one CSV run's cells by field name (a column's last dotted segment), and
    the top-level columns that are text (an id ``7`` stays the text ``7``, an empty model
    stays "")."""

    __slots__ = ("by_name", "text")

    def __init__(self, by_name: dict[str, CellReader], text: frozenset[str]) -> None:
        self.by_name = by_name
        self.text = text


_RECORD: tuple[dict[str, CellReader], frozenset[str]] | None = None


def _record_cells() -> tuple[dict[str, CellReader], frozenset[str]]:
    """The record classes' own cells (made once: the classes do not change)."""
    global _RECORD
    if _RECORD is None:
        by_name: dict[str, CellReader] = {}
        text: set[str] = set()
        for cls in (DecisionRecord, ErrorRecord):
            for f in wire_fields(cls):
                kind = f.arrow(_KINDS) if f.arrow is not None else None
                if f.name == _FLAGS:
                    by_name[_FLAGS] = _words_or_json
                elif isinstance(kind, _Members):
                    by_name.update({k: v for k, v in kind.items() if v is not None})
                elif kind is not None:
                    by_name.setdefault(f.name, kind)
                elif f.arrow is not None and f.nest is None:
                    text.add(f.name)
        _RECORD = by_name, frozenset(text)
    return _RECORD


def cell_readers() -> CellReaders:
    """The readers of a CSV run's cells for the types registered now (a record's fields first,
    then each type's answer fields in registration order: the first kind of a name wins)."""
    record, text = _record_cells()
    by_name = {
        **record,
        _ANSWER_RECALIBRATED: json.loads,
        _ANSWER_THRESHOLDS: json.loads,
        **_GATE_CELLS,
    }
    for qtype in registry.registered():
        if qtype.arrow is None:
            continue
        try:
            fields = qtype.arrow(_KINDS)
        except (AttributeError, TypeError):
            continue  # a hook that needs more of pyarrow: its cells are read as text
        for name, kind in fields:
            if callable(kind):
                by_name.setdefault(name, kind)
    return CellReaders(by_name, text)


ERROR_CODE_COLUMN = "error.code"


ERROR_MESSAGE_COLUMN = "error.message"


#: How deep ``flatten`` opens objects: ``answers.<key>.<field>`` is a column, but a
#: probability map or a legend stays one JSON cell (a 255-option choice is not 255 columns).
FLATTEN_DEPTH = 3


class RecordDecodeError(ReportError, ValueError):
    """A line or cell that is not a batch value; ``str(e)`` says which and what it holds."""


_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r"}


#: Escaped wherever they stand in an id: the backslash, every C0/C1 control character and DEL,
#: the line and paragraph separators, and the bidirectional marks, embeddings, overrides and
#: isolates (text that reorders what a spreadsheet or terminal shows).
_ESCAPE = re.compile(
    "[\\\\\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


#: Escaped as the first character only: what makes a spreadsheet read a cell as a formula.
_FORMULA_START = frozenset("=+-@")


_UNESCAPE = re.compile(r"\\(\\|n|r|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2})")


def _escaped(m: re.Match[str]) -> str:
    char = m.group()
    fixed = _ESCAPES.get(char)
    if fixed is not None:
        return fixed
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_id(text: str) -> str:
    """An id as one CSV-safe line of UTF-8 text, losslessly (:func:`unescape_id` reverses it):
    ``\\``, LF and CR become ``\\\\``, ``\\n`` and ``\\r``; any other control character
    ``\\xXX``; a line separator or bidirectional control ``\\uXXXX``; a first character
    ``=``, ``+``, ``-`` or ``@`` with more after it (a formula when Excel opens the file)
    ``\\u003d`` and so on; and text that is not UTF-8 (a lone surrogate from JSON) ``\\uXXXX``."""
    text = _ESCAPE.sub(_escaped, text)
    # A lone "-" (eval's name for stdin) starts no formula: nothing follows it.
    if text[:1] in _FORMULA_START and len(text) > 1:
        text = f"\\u{ord(text[0]):04x}{text[1:]}"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def unescape_id(text: str) -> str:
    """The id that :func:`escape_id` wrote as ``text``."""

    def one(m: re.Match[str]) -> str:
        code = m.group(1)
        if code == "\\":
            return "\\"
        if code == "n":
            return "\n"
        if code == "r":
            return "\r"
        return chr(int(code[1:], 16))

    return _UNESCAPE.sub(one, text) if "\\" in text else text


def flatten(record: Mapping[str, Any], prefix: str = "", depth: int = 1) -> dict[str, Any]:
    """Nested objects become dotted keys down to ``FLATTEN_DEPTH`` segments; deeper objects
    and arrays stay whole."""
    out: dict[str, Any] = {}
    for k, v in record.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping) and depth < FLATTEN_DEPTH:
            out.update(flatten(v, name + ".", depth + 1))
        else:
            out[name] = v
    return out


def csv_header(sample_record: Mapping[str, Any]) -> list[str]:
    """The header: ``id``, the error columns, then every column of ``sample_record`` (a
    decision record for this question set) in its own order."""
    cols = ["id", ERROR_CODE_COLUMN, ERROR_MESSAGE_COLUMN]
    cols += [c for c in flatten(sample_record) if c not in cols]
    return cols


def earlier_headers(columns: Sequence[str]) -> list[list[str]]:
    """The headers earlier versions wrote for a run whose header is now ``columns``, newest
    first: before each answer's ``thresholds`` (schema_version 2, issue 42 item 6), before
    ``schema_version`` (issue 30 item 7), and before ``packed``, ``position``
    and ``reasked`` too (issue 31 item 1). ``--resume`` continues such a run under its own
    header: the new records' cells for the columns it lacks are not written, so the file keeps
    one shape."""
    # schema_version 1: no answers.<key>.thresholds (issue 42 item 6)
    v1 = [c for c in columns if not (c.startswith("answers.") and c.endswith(".thresholds"))]
    no_version = [c for c in v1 if c != SCHEMA_VERSION_KEY]
    return [v1, no_version, [c for c in no_version if c not in ASKED_KEYS]]


def _is_flags(column: str) -> bool:
    return column == "flags" or column.endswith(".flags")


def _cell(column: str, value: Any) -> str:
    if column == "id":
        # Ids key --resume and join labels: written losslessly (a newline in an id once came
        # back as the two characters \n and was re-sent on every resume).
        return escape_id(str(value))
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_flags(column) and isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = str(value)
    return text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")


def _row(cells: Sequence[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(cells)
    return buf.getvalue()


def csv_line(columns: Sequence[str], record: Mapping[str, Any] | Sequence[str]) -> str:
    """One CSV line: the header itself when ``record`` is the column list, else ``record``
    (``{"id", ...}``: a record's object, or ``eval``'s decision record) under ``columns``."""
    if not isinstance(record, Mapping):
        # A column names a question key, which may hold a newline: escaped as ids are, so the
        # header is one physical line too, and read back by read_csv_header.
        return _row([escape_id(c) for c in record])
    flat = flatten(record)
    return _row([_cell(c, flat.get(c)) for c in columns])


def read_csv_header(row: Sequence[str]) -> list[str]:
    """The column names of a header row as :func:`csv_line` wrote them."""
    return [unescape_id(c) for c in row]


def _column_plan(column: str) -> tuple[str, ...]:
    """Where a flattened column goes: ``answers.<key>.<field>`` keeps dots inside the key."""
    if column.startswith("answers."):
        key, _, name = column[len("answers.") :].rpartition(".")
        return ("answers", key, name)
    if column.startswith(GATES + "."):  # gates.<name>.<field>: a gate's name may hold dots
        key, _, name = column[len(GATES) + 1 :].rpartition(".")
        return (GATES, key, name)
    return tuple(column.split(".", 1))


def _read_cell(readers: Mapping[str, CellReader], field_name: str, value: str) -> Any:
    # How a cell is read back, by its field name (the last dotted segment of its column):
    # learnt from the record classes and the registered types (``cell_readers``).
    reader = readers.get(field_name)
    if reader is None:
        return value
    try:
        return reader(value)
    except ValueError:  # int() of thousands of digits too
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise RecordDecodeError(
            f"column {field_name!r} holds {shown!r}, not a batch value"
        ) from None


class CsvCodec:
    """``csv`` under one header (``columns``): the shape ``eval --format csv`` writes too."""

    name = "csv"

    def __init__(self, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self._plan = [_column_plan(c) for c in self.columns]
        self._fields = {p[2] for p in self._plan if p[0] == "answers"}
        # learnt at the first row read (a writer never needs them), from the types then
        # registered
        self._cells: CellReaders | None = None

    def start(self) -> bytes:
        return csv_line(self.columns, self.columns).encode("utf-8")

    def encode(self, record: Record, first: bool = True) -> bytes:
        return csv_line(self.columns, record.to_object()).encode("utf-8", "backslashreplace")

    def object_of(self, row: Sequence[str]) -> dict[str, Any]:
        """The JSON object of one row (what the same record's JSONL line holds). Raises
        :class:`RecordDecodeError` for a row of another width or a cell of the wrong kind."""
        if len(row) != len(self._plan):
            raise RecordDecodeError(f"{len(row)} cells for {len(self._plan)} columns")
        cells = self._cells
        if cells is None:
            cells = self._cells = cell_readers()
        readers, text = cells.by_name, cells.text
        record: dict[str, Any] = {}
        answers: dict[str, dict[str, Any]] = {}
        gates: dict[str, dict[str, Any]] = {}
        for where, value in zip(self._plan, row, strict=True):
            if where[0] == "answers":
                if value != "":
                    answers.setdefault(where[1], {})[where[2]] = _read_cell(
                        readers, where[2], value
                    )
            elif where[0] == GATES and len(where) == 3:
                if value != "":
                    gates.setdefault(where[1], {})[where[2]] = _read_cell(readers, where[2], value)
            elif len(where) == 1:
                name = where[0]
                if name == "id":
                    record[name] = unescape_id(value)
                elif name in text:
                    record[name] = value
                elif value == "":
                    record[name] = [] if name == "flags" else None
                else:
                    record[name] = _read_cell(readers, name, value)
            else:
                cell = None if value == "" else _read_cell(readers, where[1], value)
                record.setdefault(where[0], {})[where[1]] = cell
        error = record.get("error")
        if isinstance(error, dict) and error.get("code"):
            out = {"id": record.get("id")}
            if record.get(SCHEMA_VERSION_KEY) is not None:
                out[SCHEMA_VERSION_KEY] = record[SCHEMA_VERSION_KEY]
            if record.get(QUESTIONS_SHA256):
                out[QUESTIONS_SHA256] = record[QUESTIONS_SHA256]
            out["error"] = error
            return out
        record.pop("error", None)
        for answer in answers.values():
            # An answer without flags wrote an empty cell: its flags are the empty list.
            if "flags" not in answer and "flags" in self._fields:
                answer["flags"] = []
        if not record.get(QUESTIONS_SHA256):
            record.pop(QUESTIONS_SHA256, None)
        if record.get("invalid") == "":
            record["invalid"] = None
        recalibrated = record.get(RECALIBRATED)
        if isinstance(recalibrated, dict) and not any(recalibrated.values()):
            del record[RECALIBRATED]  # a record that was not recalibrated: empty cells
        record["answers"] = answers
        if gates:
            record[GATES] = gates
        return record

    def decode_row(self, row: Sequence[str]) -> Record | None:
        """The record of one row (None for a row that is not one)."""
        return record_from_object(self.object_of(row))

    def decode(self, line: bytes) -> Record | None:
        try:
            row = next(csv.reader([line.decode("utf-8")]))
            return self.decode_row(row)
        except RecordVersionError:
            raise  # as in JsonlCodec.decode
        except (csv.Error, StopIteration, ValueError):  # UnicodeDecodeError is a ValueError
            return None

    def end(self) -> bytes:
        return b""
