"""A Parquet run on disk: ONE Parquet file (``records.arrow.run_schema``), and, while a ``batch``
writes it, its journal.

Why a journal: a Parquet file is written whole. Its footer, which says where every row group
and column is, comes last, so a file still being written cannot be read, and a ``kill -9``
mid-run would lose every record of it; rewriting the file after each record would cost the
whole run at every record. So ``batch --format parquet -o run.parquet`` appends each record,
the moment it completes, as one JSON line (:func:`journal_line`) to the journal
``.run.parquet.journal`` beside it, through the line writer (one ``os.write`` per record: a
kill loses at most the line being written). On a clean end (the run finished, or Ctrl-C /
SIGTERM stopped it) the journal is folded in: ``run.parquet`` is rewritten atomically
(temporary file, fsync, rename) from the previous file's records and the journal's, the last
record of an id winning, and the journal is deleted. A killed run leaves the journal;
``--resume`` reads the Parquet file AND the journal, and its clean end folds both in.

pyarrow is imported only when a Parquet file is read or written (``records.arrow``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from .codec import JsonlCodec
from .model import Record, record_from_object

__all__ = ["JOURNAL_SUFFIX", "PARQUET_MAGIC", "journal_line", "journal_path", "parquet_records"]

#: The first (and last) four bytes of every Parquet file.
PARQUET_MAGIC = b"PAR1"
JOURNAL_SUFFIX = ".journal"


def journal_path(path: str) -> str:
    """The journal of the Parquet run at ``path``: ``.NAME.journal`` beside it (hidden, so a
    directory of Parquet files never reads it as an input)."""
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}{JOURNAL_SUFFIX}")


def parquet_records(path: str) -> Iterator[Record]:
    """The records of the Parquet file at ``path``, one row group at a time, in file order
    (nothing for a missing or empty file: ``batch`` creates its output empty to lock it)."""
    try:
        if os.path.getsize(path) == 0:
            return
    except OSError:
        return
    from .arrow import iter_parquet_run

    for obj in iter_parquet_run(path):
        record = record_from_object(obj)
        if record is not None:
            yield record


def journal_line(record: Record, obj: Mapping[str, Any]) -> bytes:
    """``record`` as one journal line (``obj`` is its ``to_object()``, which the Parquet file
    takes too: made once). The journal is read back only as records (``--resume``, ``report``),
    never shown, so it is JSON as orjson writes it: a fifth of the JSONL codec's time per
    record (measured: 3.0 against 10.8 us, with the to_object that line makes again); a
    record orjson refuses (an integer id past 64 bits, a lone surrogate) is written as the
    JSONL codec writes it."""
    import orjson

    try:
        return orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return _JSONL.encode(record)


_JSONL = JsonlCodec()
