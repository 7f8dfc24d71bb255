"""Opening what a report reads (runs and labels files): the one located error every reader
raises, a pipe made readable twice, and the rows of a CSV file.

Split out of ``report.runs`` (which still names all of it) so the format readers
(``report.formats``) can raise these errors while ``report.runs`` imports those readers to
register them, with no import cycle (tests/house/test_import_graph.py).
"""

from __future__ import annotations

import codecs
import csv
import io
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ..core import ReportError
from ..records import (
    SCHEMA_VERSION_KEY,
    csv_delimiter,
    first_non_utf8,
    not_utf8_hint,
    schema_problem,
)

__all__ = [
    "LocatedError",
    "ReportInputError",
    "csv_file_delimiter",
    "csv_rows",
    "readable_again",
]


_CHUNK = 1 << 20


class ReportInputError(ReportError):
    """A run or labels file that cannot be read as such; the message is one located line."""


class LocatedError(ReportInputError):
    """A problem at ``path:line``: kept apart so a chunk counted on its own (lines numbered
    from its start) can be moved to the file's line numbers (:meth:`rebased`)."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path, self.line, self.reason = path, line, reason

    def __reduce__(self) -> tuple[Any, ...]:  # raised in a worker process, re-raised here
        return (LocatedError, (self.path, self.line, self.reason))

    def rebased(self, lines_before: int) -> LocatedError:
        return LocatedError(self.path, self.line + lines_before, self.reason)


def _open(path: str) -> IO[bytes]:
    try:
        return open(path, "rb")
    except OSError as e:
        raise ReportInputError(f"{path}: cannot read: {e.strerror or type(e).__name__}") from None


@contextmanager
def readable_again(path: str) -> Iterator[str]:
    """``path`` itself when it is a regular file; else (a pipe, ``/dev/stdin``, a process
    substitution) a temporary copy of it, which can be sniffed, read twice and cut in chunks,
    as a report needs. Errors inside name ``path``, never the copy."""
    try:
        regular = stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        regular = True  # opening it says what is wrong
    if regular:
        yield path
        return
    with (
        _open(path) as source,
        tempfile.NamedTemporaryFile(prefix="toolnexus-", suffix=Path(path).suffix) as copy,
    ):
        try:
            shutil.copyfileobj(source, copy, 1 << 20)
        except OSError as e:
            raise ReportInputError(
                f"{path}: cannot read: {e.strerror or type(e).__name__}"
            ) from None
        copy.flush()
        try:
            yield copy.name
        except LocatedError as e:
            raise LocatedError(path, e.line, e.reason) from None
        except ReportInputError as e:
            raise ReportInputError(str(e).replace(copy.name, path)) from None


def _check_version(path: str, line: int, obj: Any) -> None:
    """A record this toolnexus cannot read by its ``schema_version`` stops the reader at its
    line; a record without one (written before versions) passes, as any other object does."""
    if type(obj) is dict and SCHEMA_VERSION_KEY in obj:
        problem = schema_problem(obj)
        if problem is not None:
            raise LocatedError(path, line, problem)


def _text(raw: IO[bytes], path: str, *, csv_file: bool = False) -> IO[str]:
    """UTF-8 text; a CSV file may start with the byte-order mark spreadsheets write."""
    encoding = "utf-8-sig" if csv_file else "utf-8"
    return io.TextIOWrapper(raw, encoding=encoding, errors="strict", newline="")


# --- CSV ---------------------------------------------------------------------------------


def csv_file_delimiter(path: str) -> str:
    """The delimiter of a CSV file, from its header line (``records.csvdialect``): a labels
    file saved by a spreadsheet may be ``;``- or tab-separated."""
    with _open(path) as raw:
        first = raw.readline().removeprefix(codecs.BOM_UTF8)
    return csv_delimiter(first.decode("utf-8", "replace"))


def csv_rows(path: str, what: str, delimiter: str = ",") -> Iterator[tuple[int, list[str]]]:
    """``(line, cells)`` for every row of a CSV file, the header first (line 1), blank rows
    skipped, every other row as wide as the header; a spreadsheet's byte-order mark is allowed.
    A header that is not CSV is an error saying the file is not ``what``; a bad row, or one of
    another width, an error at its line."""
    with _open(path) as raw:
        reader = csv.reader(_text(raw, path, csv_file=True), delimiter=delimiter)
        width: int | None = None
        line = 0  # the last physical line read
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except UnicodeDecodeError:
                # Decoded ahead in blocks: the error's own position says little; find the line.
                with _open(path) as head:
                    hint = not_utf8_hint(head.read(2))
                raise ReportInputError(f"{path}:{_first_bad_utf8(path)}: {hint}") from None
            except csv.Error as e:
                if width is None:
                    raise ReportInputError(f"{path}:1: not a {what}: {e}") from None
                raise ReportInputError(f"{path}:{line + 1}: not a CSV row: {e}") from None
            line = reader.line_num
            if width is None:
                width = len(row)
                yield 1, row
            elif row:
                if len(row) != width:
                    raise ReportInputError(f"{path}:{line}: {len(row)} cells for {width} columns")
                yield line, row


def _first_bad_utf8(path: str) -> str:
    """``LINE: not UTF-8 text (byte N)`` for the first byte of ``path`` that is not UTF-8
    (``N`` counted from the start of its line, from 1); read in blocks, on the error path only."""
    with _open(path) as f:
        bad = first_non_utf8(f, _CHUNK)
    if bad is None:
        return "1: not UTF-8 text"
    return f"{bad[0]}: not UTF-8 text (byte {bad[1]})"
