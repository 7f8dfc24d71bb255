"""The record fields as data: each record class declares its fields once (a dataclass field with
:func:`wire` metadata) and everything that lists them derives from that declaration (issue 30
item 2: the shape was written four times, in ``RECORD_KEYS``, ``to_object``, the Arrow schema and
the Arrow reader).

What a field's metadata says:

- ``head``: one of the keys before a decision's own (``id``, ``schema_version``,
  ``questions_sha256``), not in ``RECORD_KEYS``;
- ``omit_none``: the key is left out when the value is None (a record written before the key
  existed is written back without it, never with a made-up value);
- ``extra``: a key a record adds only when it applies (``gates``, ``recalibrated``), after the
  decision's own keys and not in ``RECORD_KEYS``;
- ``asked``: how the state was asked (``ASKED_KEYS``);
- ``after``: the key's place on the wire when it is not its declaration's (``schema_version``
  is declared last, so positional constructors keep working, and written second);
- ``nest``: the key of the object the value is written under (an error's ``code`` and
  ``message`` under ``error``);
- ``out``: how the value becomes JSON (a copy, a list, ``to_object``), None: as it is;
  ``copies``: ``out`` only copies a value that is JSON already (a body built for one use,
  ``records.decision.decision_record``, skips it);
- ``arrow``: ``(pyarrow) -> DataType`` of its column, None: not a typed column (kept in
  ``extra``, or built from the question set as ``answers`` is); ``required``: not nullable;
- ``read``: ``(JSON value or None) -> field value``: how a record read back from a run gets the
  field from its key (None when the key is absent); None: chosen by the field's annotation
  (:func:`reader_for`).

``to_object`` is compiled once per class from this table (:func:`compile_to_object`): a loop
over the fields would cost each record of a batch a dozen lookups it does not need. Reading a
record back is compiled from the same table (:func:`compile_from_object`), so a field a record
class adds is read back with no reader edited.
Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "WireField",
    "compile_from_object",
    "compile_to_object",
    "from_object_of",
    "reader_for",
    "to_object_of",
    "wire",
    "wire_fields",
]


def wire(
    *,
    head: bool = False,
    omit_none: bool = False,
    extra: bool = False,
    asked: bool = False,
    after: str | None = None,
    nest: str | None = None,
    out: Callable[[Any], Any] | None = None,
    copies: bool = False,
    arrow: Callable[[Any], Any] | None = None,
    required: bool = False,
    read: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """A field's metadata (the module docstring says what each item means)."""
    return {
        "wire": WireField(
            "", head, omit_none, extra, asked, after, nest, out, copies, arrow, required, read
        )  # the name is filled in by wire_fields
    }


@dataclasses.dataclass(frozen=True)
class WireField:
    """One record field as the codecs see it."""

    name: str
    head: bool = False
    omit_none: bool = False
    extra: bool = False
    asked: bool = False
    after: str | None = None
    nest: str | None = None
    out: Callable[[Any], Any] | None = None
    copies: bool = False
    arrow: Callable[[Any], Any] | None = None
    required: bool = False
    read: Callable[[Any], Any] | None = None


_FIELDS: dict[type, tuple[WireField, ...]] = {}
_TO_OBJECT: dict[tuple[type, bool], Callable[[Any], dict[str, Any]]] = {}


def wire_fields(cls: type) -> tuple[WireField, ...]:
    """The fields of the record class ``cls`` in their order on the wire: declaration order,
    a field with ``after`` moved right after the field it names. A field without :func:`wire`
    metadata is written as it is, in declaration order (a subclass's new field included)."""
    known = _FIELDS.get(cls)
    if known is not None:
        return known
    found = [
        dataclasses.replace(f.metadata.get("wire", WireField("")), name=f.name)
        for f in dataclasses.fields(cls)
    ]
    order = [f for f in found if f.after is None]
    for f in found:
        if f.after is not None:
            at = next(i for i, g in enumerate(order) if g.name == f.after)
            order.insert(at + 1, f)
    _FIELDS[cls] = tuple(order)
    return _FIELDS[cls]


def to_object_of(cls: type, body: bool = False) -> Callable[[Any], dict[str, Any]]:
    """``cls``'s compiled ``to_object`` (:func:`compile_to_object`), made the first time it is
    asked for: a subclass gets its own, with its new fields. ``body``: the variant without the
    head keys that shares the record's JSON-ready values instead of copying them."""
    found = _TO_OBJECT.get((cls, body))
    if found is None:
        found = _TO_OBJECT[(cls, body)] = compile_to_object(cls, body=body)
    return found


