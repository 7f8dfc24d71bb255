"""Lazy state readers for ``toolnexus batch``: JSONL, CSV, a directory or glob of state files,
``-`` for JSONL on stdin, and Parquet / Arrow IPC files or a directory of Parquet files
(``run.arrowin``: read one record batch at a time, each row as a JSONL object would be).

Every reader is a generator of :class:`InputItem`, one per state, so memory does not grow with
the number of states: a line is read, parsed, handed on and forgotten. A line or row that cannot
be read becomes an item carrying an error (code ``malformed_input`` or ``invalid_state``, with
``path:line`` in the message); it never stops the batch.

Ids (they key ``--resume``, ``--retry-errors`` and ``--shard``, so they must be stable):

- JSONL / CSV with ``--id-field F``: the value of ``F`` (a string or an integer).
- JSONL / CSV without it: ``<INPUT>:<line>`` as given on the command line (``-:<line>`` for
  stdin), the 1-based line where the state starts.
- A directory or glob: the file's path (directory entries are listed name-only and sorted, so
  the order is stable; the states themselves are read one at a time).

A directory yields its files with a suffix ``eval`` reads (``.txt``, ``.md``, ``.log``,
``.json``, ``.yaml``, ``.yml``, ``.png``, ``.jpg``, ``.jpeg``), not its subfolders unless
``--recursive``, and refuses (an error record) a symlink leading out of it. A glob yields the
files it matches (``**`` recurses); one with another suffix is an error record.

A state is ``F``'s value with ``--state-field F``, an object of the fields with several
``--state-field`` (``--state-field subject --state-field body``: ``{"subject": ..., "body":
...}``), else the whole JSON value (JSONL) or the whole row as an object of column -> text (CSV).

Images: in a directory or glob, a ``.png``/``.jpg``/``.jpeg`` file is an image state.
``--image-field F`` reads ``F``'s value as the path of an image (relative to the input file's
folder; to the working directory for stdin): without ``--state-field`` the image takes the path's
place in the record; with ``--state-field F`` the state is the image; with another
``--state-field`` the image is attached to that state as ``<F>``. Either way only the path is
checked here: the bytes are read when the state is sent, so memory stays flat.
"""

from __future__ import annotations

import codecs
import csv
import functools
import itertools
import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from ..core import Image, JsonLimitError, RunError, loads_noting_duplicates, one_line, printable
from ..records import (
    UTF16_HINT,
    csv_delimiter,
    first_non_utf8,
    header_note,
    not_utf8_hint,
)
from .items import (
    INVALID_STATE,
    MALFORMED,
    InputItem,
    InputSpec,
    from_object,
)
from .states import (
    STATE_SUFFIXES,
    NotAState,
    duplicate_key,
    guess_format,
    is_image_path,
    parse_state,
    warn_duplicate_key,
)

if TYPE_CHECKING:
    from .items import Notes

__all__ = [
    "not_a_table",
    "read_csv",
    "read_files",
    "read_jsonl",
    "walk",
]


#: Said once per run when a JSONL object is sent whole with its id in it.
WHOLE_OBJECT_NOTE = (
    "without --state-field each JSONL object is sent whole, its {field!r} field included, so "
    "the model reads the id too; name the state with --state-field to send only that"
)


def _whole_with_id(value: Any, spec: InputSpec) -> str | None:
    """The id key a JSONL object sent whole carries (None when it is not sent whole)."""
    if spec.state_fields or not isinstance(value, dict):
        return None
    key = spec.id_field or "id"
    return key if key in value else None


def read_jsonl(
    stream: BinaryIO,
    name: str,
    spec: InputSpec,
    base: Path | None = None,
    note: Notes | None = None,
) -> Iterator[InputItem]:
    """One state per non-blank line. Blank lines are skipped but still counted. ``base`` is
    the folder ``--image-field`` paths are relative to. ``note`` hears
    :data:`WHOLE_OBJECT_NOTE` the first time an object is sent whole with its id in it, and
    a warning for the first line whose object repeats a key, once per file (without ``note``,
    that warning goes to stderr)."""
    warned = noted = False
    for lineno, raw in enumerate(stream, 1):
        if not raw.strip():
            continue
        where = f"{name}:{lineno}"
        try:
            value, twice = loads_noting_duplicates(raw)
        except UnicodeDecodeError as e:
            yield InputItem(where, error=(MALFORMED, f"{where}: not UTF-8 (byte {e.start})"))
            continue
        except JsonLimitError as e:
            yield InputItem(where, error=(MALFORMED, f"{where}: JSON state refused: {e}"))
            continue
        except ValueError as e:
            yield InputItem(where, error=(MALFORMED, f"{where}: invalid JSON: {one_line(str(e))}"))
            continue
        if twice is not None and not warned:
            warned = True
            more = " (the first such line of this file)"
            if note is None:
                warn_duplicate_key(where, twice[0], more)
            else:
                note(duplicate_key(where, twice[0], more), "warning")
        if note is not None and not noted and (key := _whole_with_id(value, spec)) is not None:
            note(WHOLE_OBJECT_NOTE.format(field=key))
            noted = True
        yield replace(from_object(value, where, where, spec, base), line=lineno)


