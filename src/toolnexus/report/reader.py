"""A run read into a :class:`RunStats`: in one piece, or in chunks counted side by side.

A JSONL run longer than one chunk (:data:`CHUNK_BYTES`, each chunk cut at a line end), and a
Parquet run of more than one row group (``records.arrow.ROW_GROUP_RECORDS`` records each), is
counted chunk by chunk, in up to ``jobs`` processes, and the chunks are merged in file order.
Where the cuts fall depends on the file alone, never on ``jobs``: every number of a report is
the same on one CPU or many, and however the run was cut: the labelled arrays, and every
answer's confidence and score, are joined in file order and each metric and mean computed
once over them, so a Parquet run reports what the JSONL run of the same records does. A run
shorter than a chunk, and a JSON or CSV run, is read in one piece (so is a Parquet run whose
journal still holds records).

Two things need the whole run at once, and send it to the one-piece reader:

- an id seen twice: the LAST record of an id counts (a ``--retry-errors`` run stopped before
  compacting), as for ``batch --resume``; the run is read a second time, skipping superseded
  records;
- a question whose type differs between chunks: the one-piece read names the line.

A problem in a chunk is named at its line in the file; of several, the first in file order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from functools import partial
from importlib import import_module
from typing import Any

from ..records import Span, format_named, register_format
from .aggregation import RunStats, record_id
from .compare import Snapshot
from .fieldchecks import RecordError
from .formats import byte_spans
from .inputs import (
    LocatedError,
    readable_again,
)
from .labels import Labels
from .pool import in_order
from .runs import (
    iter_records,
    run_format,
)


def _count_parquet_columns(path: str, span: Span, stats: Any) -> set[str] | None:
    from .columns import count_columns  # pyarrow: a Parquet run's path only

    return count_columns(path, span, stats)


# Parquet's column counter is attached here, where a report counts, not where the format is
# registered (report.formats): report.columns reads through the accumulators, which read runs,
# so a hook named in formats would close an import cycle (tests/house/test_import_graph.py).
register_format(replace(format_named("parquet"), count_columns=_count_parquet_columns))

__all__ = ["CHUNK_BYTES", "read_run", "read_whole"]

#: Small enough that two processes share a 67 MiB run evenly (17 chunks), large enough that
#: sending a counted chunk back costs little beside counting it (bench/report.py).
CHUNK_BYTES = 4 << 20


def read_run(
    path: str,
    labels: Labels | None = None,
    *,
    fmt: str | None = None,
    snapshot: bool = False,
    against: Mapping[str, Snapshot] | None = None,
    jobs: int | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    warnings: list[str] | None = None,
) -> RunStats:
    """Stream ``path`` into a :class:`RunStats`; ``jobs`` processes count its chunks (default:
    one per CPU this process may use, at most ``pool.DEFAULT_JOBS_MAX``). ``snapshot`` and
    ``against`` are RunStats' two-run options. A pipe is read from a temporary copy
    (:func:`readable_again`). ``warnings`` hears what the report should say about the file
    (a cut last line)."""
    with readable_again(path) as readable:
        stats = _read_run(readable, labels, fmt, snapshot, against, jobs, chunk_bytes)
        if warnings is not None:
            cut_last_line = (format_named(fmt) if fmt else run_format(readable)).cut_last_line
            cut = cut_last_line(readable) if cut_last_line is not None else None
            if cut is not None:
                warnings.append(cut.replace(readable, path, 1))
    stats.path = path
    return stats


def _read_run(
    path: str,
    labels: Labels | None,
    fmt: str | None,
    snapshot: bool,
    against: Mapping[str, Snapshot] | None,
    jobs: int | None,
    chunk_bytes: int,
) -> RunStats:
    reader = format_named(fmt) if fmt else run_format(path)
    fmt = reader.name
    spans = reader.spans(path, chunk_bytes) if reader.spans is not None else []
    count = _Count(path, labels, snapshot, against, fmt)
    if len(spans) < 2:
        return _read_whole(count, fmt)
    total = count.stats()
    ids: set[str] = set()
    for part in _parts(count, spans, jobs):
        if part.repeated or not ids.isdisjoint(part.ids):
            return _read_whole(count, fmt)
        ids |= part.ids
        try:
            total.merge(part.stats)
        except RecordError:
            return _read_whole(count, fmt)
    return total


@dataclass
class _Count:
    """What every chunk of one run is counted with."""

    path: str
    labels: Labels | None = None
    snapshot: bool = False
    against: Mapping[str, Snapshot] | None = None
    #: the name of a registered format that is read in chunks (``records.formats``); a
    #: name, not the format, so a chunk sent to a worker process pickles small
    fmt: str = "jsonl"

    def stats(self) -> RunStats:
        return RunStats(self.path, self.labels, snapshot=self.snapshot, against=self.against)


def read_whole(
    path: str,
    labels: Labels | None = None,
    *,
    fmt: str | None = None,
    snapshot: bool = False,
    against: Mapping[str, Snapshot] | None = None,
) -> RunStats:
    """Read a run in one piece, as :func:`read_run` does a run of one chunk."""
    return _read_whole(_Count(path, labels, snapshot, against), fmt)


def _read_whole(count: _Count, fmt: str | None) -> RunStats:
    """A run with repeated ids is read twice, so the last record of each id is the one
    counted."""
    path = count.path
    seen: set[str] = set()
    repeated: Counter[str] = Counter()
    stats = count.stats()
    with _located(path, 0) as where:
        for where.line, record in iter_records(path, fmt):
            sid = record_id(record)
            if sid in seen:
                repeated[sid] += 1
                continue
            seen.add(sid)
            stats.add(record, sid)
        if not repeated:
            return stats
        # Second pass: count only the last record of each repeated id.
        stats = count.stats()
        remaining = {sid: n + 1 for sid, n in repeated.items()}
        for where.line, record in iter_records(path, fmt):
            sid = record_id(record)
            if sid in remaining:
                remaining[sid] -= 1
                if remaining[sid]:
                    continue
            stats.add(record, sid)
    return stats


class _located:
    """``with _located(path, start) as where:`` turns a malformed record at ``where.line``
    into a :class:`LocatedError`, and moves the line numbers of a chunk that starts at byte
    ``start`` to the file's (counted only when something is wrong)."""

    def __init__(self, path: str, start: int) -> None:
        self.path, self.start, self.line = path, start, 0

    def __enter__(self) -> _located:
        return self

    def __exit__(self, kind: Any, e: BaseException | None, tb: Any) -> None:
        if e is None:
            return
        base = _lines_before(self.path, self.start) if self.start else 0
        if isinstance(e, LocatedError):
            if base:
                raise e.rebased(base) from None
            return
        if isinstance(e, KeyError | TypeError | ValueError | AttributeError | IndexError):
            what = f"missing {e}" if isinstance(e, KeyError) else str(e)
            raise LocatedError(self.path, base + self.line, f"not a batch record: {what}") from None


