"""Reading what ``toolnexus batch`` wrote, and labels files, one record at a time.

A run is JSONL (one record per line), JSON (an array; batch writes one record per line, but any
array is read incrementally with ``raw_decode``, never loaded whole), CSV (batch's flattened
columns: ``answers.<key>.<field>``, a probability map or a flag list as one JSON cell) or
Parquet (``batch --format parquet``: ``records.arrow.run_schema``, read one row group at a time,
then the journal a killed run left beside it, if any). The format comes from the extension
(``.jsonl``, ``.json``, ``.csv``, ``.parquet``), else from the first bytes. A Parquet record's
"line" is its 1-based row. Each format is a ``records.formats.RunFormat`` (its readers are the
ones below, registered at the end of this module); ``report`` dispatches through that registry
and never on a format's name, so a format registered elsewhere is read as these are.
Lines and rows are decoded by the one record codec (``records.codec``) that ``batch`` wrote
them with, so a CSV run reads back the same records (escaped ids included) as a JSONL run.

Every problem is a :class:`ReportInputError` whose message starts ``path:line:``; a record of a
newer ``schema_version`` than this toolnexus reads is one (``records.model.schema_problem``),
and a record without one (written before versions) is read as it always was.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ..errors import ReportError
from ..records.codec import CsvCodec, RecordDecodeError, line_loader, read_csv_header
from ..records.csvdialect import csv_delimiter, first_non_utf8, header_note, not_utf8_hint
from ..records.formats import (
    RunFormat,
    Span,
    format_named,
    register_format,
    sniffed_format,
    suffix_format,
)
from ..records.model import SCHEMA_VERSION_KEY, schema_problem
from ..records.parquet import PARQUET_MAGIC, journal_path

__all__ = [
    "LocatedError",
    "ReportInputError",
    "Span",
    "byte_spans",
    "csv_file_delimiter",
    "csv_rows",
    "cut_last_line",
    "detect_format",
    "iter_records",
    "parquet_group_spans",
    "parquet_rows",
    "readable_again",
    "run_format",
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
    only those bytes of a JSONL run (see :func:`_iter_jsonl`).
    """
    reader = format_named(fmt) if fmt else run_format(path)
    if span is not None and reader.spans is None:
        raise ValueError("only a JSONL or Parquet run is read in spans")
    return reader.records(path, span)


def _check_version(path: str, line: int, obj: Any) -> None:
    """A record this toolnexus cannot read by its ``schema_version`` stops the reader at its
    line; a record without one (written before versions) passes, as any other object does."""
    if type(obj) is dict and SCHEMA_VERSION_KEY in obj:
        problem = schema_problem(obj)
        if problem is not None:
            raise LocatedError(path, line, problem)


def _iter_jsonl(path: str, span: Span | None = None) -> Iterator[tuple[int, Any]]:
    """Each line parsed by the record codec's JSON reader (``records.codec.line_loader``: orjson,
    with ``json.loads`` deciding what is accepted and wording every error; ids stay exact).

    With ``span``, only its bytes are read, and lines are numbered from the span's first line.
    A file replaced (``batch`` compacting it) or cut shorter since the span was measured is an
    error, never a chunk read across another file's line ends."""
    load = line_loader()
    n = 0
    with _open(path) as f:
        lines: Iterable[bytes] = f
        if span is not None:
            st = os.fstat(f.fileno())
            if (st.st_dev, st.st_ino) != span.file or st.st_size < span.end:
                raise ReportInputError(
                    f"{path}: replaced or cut short while it was read; run the report again"
                )
            f.seek(span.start)
            lines = io.BytesIO(f.read(span.end - span.start))
        for n, line in enumerate(lines, 1):
            try:
                obj = load(line)
            except UnicodeDecodeError:
                raise LocatedError(path, n, "not UTF-8 text") from None
            except ValueError as e:
                if not line.strip():
                    continue
                if not line.endswith(b"\n"):
                    return  # cut short by a kill: never a complete record
                raise LocatedError(path, n, f"not a JSON record: {_reason(e)}") from None
            _check_version(path, n, obj)
            yield n, obj


