"""Reading an existing ``batch --output`` back: ``--resume``, ``--retry-errors``, compaction.

``--resume`` reads the ids already in ``--output`` through the same codec that wrote them
(``records.codec``). The LAST record for an id is the one that counts, so ``--retry-errors``
simply appends the new record after the old error record; when the run finishes, the file is
rewritten atomically (temp file, fsync, rename) keeping only the last record of each id, so a
finished file holds exactly one record per id. A run killed before that leaves the superseded
error records in place, which the next ``--resume`` or ``--retry-errors`` reads correctly (last
wins) and compacts. A short last line (no newline: a kill mid-write) is never a record.
"""

from __future__ import annotations

import csv
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import BinaryIO

from ..records import (
    PARQUET_MAGIC,
    Codec,
    DecisionRecord,
    ErrorRecord,
    Record,
    RecordVersionError,
    codec_for,
    read_csv_header,
)

__all__ = [
    "LINES",
    "Framing",
    "PriorMismatch",
    "PriorOutput",
    "UnreadableRecord",
    "check_question_set",
    "compact",
    "complete_records",
    "keep_plan",
    "kept",
    "note_record",
    "read_ids",
    "read_prior",
    "written_format",
]


@dataclass
class PriorOutput:
    """What an existing ``--output`` file already holds (the LAST record of each id counts).

    ``keep_bytes`` is the length of the prefix to keep: complete lines only, and for ``json``
    without the closing ``]``. ``repeated`` holds ids that appear more than once (a previous
    ``--retry-errors`` run that did not finish compacting).
    """

    ok: set[str] = field(default_factory=set)
    errors: set[str] = field(default_factory=set)
    #: the code of each id's last error record (the ids of ``errors``): what a run that leaves
    #: them in the output reports and exits with (issue 31 item 2)
    error_codes: dict[str, str] = field(default_factory=dict)
    repeated: set[str] = field(default_factory=set)
    keep_bytes: int = 0
    header: list[str] | None = None
    records: int = 0
    #: what the recorded decisions were billed, cached ones excluded (``--resume`` counts it
    #: against a spend cap): requests, tokens, the reported costs, and how many reported none
    spent_requests: int = 0
    spent_input_tokens: int = 0
    spent_output_tokens: int = 0
    spent_cost: Decimal = Decimal(0)
    spent_without_cost: int = 0
    #: decisions whose reply carried no token counts (flag ``usage-missing``): their tokens
    #: read 0 but are unknown, so a resumed budget charges each at an estimate (issue 33)
    spent_unreported: int = 0

    def __contains__(self, key: str) -> bool:
        return key in self.ok or key in self.errors


@dataclass(frozen=True)
class Framing:
    """How a line format frames its records in a file (its sink in ``codecs`` says which): a
    first line that is a header naming the columns (CSV); the lines that open and close the
    records (a JSON array's ``[`` and ``]``); the separator leading every record but the first
    (the array's comma). Reading back and compacting follow it, never the format's name."""

    header: bool = False
    opener: bytes = b""
    closer: bytes = b""
    lead: bytes = b""


#: One record per line and nothing around them (jsonl, and a Parquet run's journal).
LINES = Framing()


class UnreadableRecord(ValueError):
    """A record of an existing ``--output`` this toolnexus cannot read (a newer
    ``schema_version``): ``str(e)`` is why, ``path`` and 1-based ``line`` where, so the refusal
    names ``FILE:LINE`` as ``report`` does."""

    def __init__(self, path: str, line: int, why: str) -> None:
        super().__init__(why)
        self.path = path
        self.line = line


class PriorMismatch(ValueError):
    """An existing ``--output`` that this run must not resume: another format or another
    question set. ``str(e)`` says which and what to do."""


