"""The output side of ``toolnexus batch``: records, the writer, resume reading, compaction and
the reorder buffer.

Nothing lost:

- Every record is encoded in memory and handed to the kernel in ONE ``os.write`` of a whole
  line (no user-space buffer), so a record is on its way to disk the moment it completes and a
  ``kill -9`` leaves at most the one line being written short. ``fsync`` runs at the end and on
  SIGINT/SIGTERM. When a run is resumed, a short last line (no newline) is cut off first.
- ``--resume`` reads the ids already in ``--output``. The LAST record for an id is the one that
  counts, so ``--retry-errors`` simply appends the new record after the old error record; when
  the run finishes, the file is rewritten atomically (temp file, fsync, rename) keeping only the
  last record of each id, so a finished file holds exactly one record per id. A run killed before
  that leaves the superseded error records in place, which the next ``--resume`` or
  ``--retry-errors`` reads correctly (last wins) and compacts.

Formats, each one record per line:

- ``jsonl``: one JSON object per line.
- ``json``: a JSON array written as ``[`` / ``{record}`` / ``,{record}`` ... / ``]``, one record
  per line, so it streams like jsonl and is valid JSON once the run ends.
- ``csv``: a header and one row per record: the one CSV shape of ``render/csvshape.py``, which
  ``eval --format csv`` writes too (dotted column names such as ``answers.urgency.score``,
  flags as words; a row is always one physical line).
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import json
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .batch_ids import unescape_id
from .render.csvshape import ERROR_CODE_COLUMN, csv_header, csv_line, flatten
from .render.formats import BatchFormat

__all__ = [
    "FORMATS",
    "QUESTIONS_SHA256",
    "OutputWriter",
    "PriorMismatch",
    "PriorOutput",
    "ReorderBuffer",
    "compact",
    "csv_columns",
    "encode_line",
    "error_record",
    "flatten",
    "read_ids",
    "read_prior",
    "written_format",
]

#: The ``batch --format`` choices (``render.BatchFormat``, checked by a test).
FORMATS: tuple[BatchFormat, ...] = ("jsonl", "csv", "json")


#: The column/field every record carries: the sha256 of the question set it answered.
QUESTIONS_SHA256 = "questions_sha256"


def error_record(
    item_id: str | int, code: str, message: str, questions_sha256: str | None = None
) -> dict[str, Any]:
    """``{"id", "questions_sha256", "error": {"code", "message"}}``; the message is squeezed
    onto one line."""
    record: dict[str, Any] = {"id": item_id}
    if questions_sha256 is not None:
        record[QUESTIONS_SHA256] = questions_sha256
    record["error"] = {"code": code, "message": " ".join(message.split())}
    return record


def csv_columns(sample_record: Mapping[str, Any]) -> list[str]:
    """The CSV header (the one shape ``eval --format csv`` writes too: ``render.csvshape``)."""
    return csv_header(sample_record)


def _csv_line(cells: Sequence[str]) -> str:
    return csv_line(cells, cells)


def encode_line(
    record: Mapping[str, Any], fmt: str, columns: Sequence[str] = (), first: bool = True
) -> bytes:
    """One record as one complete line of ``fmt`` (``first`` matters only for ``json``)."""
    if fmt == "csv":
        return csv_line(columns, record).encode("utf-8", "backslashreplace")
    # allow_nan=False: a NaN or Infinity is not JSON, and never reaches an output.
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if fmt == "json" and not first:
        text = "," + text
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from JSON input: written escaped, losslessly
        text = json.dumps(record, separators=(",", ":"), allow_nan=False)
        return (("," if fmt == "json" and not first else "") + text + "\n").encode("utf-8")


class _Parsed(NamedTuple):
    key: str
    is_error: bool
    questions_sha256: str | None


def _parse_line(line: bytes, fmt: str, columns: Sequence[str]) -> _Parsed | None:
    """``(id text, is_error, questions sha256)`` for one record line, or None for a
    structural/unreadable line."""
    if fmt == "csv":
        try:
            row = next(csv.reader([line.decode("utf-8")]))
        except (csv.Error, StopIteration, UnicodeDecodeError):
            return None
        if len(row) != len(columns):
            return None
        cells = dict(zip(columns, row, strict=True))
        return _Parsed(
            unescape_id(cells["id"]),
            cells.get(ERROR_CODE_COLUMN, "") != "",
            cells.get(QUESTIONS_SHA256) or None,
        )
    text = line.strip()
    if fmt == "json":
        if text in (b"[", b"]"):
            return None
        text = text.removeprefix(b",")
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict) or "id" not in obj:
        return None
    sha = obj.get(QUESTIONS_SHA256)
    return _Parsed(str(obj["id"]), "error" in obj, sha if isinstance(sha, str) else None)


@dataclass
class PriorOutput:
    """What an existing ``--output`` file already holds (the LAST record of each id counts).

    ``keep_bytes`` is the length of the prefix to keep: complete lines only, and for ``json``
    without the closing ``]``. ``repeated`` holds ids that appear more than once (a previous
    ``--retry-errors`` run that did not finish compacting).
    """

    ok: set[str] = field(default_factory=set)
    errors: set[str] = field(default_factory=set)
    repeated: set[str] = field(default_factory=set)
    keep_bytes: int = 0
    header: list[str] | None = None
    records: int = 0

    def __contains__(self, key: str) -> bool:
        return key in self.ok or key in self.errors


def _lines(path: str) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` for every line, the last one possibly without its newline."""
    offset = 0
    with open(path, "rb") as f:
        for line in f:
            yield offset, line
            offset += len(line)


