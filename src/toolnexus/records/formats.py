"""The formats a run file is read back in (``report``): one registry, so a reader never branches
on a format's name.

A :class:`RunFormat` says how to tell a file of its format (suffixes, first bytes), how to
iterate its records as ``(line, object)``, whether and how a long file is cut into
:class:`Span` chunks counted side by side (and how a chunk's line numbers relate to the
file's), whether a chunk can be counted by columns, and how a labels file of the format is read.
The readers of jsonl, json, csv and parquet are ``report.formats``' (they raise
``report.inputs``' located errors) and register there, in that order; a format registered
from anywhere else is read by ``report`` as they are. Writing a run is ``records.codec``'s and
``run.codecs``'s business, not this module's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = [
    "RunFormat",
    "Span",
    "format_named",
    "register_format",
    "run_formats",
    "sniffed_format",
    "suffix_format",
    "unregister_format",
]


class Span(NamedTuple):
    """Bytes ``start`` to ``end`` of a run, ``start`` at the beginning of a line (for Parquet:
    row groups ``start`` to ``end``), and the file they were measured in (``st_dev, st_ino``):
    a chunk is read only from that same file."""

    start: int
    end: int
    file: tuple[int, int]


#: ``(line, object)`` for the records of ``path`` (of only ``span``'s chunk, when given).
Records = Callable[[str, Span | None], Iterator[tuple[int, Any]]]


@dataclass(frozen=True)
class RunFormat:
    """How a run file of one format is read back."""

    #: what ``detect_format`` answers and a reader is asked for by
    name: str
    #: ``records(path, span)``: every record as ``(line, object)`` in file order
    records: Records
    #: lower-case file suffixes (with the dot) that name this format
    suffixes: tuple[str, ...] = ()
    #: ``sniff(head)``: the file's first 4096 bytes are of this format (tried in registration
    #: order when no suffix names a format)
    sniff: Callable[[bytes], bool] | None = None
    #: ``spans(path, chunk_bytes)``: the chunks a long run is counted in, side by side (fewer
    #: than two: read whole); None: always read whole, and ``records`` is never given a span
    spans: Callable[[str, int], list[Span]] | None = None
    #: a span is bytes, and a chunk's lines are numbered from its start (moved to the file's
    #: lines on an error); False: a chunk numbers its records as the file does
    lines_from_span: bool = False
    #: ``count(path, span, stats)``: count a chunk by its columns, returning the ids counted,
    #: or None when the record path must count it (used when no two-run option is on)
    count_columns: Callable[[str, Span, Any], set[str] | None] | None = None
    #: ``cut(path)``: the warning for a last record cut short by a kill, or None
    cut_last_line: Callable[[str], str | None] | None = None
    #: ``rows(path)``: a labels file's rows as ``(line, object)``; None: ``records(path, None)``
    label_rows: Callable[[str], Iterator[tuple[int, Any]]] | None = None
    #: ``table(path)``: a labels file read as cells, ``(notes, rows)`` with the header row
    #: first; when set, it is used instead of ``label_rows``
    label_table: Callable[[str], tuple[list[str], Iterator[tuple[int, list[str]]]]] | None = None

    def labels(self, path: str) -> Iterator[tuple[int, Any]]:
        """A labels file of this format as ``(line, object)`` rows."""
        if self.label_rows is not None:
            return self.label_rows(path)
        return self.records(path, None)


_FORMATS: dict[str, RunFormat] = {}
_FALLBACK: list[str] = []


def register_format(fmt: RunFormat, *, fallback: bool = False) -> None:
    """Add (or replace) ``fmt``; ``fallback`` makes it the format of a file that neither its
    suffix nor its first bytes name."""
    _FORMATS[fmt.name] = fmt
    if fallback:
        _FALLBACK[:] = [fmt.name]


def unregister_format(name: str) -> None:
    """Drop the format called ``name`` (a test's, once it is done)."""
    _FORMATS.pop(name, None)


def run_formats() -> tuple[RunFormat, ...]:
    """The registered formats, in registration order."""
    return tuple(_FORMATS.values())


def format_named(name: str) -> RunFormat:
    """The format called ``name``; an unknown name reads as the fallback format does."""
    found = _FORMATS.get(name)
    if found is None:
        return _FORMATS[_FALLBACK[0]]
    return found


def suffix_format(suffix: str) -> RunFormat | None:
    """The format a lower-case file suffix names, if any."""
    return next((f for f in _FORMATS.values() if suffix in f.suffixes), None)


def sniffed_format(head: bytes) -> RunFormat:
    """The format of a file whose first bytes are ``head``: the first that recognises them,
    else the fallback."""
    for fmt in _FORMATS.values():
        if fmt.sniff is not None and fmt.sniff(head):
            return fmt
    return _FORMATS[_FALLBACK[0]]