_EXTRA = "\x00extra"  # DictReader's restkey: a row with more fields than the header

#: A CSV cell has the budget of a JSONL line: none of its own (Python's csv module stops at
#: 131,072 characters by default). The largest value the C long of every platform holds.
_CSV_CELL_LIMIT = 2**31 - 1


def _shown(name: str) -> str:
    """A column name as a message shows it: quoted, every invisible character escaped (a BOM,
    a zero-width space or a bidirectional override would otherwise hide in the line)."""
    return printable(repr(name))


def _csv_text(stream: Iterable[bytes], bad: list[tuple[int, int]]) -> Iterator[str]:
    """Each physical line decoded on its own, so a byte that is not UTF-8 is reported at its own
    line (``(line, byte)`` appended to ``bad``; the line is then decoded with surrogateescape
    and its row becomes an error). A spreadsheet's byte-order mark before the header is
    dropped."""
    for n, raw in enumerate(stream, 1):
        if n == 1:
            raw = raw.removeprefix(codecs.BOM_UTF8)
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as e:
            bad.append((n, e.start + 1))
            yield raw.decode("utf-8", "surrogateescape")


def _dialect(path: str, f: BinaryIO, note: Notes | None = None) -> tuple[str, bytes]:
    """The delimiter of the CSV file open as ``f`` and its first line (read, so the caller
    puts it back). A file that is not UTF-8 is refused here, once, with what to do: row by row
    it made one error record per line (issue 31 item 14)."""
    bad = first_non_utf8(f)
    if bad is not None:
        line, byte = bad
        f.seek(0)
        raise RunError(f"{path}:{line}: not UTF-8 (byte {byte}): {not_utf8_hint(f.read(2))}")
    f.seek(0)
    first = f.readline()
    header = first.removeprefix(codecs.BOM_UTF8).decode("utf-8")
    # A .tsv file is tab-separated whatever its header holds (a column name may have a comma).
    delimiter = "\t" if path.lower().endswith(".tsv") else csv_delimiter(header)
    if delimiter != "," and not path.lower().endswith(".tsv"):
        if note is None:
            sys.stderr.write(f"toolnexus: note: {path}: {header_note(header, delimiter)}\n")
        else:
            note(f"{path}: {header_note(header, delimiter)}")
    return delimiter, first


def read_csv(path: str, spec: InputSpec, note: Notes | None = None) -> Iterator[InputItem]:
    """One state per row after the header. The header names the columns; a header without a
    comma but with ``;`` or tabs sets the delimiter (said to ``note``, else on stderr)."""
    if csv.field_size_limit() < _CSV_CELL_LIMIT:
        csv.field_size_limit(_CSV_CELL_LIMIT)
    bad: list[tuple[int, int]] = []
    with open(path, "rb") as f:
        delimiter, first = _dialect(path, f, note)
        lines = itertools.chain([first], f)
        reader = csv.DictReader(
            _csv_text(lines, bad), restkey=_EXTRA, strict=True, delimiter=delimiter
        )
        try:
            columns = reader.fieldnames or []
        except csv.Error as e:
            yield InputItem(f"{path}:1", error=(MALFORMED, f"{path}:1: bad CSV header: {e}"))
            return
        if bad:
            line, byte = bad[0]
            yield InputItem(
                f"{path}:{line}",
                error=(MALFORMED, f"{path}:{line}: bad CSV header: not UTF-8 (byte {byte})"),
            )
            return
        for field_name, flag in (
            (spec.id_field, "--id-field"),
            *((name, "--state-field") for name in spec.state_fields),
            (spec.image_field, "--image-field"),
        ):
            if field_name is not None and field_name not in columns:
                # Every row would fail the same way: say it once, as a usage error.
                raise RunError(
                    f"{path}: {flag} {_shown(field_name)} is not a column "
                    f"({', '.join(_shown(c) for c in columns)})"
                )
        while True:
            start = reader.line_num + 1
            where = f"{path}:{start}"
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                bad.clear()
                yield InputItem(where, error=(MALFORMED, f"{where}: {one_line(str(e))}"))
                continue
            if bad:
                line, byte = bad[0]
                bad.clear()
                where = f"{path}:{line}"
                yield InputItem(where, error=(MALFORMED, f"{where}: not UTF-8 (byte {byte})"))
                continue
            if _EXTRA in row or None in row.values():
                n = len(row.get(_EXTRA, [])) + sum(
                    v is not None for k, v in row.items() if k != _EXTRA
                )
                yield InputItem(
                    where,
                    error=(
                        MALFORMED,
                        f"{where}: row has {n} fields, the header has {len(columns)}",
                    ),
                )
                continue
            yield replace(from_object(dict(row), where, where, spec, Path(path).parent), line=start)


