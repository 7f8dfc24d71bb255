"""The run's formats, each registered once: a :class:`Reader` per kind of INPUT (JSONL and JSON
lines, CSV/TSV, Parquet/Arrow files and folders, a directory or glob of state files, stdin) and a
:class:`Sink` per ``--format`` (jsonl, json, csv, parquet with its journal).

Everything that depends on a format asks its codec: which reader claims an INPUT, how many rows
it holds (the progress bar's total), whether it needs pyarrow; how a sink opens ``--output``,
reads it back for ``--resume``, knows it holds a run, and which files a run leaves. No other
module of the run compares a format name: a format is one entry here (a test registers its own
reader and sink and runs them through ``run_batch``).

Readers are asked in registration order, newest first, so a registered reader can claim a
suffix before the built-in ones; the first whose :attr:`Reader.claims` says yes reads the INPUT.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

from ..core import RunError
from .resume import Framing, PriorOutput

if TYPE_CHECKING:
    from ..core import Question
    from ..records import Record
    from .items import InputItem, InputSpec, Notes

__all__ = [
    "Reader",
    "Sink",
    "SinkWriter",
    "iter_inputs",
    "reader_for",
    "readers",
    "register_reader",
    "register_sink",
    "sink_for",
    "sinks",
]


#: ``(arg, spec, stdin, note)`` -> the items of one INPUT
ReadInput = Callable[[str, "InputSpec", "BinaryIO | None", "Notes | None"], Iterator["InputItem"]]


@dataclass(frozen=True)
class Reader:
    """How one kind of INPUT is read."""

    name: str
    #: whether this reader reads ``arg`` (an existing path, ``-``, or a pattern)
    claims: Callable[[str], bool]
    read: ReadInput
    #: the rows ``arg`` holds without parsing it (a progress bar's total), or None
    count: Callable[[str], int | None] = lambda arg: None
    needs_pyarrow: bool = False
    #: ``arg`` is a pattern of paths, not a path (an ``--output`` matching it is refused)
    pattern: bool = False


class SinkWriter(Protocol):
    """What a sink's writer does for the run (``output.OutputWriter``,
    ``parquet.ParquetOutput``)."""

    @property
    def staged(self) -> bool: ...

    def write(self, record: Record) -> None: ...

    def close(self, finished: bool = True, replace: bool | None = None) -> None: ...

    def abort(self) -> None: ...

    def settle(self, superseded: set[str], *, finished: bool) -> object: ...


@dataclass(frozen=True)
class Sink:
    """How one ``--format`` is written, read back and known."""

    name: str
    #: ``(output, columns, questions, prior, staged)`` -> the run's writer
    open: Callable[
        [str | None, list[str], Mapping[str, Question], PriorOutput | None, bool], SinkWriter
    ]
    #: ``(output, questions_sha256)`` -> what ``output`` holds, for ``--resume``; raises
    #: ``resume.PriorMismatch``, ``OSError`` or ``ValueError``
    read_prior: Callable[[str, str], PriorOutput]
    #: the files a run of this format keeps for ``output`` (Parquet: the file and its journal)
    files: Callable[[str], list[str]] = lambda output: [output]
    #: writes to a stream (stdout); a sink that is not needs ``-o FILE``
    streams: bool = True
    #: the header learns its columns from a record of the question set (CSV)
    columns: bool = False
    needs_pyarrow: bool = False
    #: how a line format frames its records (``resume.Framing``; None: one per line)
    framing: Framing | None = None

    def holds_run(self, output: str) -> bool:
        """``output`` holds records: the file, or a file the run keeps beside it."""
        return any(_holds_records(p) for p in self.files(output))


def _holds_records(path: str) -> bool:
    """A regular file with something in it (``/dev/null`` or a FIFO is never refused)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size > 0


_READERS: list[Reader] = []
_SINKS: dict[str, Sink] = {}


def register_reader(reader: Reader) -> None:
    """Make ``reader`` the first asked (a reader of the same name is replaced)."""
    _READERS[:] = [reader, *(r for r in _READERS if r.name != reader.name)]


def register_sink(sink: Sink) -> None:
    """Make ``sink`` the writer of ``--format sink.name`` (replacing one of that name)."""
    _SINKS[sink.name] = sink


def readers() -> tuple[Reader, ...]:
    return tuple(_READERS)


def sinks() -> tuple[str, ...]:
    """The registered formats, in registration order."""
    return tuple(_SINKS)


def reader_for(arg: str) -> Reader | None:
    """The reader of one INPUT argument; None for a path that is not there."""
    return next((r for r in _READERS if r.claims(arg)), None)


def sink_for(fmt: str) -> Sink:
    sink = _SINKS.get(fmt)
    if sink is None:
        raise RunError(f"--format takes one of {', '.join(_SINKS)}, got {fmt!r}")
    return sink


def iter_inputs(
    args: Sequence[str],
    spec: InputSpec,
    stdin: BinaryIO | None = None,
    note: Notes | None = None,
) -> Iterator[InputItem]:
    """Every state of every INPUT, in order, read lazily; each item knows its INPUT's index.
    ``note`` hears what the user should know once (``WHOLE_OBJECT_NOTE``)."""
    for source, arg in enumerate(args):
        items = _read_input(arg, spec, stdin, note)
        if source == 0:
            yield from items
        else:
            yield from (replace(item, source=source) for item in items)


def _read_input(
    arg: str, spec: InputSpec, stdin: BinaryIO | None, note: Notes | None
) -> Iterator[InputItem]:
    """Every state of one INPUT argument, read by the reader that claims it (``codecs``)."""
    reader = reader_for(arg)
    if reader is None:
        raise RunError(f"{arg}: no such input file or directory")
    yield from reader.read(arg, spec, stdin, note)


