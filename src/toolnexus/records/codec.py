"""One encoder and one decoder per run format, over the one record model (``records.model``).

Every format writes one record per physical line, so a run streams, a ``kill -9`` leaves at
most one short line, and ``--resume`` reads it back line by line:

- ``jsonl``: one JSON object (``Record.to_object()``) per line.
- ``json``: a JSON array written as ``[`` / ``{record}`` / ``,{record}`` ... / ``]``.
- ``csv``: a header, then one row per record (``records.csvcodec``: its columns, cell rules
  and the lossless escaping of ids; its names are importable from here too).

A codec is chosen by name from :data:`CODECS`. Parquet is no line format: a Parquet run is one
file written whole (``records.arrow``) with a JSONL journal while it runs (``records.parquet``).
Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from .csvcodec import CsvCodec
from .model import (
    GATES,
    DecisionRecord,
    GateOutcomes,
    Record,
    RecordVersionError,
    record_from_object,
)

__all__ = [
    "CODECS",
    "Codec",
    "JsonCodec",
    "JsonlCodec",
    "codec_for",
    "line_loader",
    "loads_line",
]


class Codec(Protocol):
    """How one format frames records: ``start`` opens a new file, ``encode`` is one complete
    line, ``end`` closes a finished run; ``decode`` reads one line back (None for a line that
    is framing, such as ``[``, or is not a record)."""

    name: str

    def start(self) -> bytes: ...

    def encode(self, record: Record, first: bool = True) -> bytes: ...

    def decode(self, line: bytes) -> Record | None: ...

    def end(self) -> bytes: ...


# --- JSON ------------------------------------------------------------------------------------


# allow_nan=False: a NaN or Infinity is not JSON, and never reaches an output. Built once:
# ``json.dumps`` with these arguments builds an encoder per call, a fifth of a record's encoding
# (issue 32: the CLI's record writing); the same class and arguments, so the same bytes.
_UTF8_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ASCII_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def _json_line(obj: Mapping[str, Any], lead: str = "") -> bytes:
    """``lead``, the object's compact JSON and a newline, as UTF-8: encoded to bytes once."""
    try:
        return (lead + _UTF8_ENCODER.encode(obj) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from JSON input: written escaped, losslessly
        return (lead + _ASCII_ENCODER.encode(obj) + "\n").encode("utf-8")


def _record_line(record: Record, lead: str = "") -> bytes:
    """``lead`` and ``_json_line(record.to_object())`` as one UTF-8 line, byte for byte. A
    record whose ``gates`` came from ``records.gates`` (last in the object, as without
    ``recalibrated``) has their JSON text already: the rest is encoded and that text put in as
    its last member, where the encoder would write it (issue 35, Speed). Text that is not UTF-8
    takes the whole path."""
    obj = record.to_object()
    gates = record.gates if type(record) is DecisionRecord else None
    if type(gates) is GateOutcomes and next(reversed(obj)) == GATES:
        del obj[GATES]
        text = _UTF8_ENCODER.encode(obj)
        try:
            return f'{lead}{text[:-1]},"{GATES}":{gates.json}}}\n'.encode()
        except UnicodeEncodeError:
            obj = record.to_object()
    return _json_line(obj, lead)


def line_loader() -> Callable[[bytes], Any]:
    """The JSON reader of one line, for a loop over many (orjson imported once, bound locally).

    orjson parses the line (a third of ``json.loads``' time over batch records, measured in
    bench/report.py); a line orjson refuses goes to ``json.loads`` over its UTF-8 text, which
    decides what is accepted and words every error (NaN, a lone surrogate escape, leading
    blanks). orjson reads an integer past 64 bits as a float, so an object whose id is a float
    is read again by ``json.loads``: ids stay exact. The reader raises UnicodeDecodeError or
    ValueError."""
    import orjson

    fast, fast_error, slow = orjson.loads, orjson.JSONDecodeError, json.loads

    def load(line: bytes) -> Any:
        try:
            obj = fast(line)
        except fast_error:
            return slow(line.decode("utf-8"))
        if type(obj) is dict and type(obj.get("id")) is float:
            return slow(line.decode("utf-8"))
        return obj

    return load


def loads_line(line: bytes) -> Any:
    """One JSON value from one line (:func:`line_loader`'s reader)."""
    return line_loader()(line)


class JsonlCodec:
    """``jsonl``: one object per line."""

    name = "jsonl"

    def __init__(self) -> None:
        self._load: Callable[[bytes], Any] | None = None

    def start(self) -> bytes:
        return b""

    def encode(self, record: Record, first: bool = True) -> bytes:
        return _record_line(record)

    def decode(self, line: bytes) -> Record | None:
        if self._load is None:
            self._load = line_loader()
        try:
            return record_from_object(self._load(line.strip()))
        except RecordVersionError:
            raise  # a record of a newer shape is no unreadable line: the reader must stop
        except ValueError:  # UnicodeDecodeError too
            return None

    def end(self) -> bytes:
        return b""


class JsonCodec(JsonlCodec):
    """``json``: an array, one record per line, each after the first led by a comma."""

    name = "json"

    def start(self) -> bytes:
        return b"[\n"

    def encode(self, record: Record, first: bool = True) -> bytes:
        lead = "" if first else ","
        return _record_line(record, lead)

    def decode(self, line: bytes) -> Record | None:
        text = line.strip()
        if text in (b"[", b"]"):
            return None
        return super().decode(text.removeprefix(b","))

    def end(self) -> bytes:
        return b"]\n"


#: Every run format's codec, by ``--format`` name; a CSV codec needs its header.
CODECS: dict[str, Callable[[Sequence[str]], Codec]] = {
    "jsonl": lambda columns: JsonlCodec(),
    "json": lambda columns: JsonCodec(),
    "csv": CsvCodec,
}


def codec_for(fmt: str, columns: Sequence[str] = ()) -> Codec:
    """The codec of ``fmt``; ValueError for a format without one."""
    try:
        return CODECS[fmt](columns)
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}") from None