def _read_state_file(path: str, note: Notes | None = None) -> InputItem:
    """One state file, read as ``eval`` reads a state file (``states.parse_state``). An image is
    not read here at all: its bytes are read when its state is sent."""
    if is_image_path(path):
        return InputItem(path, state=Image(path))
    try:
        fmt = guess_format(path)
    except RunError:
        return InputItem(
            path,
            error=(
                MALFORMED,
                f"{path}: not a state file eval reads (suffixes "
                f"{', '.join(sorted(STATE_SUFFIXES))}); rename it or narrow the pattern",
            ),
        )
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return InputItem(path, error=(MALFORMED, f"{path}: cannot read: {one_line(str(e))}"))
    try:
        warn = None if note is None else functools.partial(note, kind="warning")
        return InputItem(path, state=parse_state(text, fmt, path, warn))
    except NotAState as e:
        return InputItem(path, error=(INVALID_STATE, one_line(e.message)))
    except RunError as e:
        return InputItem(path, error=(MALFORMED, one_line(e.message)))


def _inside(path: str, root: str) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([real, top]) == top


def walk(root: str, top: str, recursive: bool) -> Iterator[str | InputItem]:
    """The state files of a directory: each entry with a suffix ``eval`` reads
    (``STATE_SUFFIXES``), sorted by name; hidden entries (``.git``, editor swap files) and other
    suffixes are skipped, subfolders entered only when ``recursive``. A symlink that leads out
    of ``top`` becomes an error item and is never read (a link to /etc/passwd was once sent)."""
    with os.scandir(root) as it:
        entries = sorted((e for e in it if not e.name.startswith(".")), key=lambda e: e.name)
    for entry in entries:
        if entry.is_symlink() and not _inside(entry.path, top):
            yield InputItem(
                entry.path,
                error=(
                    MALFORMED,
                    f"{entry.path}: a symlink leading out of the input directory {top}; "
                    "not read (copy the file in, or name it as an input)",
                ),
            )
        elif entry.is_dir():
            if recursive and not entry.is_symlink():
                yield from walk(entry.path, top, recursive)
        elif entry.is_file() and Path(entry.name).suffix.lower() in STATE_SUFFIXES:
            yield entry.path


def read_files(paths: Iterable[str | InputItem], note: Notes | None = None) -> Iterator[InputItem]:
    """One state per file; its path is its id (an item already made passes through)."""
    for path in paths:
        yield path if isinstance(path, InputItem) else _read_state_file(path, note)


def not_a_table(path: str, f: BinaryIO) -> None:
    """Refuse, once, a file read as JSONL that a spreadsheet wrote as a table: UTF-16 ("Unicode
    Text"), or a first line that is not JSON but holds tabs ("Text (Tab delimited)", saved as
    .txt). Read line by line, each of its lines was an error record of its own (issue 31's
    attack on the dialects Excel writes)."""
    first = f.readline(1 << 16)
    f.seek(0)
    if first.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise RunError(f"{path}:1: not UTF-8 (byte 1): {UTF16_HINT}")
    # A JSON state starts { [ or " (a raw tab inside one is that line's own error): a header
    # of column names with tabs between them does not.
    if b"\t" not in first or first.lstrip().startswith((b"{", b"[", b'"')):
        return
    try:
        json.loads(first)
    except ValueError:
        raise RunError(
            f"{path}:1: not JSON but tab-separated text (a spreadsheet's 'Text (Tab "
            "delimited)' export): name the file .tsv to read it as a table with a header"
        ) from None
