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
  ``extra``, or built from the question set as ``answers`` is); ``required``: not nullable.

``to_object`` is compiled once per class from this table (:func:`compile_to_object`): a loop
over the fields would cost each record of a batch a dozen lookups it does not need.
Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

__all__ = ["WireField", "compile_to_object", "to_object_of", "wire", "wire_fields"]


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
) -> dict[str, Any]:
    """A field's metadata (the module docstring says what each item means)."""
    return {
        "wire": WireField(
            "", head, omit_none, extra, asked, after, nest, out, copies, arrow, required
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