def compile_to_object(cls: type, *, body: bool = False) -> Callable[[Any], dict[str, Any]]:
    """``cls``'s ``to_object``: its fields' JSON object, keys in :func:`wire_fields` order,
    generated as straight-line code (what ``dataclasses`` does for ``__init__``). ``body``:
    without the head fields, and without the ``copies`` conversions."""
    lines = ["def to_object(self):", "    out = {}"]
    env: dict[str, Any] = {}
    nests: dict[str, str] = {}
    for i, f in enumerate(wire_fields(cls)):
        if body and f.head:
            continue
        if body and f.copies:
            f = dataclasses.replace(f, out=None)
        value = f"self.{f.name}"
        if f.out is not None:
            env[f"_out{i}"] = f.out
        expr = "v" if f.out is None else f"_out{i}(v)"
        if f.nest is None:
            target = "out"
        else:
            if f.nest not in nests:
                nests[f.nest] = f"_n{len(nests)}"
                lines.append(f"    {nests[f.nest]} = out[{f.nest!r}] = {{}}")
            target = nests[f.nest]
        lines.append(f"    v = {value}")
        if f.omit_none:
            lines.append("    if v is not None:")
            lines.append(f"        {target}[{f.name!r}] = {expr}")
        else:
            lines.append(f"    {target}[{f.name!r}] = {expr}")
    lines.append("    return out")
    exec("\n".join(lines), env)  # the code is built above from field names alone
    fn: Callable[[Any], dict[str, Any]] = env["to_object"]
    fn.__qualname__ = f"{cls.__qualname__}.to_object"
    return fn


# --- reading a record back ---------------------------------------------------------------------
#
# Each reader takes the JSON value of a field's key (None when absent) and returns the field's
# value, never raising: a value of the wrong kind reads as the type's empty value, as it always
# has ("model": 7 is "", "calibrated": "yes" is False, a usage count of 1.5 is 0).


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _true(value: Any) -> bool:
    return value is True


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _count_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _bool_or_none(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _number_or_none(value: Any) -> float | None:
    # An integer stays an integer: a record is written back byte for byte.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def _words(value: Any) -> tuple[str, ...]:
    return tuple(f for f in value if isinstance(f, str)) if isinstance(value, list) else ()


#: The reader of each plain annotation a record field may have.
_READERS: dict[Any, Callable[[Any], Any]] = {
    str: _text,
    bool: _true,
    int: _count,
    int | None: _count_or_none,
    str | None: _text_or_none,
    bool | None: _bool_or_none,
    float | None: _number_or_none,
    tuple[str, ...]: _words,
}

#: What a nested record reads when its key is absent or not an object.
_EMPTY: Mapping[str, Any] = types.MappingProxyType({})


def reader_for(annotation: Any, where: str = "") -> Callable[[Any], Any]:
    """How a field of this annotation is read back (module comment above): a plain type, or a
    record class with wire fields (``usage``), read from its object. TypeError for any other
    annotation: such a field says how it is read with ``wire(read=...)``."""
    found = _READERS.get(annotation)
    if found is not None:
        return found
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        nested = from_object_of(annotation)

        def read_nested(value: Any) -> Any:
            return nested(value if type(value) is dict or isinstance(value, Mapping) else _EMPTY)

        return read_nested
    raise TypeError(f"record field {where}: no reader for {annotation!r}: give wire(read=...)")


_FROM_OBJECT: dict[type, Callable[[Mapping[str, Any]], Any]] = {}


def from_object_of(cls: type) -> Callable[[Mapping[str, Any]], Any]:
    """``cls``'s compiled reader (:func:`compile_from_object`), made the first time it is asked
    for: a subclass gets its own, with its new fields."""
    found = _FROM_OBJECT.get(cls)
    if found is None:
        found = _FROM_OBJECT[cls] = compile_from_object(cls)
    return found


def compile_from_object(cls: type) -> Callable[[Mapping[str, Any]], Any]:
    """``cls`` read back from its JSON object (what ``to_object`` wrote, or an earlier shape of
    it): each field from its key (under its ``nest`` object, for a nested one) through its
    ``read`` or its annotation's reader, generated as straight-line code like
    :func:`compile_to_object`. The caller has checked what makes the object a record of
    ``cls`` (``records.model.record_from_object``: the id, the ``schema_version``)."""
    hints = typing.get_type_hints(cls)
    by_name = {f.name: f for f in wire_fields(cls)}
    env: dict[str, Any] = {"_cls": cls, "_Mapping": Mapping, "_EMPTY": _EMPTY}
    lines = ["def from_object(obj):"]
    nests: dict[str, str] = {}
    args: list[str] = []
    keywords: list[str] = []
    for i, f in enumerate(dataclasses.fields(cls)):
        if not f.init:
            continue
        w = by_name[f.name]
        where = f"{cls.__qualname__}.{f.name}"
        env[f"_r{i}"] = w.read if w.read is not None else reader_for(hints[f.name], where)
        source = "obj"
        if w.nest is not None:
            if w.nest not in nests:
                nests[w.nest] = source = f"_n{len(nests)}"
                lines.append(f"    {source} = obj.get({w.nest!r})")
                check = f"type({source}) is not dict and not isinstance({source}, _Mapping)"
                lines.append(f"    if {check}:")
                lines.append(f"        {source} = _EMPTY")
            source = nests[w.nest]
        value = f"_r{i}({source}.get({f.name!r}))"
        if f.kw_only:
            keywords.append(f"{f.name}={value}")
        else:
            args.append(value)
    lines.append(f"    return _cls({', '.join(args + keywords)})")
    exec("\n".join(lines), env)  # the code is built above from field names alone
    fn: Callable[[Mapping[str, Any]], Any] = env["from_object"]
    fn.__qualname__ = f"{cls.__qualname__}.from_object"
    return fn
