"""What ``toolnexus filter`` reads: each input line as a :class:`Line`, its bytes kept as read
(the output writes them back unchanged) beside its state. A text line is its own state (without
its line ending); with ``--state-field`` a line is a JSON object and the state is that field,
found as a key first, else as a dotted path into nested objects. A blank line has no state; a
line that is not UTF-8, not JSON or without the field carries its error (``malformed_input``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from ..core import (
    MALFORMED_INPUT,
    one_line,
)

__all__ = ["Line", "read_lines"]


@dataclass(frozen=True, slots=True)
class Line:
    """One input line: where it was read, its bytes as read, and its state or why it has none."""

    where: str
    raw: bytes
    state: Any = None
    error: tuple[str, str] | None = None
    blank: bool = False


def _field(value: Any, path: str) -> tuple[bool, Any]:
    """``path`` in ``value``: the key itself first, else a dotted path into nested objects."""
    if isinstance(value, dict) and path in value:
        return True, value[path]
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _state_of(
    text: str, where: str, fields: list[str] | None
) -> tuple[Any, tuple[str, str] | None]:
    if not fields:
        return text, None
    bad = MALFORMED_INPUT.code
    try:
        value = json.loads(text)
    except ValueError as e:
        return None, (bad, f"{where}: invalid JSON: {one_line(str(e))}")
    got: dict[str, Any] = {}
    for name in fields:
        found, got[name] = _field(value, name)
        if not found:
            return None, (bad, f"{where}: state field {name!r} missing")
    return (got[fields[0]] if len(fields) == 1 else got), None


def read_lines(streams: list[tuple[str, IO[bytes]]], fields: list[str] | None) -> Iterator[Line]:
    """Every line of ``streams`` (name, binary stream) as a :class:`Line`, read lazily."""
    for name, stream in streams:
        for lineno, raw in enumerate(stream, 1):
            where = f"{name}:{lineno}"
            body = raw.rstrip(b"\r\n") if raw.endswith(b"\n") else raw
            if not body.strip():
                yield Line(where, raw, blank=True)
                continue
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError as e:
                yield Line(
                    where, raw, error=(MALFORMED_INPUT.code, f"{where}: not UTF-8 (byte {e.start})")
                )
                continue
            state, error = _state_of(text, where, fields)
            yield Line(where, raw, state, error)
