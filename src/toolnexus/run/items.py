"""What one state read from a ``toolnexus batch`` input is (:class:`InputItem`), how the inputs
are to be read (:class:`InputSpec`), what kind of input an argument is, and how ``--id-field``,
``--state-field`` and ``--image-field`` turn one parsed record into an item (see
``inputs`` and ``codecs`` for the readers and the rules)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from ..core import MALFORMED_INPUT, Image, RunError, with_images
from ..records import id_problem
from .states import check_state

__all__ = [
    "ARROW_SUFFIXES",
    "INVALID_STATE",
    "MALFORMED",
    "PARQUET_SUFFIXES",
    "InputItem",
    "InputSpec",
    "Notes",
    "checked",
    "from_object",
    "is_arrow_input",
    "parquet_files",
]

MALFORMED = MALFORMED_INPUT.code
INVALID_STATE = "invalid_state"

PARQUET_SUFFIXES = (".parquet", ".pq")
ARROW_SUFFIXES = (".arrow", ".feather", ".ipc")


class Notes(Protocol):
    """Where a reader tells the user something: ``note(message)`` (said once per run) or
    ``note(message, "warning")``; the run hands it on as a ``RunNote``."""

    def __call__(self, message: str, kind: Literal["note", "warning"] = "note") -> None: ...


@dataclass(frozen=True, slots=True)
class InputItem:
    """One state read from an input. Exactly one of ``state`` / ``error`` is meaningful.

    ``id`` is what the output record carries; ``key`` is its text form (``str(id)``), used for
    resume and shard matching. ``error`` is ``(code, one-line message)``.
    """

    id: str | int
    state: Any = None
    error: tuple[str, str] | None = None
    #: Where the state was read: the index of its INPUT argument and its 1-based line there
    #: (0 for a state file, whose id is its path). Duplicate ids are reported with it.
    source: int = 0
    line: int = 0
    #: The record is an object without the ``--state-field``: when no record of the first
    #: ``pace.STATE_FIELD_PROBE`` has it, the field is a typo and the run stops.
    no_state_field: bool = False

    @property
    def key(self) -> str:
        return str(self.id)


@dataclass(frozen=True)
class InputSpec:
    """How to read the inputs: which field carries the id and which the state.

    ``state_fields`` is ``--state-field`` as given, once or more: no field makes the whole
    record the state, one field makes its value the state, several make an object of those
    fields (``--state-field subject --state-field body``), for every input format."""

    id_field: str | None = None
    state_fields: tuple[str, ...] = ()
    image_field: str | None = None
    #: ``--recursive``: a directory input's subfolders too
    recursive: bool = False


def parquet_files(root: str) -> list[str]:
    """The Parquet files of a directory, in name order (hidden ones and subfolders skipped)."""
    with os.scandir(root) as it:
        return sorted(
            e.path
            for e in it
            if e.is_file()
            and not e.name.startswith(".")
            and e.name.lower().endswith(PARQUET_SUFFIXES)
        )


def is_arrow_input(arg: str) -> bool:
    """A Parquet or Arrow file, or a directory that holds Parquet files (a data lake's
    folder: its other files, such as a README or ``_SUCCESS``, are not read)."""
    if arg.lower().endswith(PARQUET_SUFFIXES + ARROW_SUFFIXES):
        return True
    return os.path.isdir(arg) and bool(parquet_files(arg))


def checked(item_id: str | int, state: Any, where: str) -> InputItem:
    try:
        check_state(state, where)
    except RunError as e:
        return InputItem(item_id, error=(INVALID_STATE, e.message))
    return InputItem(item_id, state=state)


def _no_state_field(item_id: str | int, where: str, field_name: str) -> InputItem:
    message = f"{where}: state field {field_name!r} missing"
    return InputItem(item_id, error=(MALFORMED, message), no_state_field=True)


def _with_image(
    item_id: str | int, value: dict[str, Any], where: str, spec: InputSpec, base: Path
) -> InputItem:
    """Apply ``--image-field`` (and ``--state-field``) to one record; see the module docstring."""
    field_name = spec.image_field
    assert field_name is not None
    raw = value.get(field_name)
    if not isinstance(raw, str) or not raw:
        what = "missing" if raw is None else f"not a path: {raw!r}"
        return InputItem(item_id, error=(MALFORMED, f"{where}: image field {field_name!r} {what}"))
    path = base / raw
    if not path.is_file():
        return InputItem(
            item_id, error=(MALFORMED, f"{where}: image field {field_name!r}: no such file {path}")
        )
    image = Image(path)
    fields = spec.state_fields
    if not fields:
        return InputItem(item_id, state={**value, field_name: image})
    if fields == (field_name,):
        return InputItem(item_id, state=image)
    if field_name in fields:
        # One of several fields: the image takes its path's place in the object.
        value = {**value, field_name: image}
    item = _stated(item_id, value, where, spec)
    if item.error is not None or field_name in fields:
        return item
    return InputItem(item_id, state=with_images(item.state, {field_name: image}))


def _stated(item_id: str | int, value: dict[str, Any], where: str, spec: InputSpec) -> InputItem:
    """The state ``--state-field`` names in one record: the whole record without it, the
    field's value with one, an object of the fields with several."""
    fields = spec.state_fields
    if not fields:
        return checked(item_id, value, where)
    for name in fields:
        if name not in value:
            return _no_state_field(item_id, where, name)
    if len(fields) == 1:
        return checked(item_id, value[fields[0]], where)
    return checked(item_id, {name: value[name] for name in fields}, where)


def from_object(
    value: Any, fallback_id: str | int, where: str, spec: InputSpec, base: Path | None = None
) -> InputItem:
    """Apply ``--id-field`` / ``--state-field`` / ``--image-field`` to one parsed value."""
    if spec.id_field is None and not spec.state_fields and spec.image_field is None:
        return checked(fallback_id, value, where)
    if not isinstance(value, dict):
        return InputItem(
            fallback_id,
            error=(MALFORMED, f"{where}: expected an object with the id/state fields"),
        )
    item_id: str | int = fallback_id
    if spec.id_field is not None:
        raw = value.get(spec.id_field)
        what = id_problem(raw)
        if what is not None:
            return InputItem(
                fallback_id, error=(MALFORMED, f"{where}: id field {spec.id_field!r} {what}")
            )
        item_id = cast(str | int, raw)  # what id_problem accepts
    if spec.image_field is not None:
        return _with_image(item_id, value, where, spec, base or Path("."))
    return _stated(item_id, value, where, spec)
