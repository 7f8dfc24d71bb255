"""Text shown to a person, never obeyed by their terminal (pure).

Data reaches a terminal from run files, question files, file names, HTTP clients and servers:
an ESC in it could set colours, clear the screen, retitle the window or write the clipboard
(OSC 52), and a bidirectional override could make a name read other than it is written.
:func:`printable` writes those characters as escapes; every human-readable output (the CLI's
tables and one-line messages, ``toolnexus serve``'s access log) goes through it. Machine
formats (JSON, JSONL, CSV) keep the data exact.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["printable", "printable_data"]

#: What a terminal would act on instead of show: C0 controls but tab and newline (ESC starts
#: colour, clear-screen, title and clipboard sequences), DEL, C1 controls (0x9b is a one-byte
#: CSI), and the bidirectional overrides that make text read other than it is written.
_UNPRINTABLE = {
    c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"
    for c in (
        *range(0x00, 0x09),
        *range(0x0B, 0x20),
        0x7F,
        *range(0x80, 0xA0),
        0x200E,
        0x200F,
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
    )
}


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on written as an escape (``\\x1b``):
    data from a run file, a question file or a server is shown, never obeyed."""
    return text.translate(_UNPRINTABLE)


def printable_data(value: Any) -> Any:
    """:func:`printable` over every string of a JSON-like value (keys included)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, Mapping):
        return {printable_data(k): printable_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(printable_data(v) for v in value)
    return value
