"""The built-in run formats' readers (jsonl, json, csv, parquet), registered in
``records.formats``' registry when this module is imported (``report.runs`` imports it, so
whoever reads a run has them), in the order their first bytes are tried.

Split out of ``report.runs``, which picks a file's format and iterates its records through the
registry, and still names the public readers below. Lines and rows are decoded by the one record
codec (``records.codec``) that ``batch`` wrote them with.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable, Iterator
from typing import IO, Any

from ..records import (
    PARQUET_MAGIC,
    CsvCodec,
    RecordDecodeError,
    RunFormat,
    Span,
    header_note,
    journal_path,
    line_loader,
    read_csv_header,
    register_format,
)
from .inputs import (
    _CHUNK,
    LocatedError,
    ReportInputError,
    _check_version,
    _open,
    _text,
    csv_file_delimiter,
    csv_rows,
)

__all__ = [
    "byte_spans",
    "cut_last_line",
    "parquet_group_spans",
    "parquet_rows",
]


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
    from ..records import require_pyarrow

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
    from ..records import require_pyarrow

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
    from ..records import require_pyarrow, table_to_records

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