def _lines_before(path: str, offset: int) -> int:
    n = 0
    with open(path, "rb") as f:
        while offset > 0:
            block = f.read(min(offset, 1 << 20))
            if not block:
                break
            n += block.count(b"\n")
            offset -= len(block)
    return n


#: A JSONL run's chunking (``runs.byte_spans``, the format's ``spans``), by the name it had here.
_spans = byte_spans


@dataclass
class _Part:
    """One chunk counted: its stats, its ids, and whether an id repeated inside it."""

    stats: RunStats
    ids: set[str]
    repeated: bool = False


def _count_span(count: _Count, span: Span) -> _Part:
    path = count.path
    reader = format_named(count.fmt)
    if reader.count_columns is not None and not count.snapshot and count.against is None:
        stats = count.stats()
        counted = reader.count_columns(path, span, stats)
        if counted is not None:
            stats.detach()
            return _Part(stats, counted)
    stats = count.stats()
    seen: set[str] = set()
    # A chunk of rows (Parquet) numbers them as the file does: nothing to move.
    with _located(path, span.start if reader.lines_from_span else 0) as where:
        for where.line, record in iter_records(path, count.fmt, span):
            sid = record_id(record)
            if sid in seen:  # the whole run is read again
                return _Part(RunStats(path), set(), repeated=True)
            seen.add(sid)
            stats.add(record, sid)
    stats.detach()
    return _Part(stats, seen)


def _parts(count: _Count, spans: list[Span], jobs: int | None) -> Iterator[_Part]:
    """The counted chunks, in file order. While the workers count a labelled run, this process
    imports numpy, which the labelled metrics take next: off the serial path, and before the
    metric workers (:mod:`.finish`) are forked, so none of them imports it again."""
    meanwhile = partial(import_module, "numpy") if count.labels is not None else None
    return in_order(_count_span, spans, jobs, count, meanwhile)
