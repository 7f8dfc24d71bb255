"""How the typed report is written as JSON, and how its text is mapped: the two walks over its
frozen dataclasses (``report.model``, ``report.questionreport``), below every module that
declares them.

A class's fields, in order, ARE its JSON object's keys (:func:`to_json` walks them). A field's
``metadata["json"]`` says how it is written when it is not written as is:

- ``SKIP``: not in the JSON (what only a message needs, such as the first ids of a flag);
- ``OMIT_NONE``: left out while ``None`` (``threshold`` without ``--target-precision``; the
  place for later per-question figures such as an ECE interval, so that reports which do not
  compute them keep their bytes);
- ``OMIT_ZERO``: left out while 0 (a count most reports do not have, such as the labelled
  answers left out as invalid);
- ``EMPTY_OBJECT``: ``{}`` while ``None`` (``metrics`` and ``distribution`` of a question with
  nothing to show).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["EMPTY_OBJECT", "OMIT_NONE", "OMIT_ZERO", "SKIP", "map_text", "to_json"]

SKIP: Mapping[str, str] = {"json": "skip"}
OMIT_NONE: Mapping[str, str] = {"json": "omit_none"}
EMPTY_OBJECT: Mapping[str, str] = {"json": "empty_object"}
OMIT_ZERO: Mapping[str, str] = {"json": "omit_zero"}


def to_json(value: Any) -> Any:
    """``value`` as the JSON value the report prints: a dataclass as an object of its fields
    in order (see the module docstring for ``metadata["json"]``), a mapping as an object, a
    tuple or list as an array, anything else as is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            how = f.metadata.get("json")
            if (
                how == "skip"
                or (how == "omit_none" and item is None)
                or (how == "omit_zero" and item == 0)
            ):
                continue
            out[f.name] = {} if how == "empty_object" and item is None else to_json(item)
        return out
    if isinstance(value, Mapping):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [to_json(v) for v in value]
    return value


def map_text(value: T, fn: Callable[[str], str]) -> T:
    """A copy of ``value`` with ``fn`` applied to every string in it, mapping keys included
    (the table shows a report's text through :func:`toolnexus.core.safetext.printable`)."""
    out: Any
    if isinstance(value, str):
        out = fn(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: map_text(getattr(value, f.name), fn) for f in dataclasses.fields(value)}
        out = dataclasses.replace(value, **changes)
    elif isinstance(value, Mapping):
        out = {map_text(k, fn): map_text(v, fn) for k, v in value.items()}
    elif isinstance(value, tuple | list):
        out = type(value)(map_text(v, fn) for v in value)
    else:
        out = value
    return out  # type: ignore[no-any-return]  # the same shape as value, strings mapped