# -- the built-in readers, lowest priority first (each registration goes in front)

_GLOB_CHARS = frozenset("*?[")


def _exists(arg: str) -> bool:
    return arg != "-" and os.path.exists(arg)


def _read_jsonl(
    arg: str, spec: InputSpec, stdin: BinaryIO | None, note: Notes | None
) -> Iterator[InputItem]:
    from .inputs import not_a_table, read_jsonl

    with open(arg, "rb") as f:
        not_a_table(arg, f)
        yield from read_jsonl(f, arg, spec, Path(arg).parent, note)


def _read_stdin(
    arg: str, spec: InputSpec, stdin: BinaryIO | None, note: Notes | None
) -> Iterator[InputItem]:
    from .inputs import read_jsonl

    yield from read_jsonl(stdin if stdin is not None else sys.stdin.buffer, "-", spec, note=note)


def _read_csv(
    arg: str, spec: InputSpec, stdin: BinaryIO | None, note: Notes | None
) -> Iterator[InputItem]:
    from .inputs import read_csv

    yield from read_csv(arg, spec, note)


def _read_dir(
    arg: str, spec: InputSpec, stdin: BinaryIO | None, note: Notes | None
) -> Iterator[InputItem]:
    from .inputs import read_files, walk

    yield from read_files(walk(arg, arg, spec.recursive), note)


def _read_glob(
    arg: str, spec: InputSpec, stdin: BinaryIO | None, note: Notes | None
) -> Iterator[InputItem]:
    import glob

    from .inputs import read_files

    # ``**`` in the pattern is how a glob asks for recursion.
    paths = (p for p in sorted(glob.iglob(arg, recursive=True)) if os.path.isfile(p))
    yield from read_files(paths, note)


def _read_arrow(
    arg: str, spec: InputSpec, stdin: BinaryIO | None, note: Notes | None
) -> Iterator[InputItem]:
    from .arrowin import read_arrow  # pyarrow only for a Parquet/Arrow input

    yield from read_arrow(arg, spec)


def _line_count(arg: str) -> int:
    """A fast byte count of the newlines, no parsing."""
    with open(arg, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def _arrow_rows(arg: str) -> int | None:
    from .arrowin import parquet_rows

    return parquet_rows(arg)


def _is_arrow(arg: str) -> bool:
    from .items import is_arrow_input

    return _exists(arg) and is_arrow_input(arg)


def _is_table(arg: str) -> bool:
    return os.path.isfile(arg) and Path(arg).suffix.lower() in (".csv", ".tsv")


def _is_pattern(arg: str) -> bool:
    return not os.path.exists(arg) and bool(_GLOB_CHARS & set(arg))


for _reader in (
    Reader("glob", _is_pattern, _read_glob, pattern=True),
    Reader("dir", os.path.isdir, _read_dir),
    Reader("jsonl", lambda arg: _exists(arg) and not os.path.isdir(arg), _read_jsonl, _line_count),
    Reader("csv", _is_table, _read_csv, lambda arg: _line_count(arg) - 1),
    Reader("arrow", _is_arrow, _read_arrow, _arrow_rows, needs_pyarrow=True),
    Reader("stdin", lambda arg: arg == "-", _read_stdin),
):
    register_reader(_reader)


# -- the built-in sinks


def _open_lines(fmt: str, framing: Framing | None = None) -> Callable[..., SinkWriter]:
    def open_(
        output: str | None,
        columns: list[str],
        questions: Mapping[str, Question],
        prior: PriorOutput | None,
        staged: bool,
    ) -> SinkWriter:
        from .output import OutputWriter
        from .resume import LINES

        return OutputWriter(output, fmt, columns, prior, staged=staged, framing=framing or LINES)

    return open_


def _prior_lines(fmt: str, framing: Framing | None = None) -> Callable[[str, str], PriorOutput]:
    def read(output: str, sha: str) -> PriorOutput:
        from .resume import LINES, read_prior

        return read_prior(output, fmt, sha, framing=framing or LINES)

    return read


def _open_parquet(
    output: str | None,
    columns: list[str],
    questions: Mapping[str, Question],
    prior: PriorOutput | None,
    staged: bool,
) -> SinkWriter:
    from .parquet import ParquetOutput

    assert output is not None  # a sink that does not stream is checked to have a file
    return ParquetOutput(output, questions, prior, staged=staged)


def _prior_parquet(output: str, sha: str) -> PriorOutput:
    from ..core import one_line
    from ..records import require_pyarrow
    from .parquet import read_parquet_prior

    pa = require_pyarrow()
    try:
        return read_parquet_prior(output, sha)
    except pa.ArrowException as e:
        raise ValueError(f"not a readable Parquet run: {one_line(str(e))}") from None


def _parquet_files(output: str) -> list[str]:
    from ..records import journal_path

    return [output, journal_path(output)]


_HEADER = Framing(header=True)
_ARRAY = Framing(opener=b"[", closer=b"]", lead=b",")

for _sink in (
    Sink("jsonl", _open_lines("jsonl"), _prior_lines("jsonl")),
    Sink(
        "csv",
        _open_lines("csv", _HEADER),
        _prior_lines("csv", _HEADER),
        columns=True,
        framing=_HEADER,
    ),
    Sink("json", _open_lines("json", _ARRAY), _prior_lines("json", _ARRAY), framing=_ARRAY),
    Sink(
        "parquet",
        _open_parquet,
        _prior_parquet,
        _parquet_files,
        streams=False,
        needs_pyarrow=True,
    ),
):
    register_sink(_sink)