def cut_last_line(path: str) -> str | None:
    """``path:LINE: ...`` when a JSONL run's last line has no newline and is not JSON (a batch
    killed, or out of disk, mid-write): :func:`_iter_jsonl` leaves that line out, and a report
    says so (issue 31 item 19). ``None`` otherwise. Reads the tail, and counts the lines only
    when the line is cut."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            if size == 0:
                return None
            f.seek(size - 1)
            if f.read(1) == b"\n":
                return None
            start = size
            tail = b""
            while start > 0 and b"\n" not in tail:
                step = min(start, _CHUNK)
                start -= step
                f.seek(start)
                tail = f.read(step) + tail
            tail = tail[tail.rfind(b"\n") + 1 :]
            if not tail.strip():
                return None
            try:
                line_loader()(tail)
                return None  # a whole record without its newline is read as one
            except UnicodeDecodeError:
                return None  # the reader names that line itself
            except ValueError:
                pass
            f.seek(0)
            line = 1 + sum(block.count(b"\n") for block in iter(lambda: f.read(_CHUNK), b""))
    except OSError:
        return None  # the reader says what is wrong
    return (
        f"{path}:{line}: the last line is cut short (no newline, not JSON: a run killed or out "
        "of disk mid-write); left out of the report (batch --resume asks its state again)"
    )


def _parquet_file(path: str, raw: IO[bytes], what: str) -> Any:
    """The ``pyarrow.parquet.ParquetFile`` of an open file, or one line saying it is none."""
    from ..records.arrow import require_pyarrow

    pa = require_pyarrow()
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(raw)
    except (OSError, pa.ArrowException) as e:
        reason = " ".join(str(e).split())
        raise ReportInputError(f"{path}: not a readable Parquet {what}: {reason}") from None


def parquet_group_spans(path: str) -> list[Span]:
    """One span per row group of a Parquet run (what ``report --jobs`` splits it by: fixed
    when the file was written, so never a matter of ``jobs``); none when a journal beside it
    still holds records, or the file cannot be read (the one-piece reader says why)."""
    if os.path.exists(journal_path(path)):
        return []
    try:
        with open(path, "rb") as raw:
            st = os.fstat(raw.fileno())
            groups = _parquet_file(path, raw, "run").num_row_groups
    except (OSError, ReportInputError):
        return []
    return [Span(g, g + 1, (st.st_dev, st.st_ino)) for g in range(groups)]


def parquet_rows(path: str, what: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row, object)`` for every row of a Parquet file (a labels file), one batch at a time."""
    from ..records.arrow import require_pyarrow

    pa = require_pyarrow()
    with _open(path) as raw:
        parquet = _parquet_file(path, raw, what)
        n = 0
        try:
            for batch in parquet.iter_batches(batch_size=4096):
                for row in batch.to_pylist():
                    n += 1
                    yield n, row
        except (OSError, pa.ArrowException) as e:
            raise LocatedError(path, n + 1, f"unreadable: {' '.join(str(e).split())}") from None


def _iter_parquet(path: str, span: Span | None = None) -> Iterator[tuple[int, Any]]:
    """The records of a Parquet run, row group by row group (only the span's with ``span``),
    numbered by their row in the file; then, read whole, the journal's complete lines."""
    from ..records.arrow import require_pyarrow, table_to_records

    pa = require_pyarrow()
    with _open(path) as raw:
        st = os.fstat(raw.fileno())
        if span is not None and (st.st_dev, st.st_ino) != span.file:
            raise ReportInputError(f"{path}: replaced while it was read; run the report again")
        if st.st_size == 0:  # a batch's output locked before its first clean end
            groups: range = range(0)
        else:
            parquet = _parquet_file(path, raw, "run")
            missing = [c for c in ("id", "answers") if c not in parquet.schema_arrow.names]
            if missing:
                raise ReportInputError(
                    f"{path}: not a batch Parquet run: no {missing[0]!r} column (batch "
                    "--format parquet writes one)"
                )
            groups = range(parquet.num_row_groups)
            if span is not None:
                groups = range(span.start, span.end)
        meta = parquet.metadata if groups else None
        n = sum(meta.row_group(g).num_rows for g in range(groups.start)) if meta else 0
        for g in groups:
            try:
                table = parquet.read_row_group(g)
            except (OSError, pa.ArrowException) as e:
                reason = " ".join(str(e).split())
                raise LocatedError(path, n + 1, f"row group {g} unreadable: {reason}") from None
            for record in table_to_records(table):
                n += 1
                _check_version(path, n, record)
                yield n, record
    journal = journal_path(path)
    if span is None and os.path.exists(journal):
        yield from _iter_jsonl(journal)


def _reason(e: ValueError) -> str:
    return e.msg if isinstance(e, json.JSONDecodeError) else str(e)