def _lines(path: str) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` for every line, the last one possibly without its newline."""
    offset = 0
    with open(path, "rb") as f:
        for line in f:
            yield offset, line
            offset += len(line)


def _header(line: bytes) -> list[str]:
    return read_csv_header(next(csv.reader([line.decode("utf-8", "replace")]), []))


def _records(
    path: str, fmt: str, columns: Sequence[str] = (), framing: Framing = LINES
) -> Iterator[Record | None]:
    """Every line's record after a header (None for framing or an unreadable line)."""
    codec: Codec = codec_for(fmt, columns)
    for i, (_, line) in enumerate(_lines(path)):
        if framing.header and i == 0:
            codec = codec_for(fmt, _header(line))
            continue
        yield codec.decode(line)


def written_format(path: str) -> str | None:
    """The format an existing output was written in, from its first line (None when empty):
    ``[`` opens a json array, ``{`` a jsonl record, ``PAR1`` a Parquet file, anything else is a
    CSV header."""
    for _, line in _lines(path):
        head = line.strip()
        if not head:
            continue
        if head.startswith(PARQUET_MAGIC):
            return "parquet"
        if head.startswith(b"["):
            return "json"
        if head.startswith(b"{"):
            return "jsonl"
        return "csv"
    return None


def read_prior(
    path: str,
    fmt: str,
    questions_sha256: str | None = None,
    into: PriorOutput | None = None,
    *,
    framing: Framing = LINES,
) -> PriorOutput:
    """Scan an existing output file for ``--resume`` / ``--retry-errors``. A missing or empty
    file is an empty prior. Raises ValueError when a CSV file's header is not a batch header,
    and :class:`PriorMismatch` when the file was written in another format or its records
    answer another question set than ``questions_sha256``. ``into`` continues a prior already
    read (a Parquet run's file, before its journal).

    A finished decision is never given up: an id with a decision record counts as done even
    when an error record for it comes later (a duplicate input line writes one)."""
    prior = PriorOutput() if into is None else into
    if not os.path.exists(path):
        return prior
    written = written_format(path)
    if written is not None and written != fmt:
        raise PriorMismatch(
            f"it was written as {written}, this run writes {fmt}; resume with --format "
            f"{written}, or write to a new file"
        )
    codec = codec_for(fmt)
    for number, (offset, line) in enumerate(_lines(path), 1):
        if not line.endswith(b"\n"):
            break  # cut short by a kill: this record was never complete
        if framing.header and prior.header is None:
            prior.header = _header(line)
            if "id" not in prior.header:
                raise ValueError(f"{path}: not a batch CSV output (no id column)")
            codec = codec_for(fmt, prior.header)
            prior.keep_bytes = offset + len(line)
            continue
        if framing.closer and line.strip() == framing.closer:
            break  # the closing bracket of a finished run; appending reopens the array
        try:
            record = codec.decode(line)
        except RecordVersionError as e:
            raise UnreadableRecord(path, number, str(e)) from None
        why = _not_a_record(record, line, questions_sha256)
        if why is not None:
            raise UnreadableRecord(path, number, why)
        prior.keep_bytes = offset + len(line)
        if record is not None:
            note_record(prior, record, questions_sha256)
    return prior


#: What a JSON array's framing puts on a line of its own.
_FRAMING = (b"", b"[", b"]", b",")


def _not_a_record(record: Record | None, line: bytes, questions_sha256: str | None) -> str | None:
    """Why a line of an output to resume is not a record of this question set, or None. A line
    batch never writes (no ``id``, a decision without ``answers`` or ``questions_sha256``: a
    golden case written over the run) would otherwise be trusted as a finished state and
    skipped (issue 42 item 1)."""
    if record is None:
        if line.strip() in _FRAMING:
            return None
        return "not a record batch writes (no id); write to a new file, or remove that line"
    if not isinstance(record, DecisionRecord) or questions_sha256 is None:
        # An error record is never trusted as finished (it is sent again); with no question
        # set to hold it to (a caller reading any output), a decision is what it says.
        return None
    missing = []
    if record.questions_sha256 is None:
        missing.append("questions_sha256")
    if not record.answers:
        missing.append("answers")
    if missing:
        return (
            f"not a record of this question set (no {' and no '.join(missing)}); write to a "
            "new file, or remove that line"
        )
    return None


def check_question_set(sha: str | None, questions_sha256: str | None) -> None:
    """Raise :class:`PriorMismatch` when a record answering the question set ``sha`` cannot be
    continued by a run of ``questions_sha256`` (either unknown: no refusal)."""
    if questions_sha256 is not None and sha is not None and sha != questions_sha256:
        raise PriorMismatch(
            f"its records answer another question set (question-set digest {sha[:12]}..., "
            f"this run's is {questions_sha256[:12]}...); resume with the question file that "
            "wrote it, or write to a new file"
        )


def note_record(prior: PriorOutput, record: Record, questions_sha256: str | None) -> None:
    """Count one record of an existing output into ``prior`` (the rules of :func:`read_prior`)."""
    check_question_set(record.questions_sha256, questions_sha256)
    key = record.key
    prior.records += 1
    if key in prior:
        prior.repeated.add(key)
    if isinstance(record, DecisionRecord) and not record.cached:
        usage = record.usage
        prior.spent_requests += 1
        prior.spent_input_tokens += usage.input_tokens
        prior.spent_output_tokens += usage.output_tokens
        if "usage-missing" in record.flags:
            prior.spent_unreported += 1
        if usage.cost is None:
            prior.spent_without_cost += 1
        else:
            prior.spent_cost += Decimal(repr(usage.cost))  # never a float sum
    if not isinstance(record, ErrorRecord):
        prior.ok.add(key)
        prior.errors.discard(key)
        prior.error_codes.pop(key, None)
    elif key not in prior.ok:
        prior.errors.add(key)
        prior.error_codes[key] = record.code


def complete_records(path: str) -> Iterator[Record]:
    """The records of a JSONL file's complete lines (a short last line, cut by a kill, is
    never a record), in file order."""
    codec = codec_for("jsonl")
    for _, line in _lines(path):
        if not line.endswith(b"\n"):
            return
        record = codec.decode(line)
        if record is not None:
            yield record


def keep_plan(records: Iterable[Record | None], keys: set[str]) -> dict[str, list[int]]:
    """Which record of each id in ``keys`` a compaction keeps: its last decision when it has
    one, else its last record (no compaction ever drops a finished decision). Per key:
    ``[records seen, index of the one kept, whether that one is a decision]``."""
    plan: dict[str, list[int]] = {k: [0, -1, 0] for k in keys}
    for record in records:
        if record is None or record.key not in plan:
            continue
        entry = plan[record.key]
        if not isinstance(record, ErrorRecord):
            entry[1], entry[2] = entry[0], 1
        elif not entry[2]:
            entry[1] = entry[0]
        entry[0] += 1
    return plan


def kept(records: Iterable[Record | None], plan: Mapping[str, list[int]]) -> Iterator[Record]:
    """``records`` (read again, in the same order as for :func:`keep_plan`) without the ones
    the plan supersedes."""
    seen: dict[str, int] = dict.fromkeys(plan, 0)
    for record in records:
        if record is None:
            continue
        if record.key in seen:
            index = seen[record.key]
            seen[record.key] += 1
            if index != plan[record.key][1]:
                continue
        yield record


def read_ids(path: str, fmt: str, framing: Framing = LINES) -> list[str]:
    """The id of every complete record in an output file, in file order, as ``--resume``
    reads them (CSV ids unescaped)."""
    return [r.key for r in _records(path, fmt, framing=framing) if r is not None]


def compact(
    path: str, fmt: str, keys: set[str], columns: Sequence[str] = (), framing: Framing = LINES
) -> None:
    """Rewrite ``path`` atomically keeping ONE record of each id in ``keys`` (every other line
    is kept as is): its last decision when it has one, else its last record. No compaction ever
    drops a finished decision. Two passes, so memory holds counts for ``keys`` only."""
    if not keys:
        return
    plan = keep_plan(_records(path, fmt, columns, framing), keys)
    seen: dict[str, int] = dict.fromkeys(keys, 0)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".toolnexus-batch-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            first = True
            codec: Codec = codec_for(fmt, columns)
            for i, (_, line) in enumerate(_lines(path)):
                if framing.header and i == 0:
                    out.write(line)
                    codec = codec_for(fmt, _header(line))
                    continue
                first = _copy(out, framing, line, codec.decode(line), seen, plan, first)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(directory)


def _copy(
    out: BinaryIO,
    framing: Framing,
    line: bytes,
    record: Record | None,
    seen: dict[str, int],
    plan: dict[str, list[int]],
    first: bool,
) -> bool:
    """Write ``line`` to ``out`` unless its record is superseded; returns the new ``first``."""
    write = out.write
    if record is None:
        if framing.closer and line.strip() == framing.closer:
            write(framing.closer + b"\n")
        elif framing.opener and line.strip() == framing.opener:
            write(line)
        return first
    if record.key in seen:
        index = seen[record.key]
        seen[record.key] += 1
        if index != plan[record.key][1]:
            return first  # superseded by the record of this id that is kept
    if framing.lead:
        body = line.strip().removeprefix(framing.lead)
        line = (b"" if first else framing.lead) + body + b"\n"
    write(line)
    return False


def fsync_dir(directory: str) -> None:
    """fsync a directory so a rename in it survives a crash (best effort)."""
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