class PriorMismatch(ValueError):
    """An existing ``--output`` that this run must not resume: another format or another
    question set. ``str(e)`` says which and what to do."""


def written_format(path: str) -> str | None:
    """The format an existing output was written in, from its first line (None when empty):
    ``[`` opens a json array, ``{`` a jsonl record, anything else is a CSV header."""
    for _, line in _lines(path):
        head = line.strip()
        if not head:
            continue
        if head.startswith(b"["):
            return "json"
        if head.startswith(b"{"):
            return "jsonl"
        return "csv"
    return None


def read_prior(path: str, fmt: str, questions_sha256: str | None = None) -> PriorOutput:
    """Scan an existing output file for ``--resume`` / ``--retry-errors``. A missing or empty
    file is an empty prior. Raises ValueError when a CSV file's header is not a batch header,
    and :class:`PriorMismatch` when the file was written in another format or its records
    answer another question set than ``questions_sha256``.

    A finished decision is never given up: an id with a decision record counts as done even
    when an error record for it comes later (a duplicate input line writes one)."""
    prior = PriorOutput()
    if not os.path.exists(path):
        return prior
    written = written_format(path)
    if written is not None and written != fmt:
        raise PriorMismatch(
            f"it was written as {written}, this run writes {fmt}; resume with --format "
            f"{written}, or write to a new file"
        )
    columns: list[str] = []
    for offset, line in _lines(path):
        if not line.endswith(b"\n"):
            break  # cut short by a kill: this record was never complete
        if fmt == "csv" and prior.header is None:
            prior.header = next(csv.reader([line.decode("utf-8", "replace")]), [])
            if "id" not in prior.header:
                raise ValueError(f"{path}: not a batch CSV output (no id column)")
            columns = prior.header
            prior.keep_bytes = offset + len(line)
            continue
        if fmt == "json" and line.strip() == b"]":
            break  # the closing bracket of a finished run; appending reopens the array
        parsed = _parse_line(line, fmt, columns)
        prior.keep_bytes = offset + len(line)
        if parsed is None:
            continue
        key, is_error, sha = parsed
        if questions_sha256 is not None and sha is not None and sha != questions_sha256:
            raise PriorMismatch(
                f"its records answer another question set (question-set digest {sha[:12]}..., "
                f"this run's is {questions_sha256[:12]}...); resume with the question file that "
                "wrote it, or write to a new file"
            )
        prior.records += 1
        if key in prior:
            prior.repeated.add(key)
        if not is_error:
            prior.ok.add(key)
            prior.errors.discard(key)
        elif key not in prior.ok:
            prior.errors.add(key)
    return prior


def read_ids(path: str, fmt: str) -> list[str]:
    """The id of every complete record in an output file, in file order, as ``--resume``
    reads them (CSV ids unescaped)."""
    ids: list[str] = []
    columns: list[str] = []
    for i, (_, line) in enumerate(_lines(path)):
        if fmt == "csv" and i == 0:
            columns = next(csv.reader([line.decode("utf-8", "replace")]), [])
            continue
        parsed = _parse_line(line, fmt, columns)
        if parsed is not None:
            ids.append(parsed.key)
    return ids