def _iter_json(path: str) -> Iterator[tuple[int, Any]]:
    decoder = json.JSONDecoder()
    with _open(path) as raw:
        f = _text(raw, path)
        buf = f.read(_CHUNK)
        eof = not buf
        pos = 0
        line = 1  # the line of buf[counted]
        counted = 0

        def at(i: int) -> int:
            nonlocal line, counted
            line += buf.count("\n", counted, i)
            counted = i
            return line

        def fill() -> bool:
            """Drop what was read, append the next chunk; False at the end of the file."""
            nonlocal buf, pos, counted, eof
            at(pos)
            more = f.read(_CHUNK)
            buf, pos, counted = buf[pos:] + more, 0, 0
            eof = not more
            return bool(more)

        def skip_blank() -> None:
            nonlocal pos
            while True:
                while pos < len(buf) and buf[pos] in " \t\r\n":
                    pos += 1
                if pos < len(buf) or not fill():
                    return

        skip_blank()
        if pos >= len(buf) or buf[pos] != "[":
            raise ReportInputError(f"{path}:{at(pos)}: not a JSON array of records")
        pos += 1
        first = True
        while True:
            skip_blank()
            if pos >= len(buf):
                # A batch still running (or killed) has not written the closing bracket yet.
                return
            if buf[pos] == "]":
                return
            if not first:
                if buf[pos] != ",":
                    raise ReportInputError(f"{path}:{at(pos)}: expected ',' between records")
                pos += 1
                skip_blank()
            first = False
            while True:
                try:
                    obj, end = decoder.raw_decode(buf, pos)
                    break
                except json.JSONDecodeError as e:
                    if eof or not fill():
                        if "\n" not in buf[pos:]:
                            return  # a last record cut short by a kill
                        where = at(pos)
                        raise ReportInputError(
                            f"{path}:{where}: not a JSON record: {e.msg}"
                        ) from None
            where = at(pos)
            _check_version(path, where, obj)
            yield where, obj
            pos = end


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


def _iter_csv(path: str) -> Iterator[tuple[int, Any]]:
    rows = csv_rows(path, "batch CSV file")
    header = next(rows, None)
    if header is None:
        return
    if "id" not in header[1]:
        raise ReportInputError(f"{path}:1: not a batch CSV file: no 'id' column")
    codec = CsvCodec(read_csv_header(header[1]))
    for n, row in rows:
        try:
            obj = codec.object_of(row)
        except RecordDecodeError as e:
            raise ReportInputError(f"{path}:{n}: {e}") from None
        _check_version(path, n, obj)
        yield n, obj


def byte_spans(path: str, chunk_bytes: int) -> list[Span]:
    """A JSONL run's chunks: spans of about ``chunk_bytes``, each ending at a line end (or at
    the end of the file), from the file's content and ``chunk_bytes`` alone."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            size, file = st.st_size, (st.st_dev, st.st_ino)
            cuts = [0]
            for pos in range(chunk_bytes, size, chunk_bytes):
                if pos <= cuts[-1]:
                    continue  # inside a line longer than a chunk
                f.seek(pos - 1)
                f.readline()  # to the end of the line holding byte pos - 1
                cut = f.tell()
                if cut >= size:
                    break
                cuts.append(cut)
    except OSError:
        return []  # the one-piece reader says what is wrong
    return [Span(a, b, file) for a, b in zip(cuts, [*cuts[1:], size], strict=True)]


def _csv_label_table(path: str) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """A CSV labels file as cells, and the note when a spreadsheet saved it with another
    delimiter than the comma."""
    notes: list[str] = []
    delimiter = csv_file_delimiter(path)
    if delimiter != ",":
        with open(path, "rb") as raw:  # just read by csv_file_delimiter
            head = raw.readline().decode("utf-8", "replace")
        notes.append(f"{path}: {header_note(head, delimiter)}")
    return notes, csv_rows(path, "CSV labels file", delimiter)


# The built-in formats, in the order their first bytes are tried (a suffix names one first);
# a file that neither names is read as CSV.
register_format(
    RunFormat(
        "parquet",
        _iter_parquet,
        suffixes=(".parquet", ".pq"),
        sniff=lambda head: head.startswith(PARQUET_MAGIC),
        spans=lambda path, _chunk_bytes: parquet_group_spans(path),
        label_rows=lambda path: parquet_rows(path, "labels file"),
    )
)
register_format(
    RunFormat(
        "json",
        lambda path, _span: _iter_json(path),
        suffixes=(".json",),
        sniff=lambda head: head.lstrip().startswith(b"["),
    )
)
register_format(
    RunFormat(
        "jsonl",
        _iter_jsonl,
        suffixes=(".jsonl", ".ndjson"),
        sniff=lambda head: head.lstrip().startswith(b"{"),
        spans=byte_spans,
        lines_from_span=True,
        cut_last_line=cut_last_line,
    )
)
register_format(
    RunFormat(
        "csv",
        lambda path, _span: _iter_csv(path),
        suffixes=(".csv",),
        label_table=_csv_label_table,
    ),
    fallback=True,
)
