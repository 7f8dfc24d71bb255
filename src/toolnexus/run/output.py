"""The output side of ``toolnexus batch``: the writer and the reorder buffer.

Nothing lost: every record is encoded in memory (``records.codec``, one complete line) and
handed to the kernel in ONE ``os.write`` (no user-space buffer), so a record is on its way to
disk the moment it completes and a ``kill -9`` leaves at most the one line being written short.
``fsync`` runs at the end and on SIGINT/SIGTERM. Reading an output back for ``--resume`` and
compacting it are ``run.resume``'s.

Formats, each one record per line (``records.codec`` defines them):

- ``jsonl``: one JSON object per line.
- ``json``: a JSON array written as ``[`` / ``{record}`` / ``,{record}`` ... / ``]``, one record
  per line, so it streams like jsonl and is valid JSON once the run ends.
- ``csv``: a header and one row per record: the one CSV shape, which ``eval --format csv``
  writes too (dotted column names such as ``answers.urgency.score``, flags as words; a row is
  always one physical line).
- ``parquet``: not a line format; ``run.parquet`` journals its records through this writer
  (as ``jsonl``) and writes the one Parquet file on a clean end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..records import codec_for, csv_header
from .resume import LINES, Framing, fsync_dir

if TYPE_CHECKING:
    from ..records import Record

__all__ = [
    "LINE_FORMATS",
    "OutputWriter",
    "ReorderBuffer",
    "csv_columns",
    "encode_line",
]


class _Prior(Protocol):
    """What a resumed output already holds (``run.resume.PriorOutput``)."""

    keep_bytes: int
    records: int


#: The line formats this writer writes (``records.codec``); a Parquet run journals as jsonl.
LINE_FORMATS: tuple[str, ...] = ("jsonl", "csv", "json")


def csv_columns(sample_record: Mapping[str, Any]) -> list[str]:
    """The CSV header (the one shape ``eval --format csv`` writes too)."""
    return csv_header(sample_record)


def encode_line(record: Record, fmt: str, columns: Sequence[str] = (), first: bool = True) -> bytes:
    """One record as one complete line of ``fmt`` (``first`` matters only for ``json``)."""
    return codec_for(fmt, columns).encode(record, first)


class OutputWriter:
    """Writes whole records to ``path`` (``None`` = stdout), one ``os.write`` per line.

    With ``prior`` (a resumed run) the file is first cut back to ``prior.keep_bytes`` and then
    appended to; otherwise it is truncated. ``close()`` ends a ``json`` array and fsyncs.

    ``staged`` (``--overwrite``) writes a temporary file beside ``path`` instead, and ``close``
    renames it over ``path`` only when the run finished: until then, and whenever it does not
    finish, the old file stays whole.
    """

    def __init__(
        self,
        path: str | None,
        fmt: str,
        columns: Sequence[str] = (),
        prior: _Prior | None = None,
        stdout_fd: int = 1,
        *,
        staged: bool = False,
        framing: Framing = LINES,
    ) -> None:
        if fmt not in LINE_FORMATS:
            raise ValueError(f"not a line format: {fmt!r} (a Parquet run is run.parquet's)")
        self.path = path
        self.fmt = fmt
        self.columns = list(columns)
        self.codec = codec_for(fmt, self.columns)
        self.framing = framing
        self.written = 0
        self._closed = False
        self._staged: str | None = None
        self._target = ""  # the file a staged run replaces: path with its symlinks resolved
        if path is None:
            self._fd = stdout_fd
            self._owns = False
            has_records = False
            has_start = False
        else:
            if staged:
                # Beside the file itself (through a symlink -o), with its mode: mkstemp's 0600
                # once left a shared output readable by its owner alone.
                self._target = os.path.realpath(path)
                directory = os.path.dirname(self._target)
                fd, self._staged = tempfile.mkstemp(prefix=".toolnexus-batch-", dir=directory)
                try:
                    os.fchmod(fd, stat.S_IMODE(os.stat(self._target).st_mode))
                finally:
                    os.close(fd)
            self._fd = os.open(self._staged or path, os.O_WRONLY | os.O_CREAT, 0o644)
            self._owns = True
            keep = prior.keep_bytes if prior is not None else 0
            if stat.S_ISREG(os.fstat(self._fd).st_mode):  # not /dev/null, a FIFO, a tty
                os.ftruncate(self._fd, keep)
                os.lseek(self._fd, keep, os.SEEK_SET)
            has_records = prior is not None and prior.records > 0
            has_start = keep > 0
        self._first = not has_records
        if not has_start:
            self._write(self.codec.start())

    @property
    def staged(self) -> bool:
        """Whether this run writes beside ``path`` and replaces it only when it finishes."""
        return self._staged is not None

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as e:
            # Named for the boundary's one line: a full disk says which output it filled (the
            # output, never the temporary file a staged run writes).
            if e.filename is None or e.filename == self._staged:
                e.filename = self.path if self.path is not None else "stdout"
            raise

    def write(self, record: Record) -> None:
        """Hand one complete record line to the kernel."""
        self.write_line(self.codec.encode(record, self._first))

    def write_line(self, line: bytes) -> None:
        """Hand one record line its caller encoded (a Parquet run's journal) to the kernel."""
        self._write(line)
        self._first = False
        self.written += 1

    def sync(self) -> None:
        """fsync the file (a pipe or terminal cannot be synced; that is not an error)."""
        with contextlib.suppress(OSError):
            os.fsync(self._fd)

    def close(self, finished: bool = True, replace: bool | None = None) -> None:
        """fsync and close. ``finished`` closes a ``json`` array; an interrupted run leaves it
        open so a resumed run can append (and close it). A staged output replaces ``path`` when
        ``replace`` (default: ``finished``), else it is removed and ``path`` is left as it was."""
        if self._closed:
            return
        self._closed = True
        try:
            if finished:
                self._write(self.codec.end())
            self.sync()
        finally:
            if self._owns:
                os.close(self._fd)
            if self._staged is not None:
                self._settle(finished if replace is None else replace)

    def abort(self) -> None:
        """An end that is not clean: what was written stays for ``--resume``."""

    def settle(self, superseded: set[str], *, finished: bool) -> None:
        """After a finished run over an output that holds an id more than once (``--resume``,
        ``--retry-errors``): rewrite it atomically to one record per id (``resume.compact``)."""
        if self.path is not None and finished and superseded:
            from .resume import compact

            compact(self.path, self.fmt, superseded, self.columns, self.framing)

    def _settle(self, replace: bool) -> None:
        assert self._staged is not None and self.path is not None
        if not replace:
            with contextlib.suppress(OSError):
                os.unlink(self._staged)
            return
        os.replace(self._staged, self._target)
        fsync_dir(os.path.dirname(self._target))


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

    @property
    def released(self) -> int:
        """How many records have left, in order: every ``seq`` below this one."""
        return self._next

    def flush(self) -> list[Any]:
        """Every record still held, in order: a stopped run leaves gaps (states never sent)
        that no record will fill."""
        ready = [self._held[seq] for seq in sorted(self._held)]
        self._held.clear()
        return ready
