"""How each cell of a CSV run is read back, learnt from the declarations: the record classes'
fields (``records.model``: each field's ``arrow`` metadata says its kind) and each registered
question type's answer fields (its ``arrow`` hook, ``qtypes``). A field a record class adds, or a
type registered from its own module, is read with its kind and no table here is edited (issue
30 item 2: the shape was written again in the CSV reader's list of names).

Both declarations are functions of the pyarrow module; the CSV codec never imports pyarrow, so
they are asked with a stand-in (:data:`_KINDS`) whose data types are the readers of a cell
holding them: a number, a count, ``true``/``false``, JSON text for a map or a list, the text
itself for a string. A struct opens into its members' columns (``usage.cost``,
``thresholds.yes``). A hook that asks for a type the stand-in lacks leaves its fields as text.
Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

from ..qtypes import registry
from .fields import wire_fields
from .model import DecisionRecord, ErrorRecord

__all__ = ["CellReaders", "cell_readers"]

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
