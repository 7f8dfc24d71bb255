"""Reading what ``toolnexus batch`` wrote, and labels files, one record at a time.

A run is JSONL (one record per line), JSON (an array; batch writes one record per line, but any
array is read incrementally with ``raw_decode``, never loaded whole), CSV (batch's flattened
columns: ``answers.<key>.<field>``, a probability map or a flag list as one JSON cell) or
Parquet (``batch --format parquet``: ``records.arrow.run_schema``, read one row group at a time,
then the journal a killed run left beside it, if any). The format comes from the extension
(``.jsonl``, ``.json``, ``.csv``, ``.parquet``), else from the first bytes. A Parquet record's
"line" is its 1-based row. Each format is a ``records.formats.RunFormat`` (its readers are
``report.formats``', registered when this module imports it); ``report`` dispatches through
that registry and never on a format's name, so a format registered elsewhere is read as these are.
Lines and rows are decoded by the one record codec (``records.codec``) that ``batch`` wrote
them with, so a CSV run reads back the same records (escaped ids included) as a JSONL run.

Every problem is a :class:`ReportInputError` (``report.inputs``) whose message starts
``path:line:``; a record of a newer ``schema_version`` than this toolnexus reads is one
(``records.model.schema_problem``), and a record without one (written before versions) is read
as it always was.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import RunFormat, Span, format_named, sniffed_format, suffix_format
from . import formats as _builtin_formats  # noqa: F401  (importing it registers jsonl/json/csv/parquet)
from .inputs import (
    _open,
)

__all__ = [
    "detect_format",
    "iter_records",
    "run_format",
]


def detect_format(path: str) -> str:
    """The name of a registered run format (``records.formats``; built in: ``jsonl``, ``json``,
    ``csv``, ``parquet``): the extension's, else the first bytes'."""
    return run_format(path).name


def run_format(path: str) -> RunFormat:
    """The registered format of ``path``: its extension's, else its first bytes'."""
    named = suffix_format(Path(path).suffix.lower())
    if named is not None:
        return named
    with _open(path) as f:
        head = f.read(4096)
    return sniffed_format(head)


def iter_records(
    path: str, fmt: str | None = None, span: Span | None = None
) -> Iterator[tuple[int, Any]]:
    """``(line, record)`` for every record of a run, in file order.

    A last line without its newline that does not parse (a batch killed mid-write) is skipped,
    as ``batch --resume`` would cut it; any other unreadable line is an error. ``span`` reads
    only those bytes of a JSONL run (see ``report.formats._iter_jsonl``).
    """
    reader = format_named(fmt) if fmt else run_format(path)
    if span is not None and reader.spans is None:
        raise ValueError("only a JSONL or Parquet run is read in spans")
    return reader.records(path, span)
