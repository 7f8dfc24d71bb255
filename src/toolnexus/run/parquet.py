"""``batch --format parquet -o run.parquet``: ONE Parquet file, kept kill-safe by a journal.

Why (``records.parquet`` says it at length): a Parquet file is readable only once its footer is
written, so records are journaled as JSONL lines beside it (``.run.parquet.journal``, through
:class:`OutputWriter`) while the run goes, and folded into ``run.parquet`` (atomically: temp,
fsync, rename) on a clean end: finished, or interrupted by Ctrl-C / SIGTERM. A ``kill -9``
leaves the journal, and ``--resume`` reads the file and the journal (the last record of an id
wins); its clean end folds both in.

A run that starts a file (no ``--resume``) also has the Parquet file written as records
arrive, by a child process fed the journal's lines (``run.parquet_sink``: a temporary file,
renamed into place on a clean end), so its end does not read the journal back (that read cost a
fifth of a 100,000-state run, bench/parquet.py) and the run's own thread never builds Arrow
columns. A resumed run, or one whose child failed, folds the old file and the journal in at its
end instead.

``--overwrite`` writes its journal to a temporary file instead, and only a run that finished
replaces the old ``run.parquet`` (and drops the old journal): until then, and whenever it does
not finish, the old run stays as it was, as for JSONL.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from itertools import chain
from typing import TYPE_CHECKING

from ..records import Record, journal_line, journal_path, parquet_records
from .output import OutputWriter
from .parquet_sink import ParquetSink
from .resume import (
    PriorMismatch,
    PriorOutput,
    complete_records,
    fsync_dir,
    keep_plan,
    kept,
    note_record,
    read_prior,
    written_format,
)

if TYPE_CHECKING:
    from ..core import Question

__all__ = ["ParquetOutput", "read_parquet_prior"]


def read_parquet_prior(path: str, questions_sha256: str) -> PriorOutput:
    """What a Parquet run already holds: its file's records, then its journal's (the journal's
    complete lines are what the resumed journal keeps). Raises :class:`PriorMismatch` for a
    file that is not Parquet or answers another question set, and the reader's own error for
    a Parquet file that cannot be read."""
    written = written_format(path) if os.path.exists(path) else None
    if written is not None and written != "parquet":
        raise PriorMismatch(
            f"it was written as {written}, this run writes parquet; resume with --format "
            f"{written}, or write to a new file"
        )
    prior = PriorOutput()
    for record in parquet_records(path):
        note_record(prior, record, questions_sha256)
    return read_prior(journal_path(path), "jsonl", questions_sha256, into=prior)


def _sweep(path: str) -> None:
    """Remove what a killed run of ``path`` left half-written: the Parquet file it was writing
    (``.NAME.XXXXXXXX.tmp``) and an ``--overwrite`` run's journal (``.NAME.journal-XXXXXXXX``).
    Called with the output's lock held, so no live run is writing them; the journal of a
    killed run (``.NAME.journal``) is never touched: it holds its records."""
    directory, name = os.path.split(os.path.abspath(path))
    with os.scandir(directory) as entries:
        stale = [
            e.path
            for e in entries
            if (e.name.startswith(f".{name}.") and e.name.endswith(".tmp"))
            or e.name.startswith(f".{name}.journal-")
        ]
    for leftover in stale:
        with contextlib.suppress(OSError):
            os.unlink(leftover)


class ParquetOutput:
    """The writer of a Parquet run: records go to the journal as they complete
    (:meth:`write`); :meth:`close` syncs it, and :meth:`settle` folds it into the file."""

    def __init__(
        self,
        path: str,
        questions: Mapping[str, Question],
        prior: PriorOutput | None = None,
        *,
        staged: bool = False,
    ) -> None:
        self.path = path
        self.questions = questions
        self.journal = journal_path(path)
        _sweep(path)
        self._staged = staged
        self._replace = True
        target = self.journal
        if staged:
            directory, name = os.path.split(os.path.abspath(path))
            fd, target = tempfile.mkstemp(prefix=f".{name}.journal-", dir=directory)
            os.close(fd)
        self._file = target
        self._writer = OutputWriter(target, "jsonl", prior=prior)
        self._sink = ParquetSink(path, questions) if prior is None else None

    @property
    def staged(self) -> bool:
        """Whether this run replaces ``path`` only when it finishes (``--overwrite``)."""
        return self._staged

    @property
    def written(self) -> int:
        return self._writer.written

    def write(self, record: Record) -> None:
        """Journal one complete record (one ``os.write``)."""
        line = journal_line(record, record.to_object())
        self._writer.write_line(line)
        if self._sink is not None:
            self._sink.send(line)

    def abort(self) -> None:
        """An end that is not clean (an error): the journal stays for ``--resume``, the Parquet
        file being written is dropped."""
        if self._sink is not None:
            self._sink.abort()

    def close(self, finished: bool = True, replace: bool | None = None) -> None:
        """fsync and close the journal. A staged run that is not to ``replace`` the old file
        (default: it did not ``finish``) removes its journal: the old run stays as it was."""
        self._writer.close()
        self._replace = finished if replace is None else replace
        if self._staged and not self._replace:
            self.abort()
            with contextlib.suppress(OSError):
                os.unlink(self._file)

    def _records(self) -> Iterator[Record]:
        old = () if self._staged else parquet_records(self.path)
        return chain(old, complete_records(self._file))

    def settle(self, superseded: set[str], *, finished: bool = True) -> int:
        """On a clean end: write ``path`` from the old file's records (not for ``--overwrite``)
        and the journal's, keeping ONE record of each id in ``superseded`` (its last decision,
        else its last record), then delete the journal. Returns the records written (0 when a
        staged run left the old file as it was). Finished or interrupted (a signal, a
        cancellation): either way a clean end folds the journal in."""
        if self._staged and not self._replace:
            return 0
        # Nothing to fold in for a fresh run: no old records, and no id twice but a duplicate
        # input line's error, which a JSONL run keeps as well.
        written = self._sink.finish() if self._sink is not None else None
        if written is None:
            from ..records import write_parquet_run

            _sweep(self.path)  # what a child that died mid-run left

            plan = keep_plan(self._records(), superseded) if superseded else {}
            rows = (r.to_object() for r in kept(self._records(), plan))
            written = write_parquet_run(self.path, rows, self.questions)
        # Only now, with the file renamed into place, is the journal redundant. A kill between
        # the rename and this unlink leaves records that are in both: the next read counts the
        # last of each, which is the same record.
        for journal in {self._file, self.journal} if self._staged else {self._file}:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(journal)
        fsync_dir(os.path.dirname(os.path.abspath(self.path)))
        return written