def compact(path: str, fmt: str, keys: set[str], columns: Sequence[str] = ()) -> None:
    """Rewrite ``path`` atomically keeping ONE record of each id in ``keys`` (every other line
    is kept as is): its last decision when it has one, else its last record. No compaction ever
    drops a finished decision. Two passes, so memory holds counts for ``keys`` only."""
    if not keys:
        return
    header = list(columns)
    # key -> [records seen, index of the one kept, whether that one is a decision]
    plan: dict[str, list[int]] = {k: [0, -1, 0] for k in keys}
    for i, (_, line) in enumerate(_lines(path)):
        if fmt == "csv" and i == 0:
            header = next(csv.reader([line.decode("utf-8", "replace")]), header)
            continue
        parsed = _parse_line(line, fmt, header)
        if parsed is None or parsed.key not in plan:
            continue
        entry = plan[parsed.key]
        if not parsed.is_error:
            entry[1], entry[2] = entry[0], 1
        elif not entry[2]:
            entry[1] = entry[0]
        entry[0] += 1
    seen: dict[str, int] = dict.fromkeys(keys, 0)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".toolnexus-batch-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            first = True
            for i, (_, line) in enumerate(_lines(path)):
                if fmt == "csv" and i == 0:
                    out.write(line)
                    continue
                parsed = _parse_line(line, fmt, header)
                if parsed is None:
                    if fmt == "json" and line.strip() == b"]":
                        out.write(b"]\n")
                    elif fmt == "json" and line.strip() == b"[":
                        out.write(line)
                    continue
                if parsed.key in seen:
                    index = seen[parsed.key]
                    seen[parsed.key] += 1
                    if index != plan[parsed.key][1]:
                        continue  # superseded by the record of this id that is kept
                if fmt == "json":
                    body = line.strip().removeprefix(b",")
                    line = (b"" if first else b",") + body + b"\n"
                first = False
                out.write(line)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)


def _fsync_dir(directory: str) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


class OutputWriter:
    """Writes whole records to ``path`` (``None`` = stdout), one ``os.write`` per line.

    With ``prior`` (a resumed run) the file is first cut back to ``prior.keep_bytes`` and then
    appended to; otherwise it is truncated. ``close()`` ends a ``json`` array and fsyncs.
    """

    def __init__(
        self,
        path: str | None,
        fmt: str,
        columns: Sequence[str] = (),
        prior: PriorOutput | None = None,
        stdout_fd: int = 1,
    ) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}")
        self.path = path
        self.fmt = fmt
        self.columns = list(columns)
        self.written = 0
        self._closed = False
        if path is None:
            self._fd = stdout_fd
            self._owns = False
            has_records = False
            has_start = False
        else:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
            self._owns = True
            keep = prior.keep_bytes if prior is not None else 0
            if stat.S_ISREG(os.fstat(self._fd).st_mode):  # not /dev/null, a FIFO, a tty
                os.ftruncate(self._fd, keep)
                os.lseek(self._fd, keep, os.SEEK_SET)
            has_records = prior is not None and prior.records > 0
            has_start = keep > 0
        self._first = not has_records
        if fmt == "csv" and not has_start:
            self._write(_csv_line(self.columns).encode("utf-8"))
        elif fmt == "json" and not has_start:
            self._write(b"[\n")

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as e:
            # Named for the boundary's one line: a full disk says which output it filled.
            if e.filename is None:
                e.filename = self.path if self.path is not None else "stdout"
            raise

    def write(self, record: Mapping[str, Any]) -> None:
        """Hand one complete record line to the kernel."""
        self._write(encode_line(record, self.fmt, self.columns, self._first))
        self._first = False
        self.written += 1

    def sync(self) -> None:
        """fsync the file (a pipe or terminal cannot be synced; that is not an error)."""
        with contextlib.suppress(OSError):
            os.fsync(self._fd)

    def close(self, finished: bool = True) -> None:
        """fsync and close. ``finished`` closes a ``json`` array; an interrupted run leaves it
        open so a resumed run can append (and close it)."""
        if self._closed:
            return
        self._closed = True
        if finished and self.fmt == "json":
            self._write(b"]\n")
        self.sync()
        if self._owns:
            os.close(self._fd)


class ReorderBuffer:
    """``--ordered``: records leave in input order, holding at most ``window`` early ones.

    A producer takes a ticket with ``await admit()`` before starting item ``seq`` (0, 1, 2, ...
    in input order); admission waits while ``seq`` is ``window`` or more ahead of the oldest
    unfinished item, so a slow state stalls intake instead of growing the buffer.
    ``done(seq, record)`` returns the records that can now be written, in order.
    """

    def __init__(self, window: int) -> None:
        if window < 1:
            raise ValueError("window must be at least 1")
        self.window = window
        self._next = 0  # the oldest sequence number not yet released
        self._admitted = 0
        self._held: dict[int, Any] = {}
        self._cond = asyncio.Condition()
        self.peak = 0

    async def admit(self) -> int:
        async with self._cond:
            await self._cond.wait_for(lambda: self._admitted - self._next < self.window)
            seq = self._admitted
            self._admitted += 1
            return seq

    async def done(self, seq: int, record: Any) -> list[Any]:
        async with self._cond:
            self._held[seq] = record
            self.peak = max(self.peak, len(self._held))
            ready = []
            while self._next in self._held:
                ready.append(self._held.pop(self._next))
                self._next += 1
            if ready:
                self._cond.notify_all()
            return ready
