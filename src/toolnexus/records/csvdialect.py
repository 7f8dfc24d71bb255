"""What a CSV input file is written in, read before its rows: its delimiter and whether it is
UTF-8 (issue 31 item 14: the dialects Excel writes). Pure; ``batch`` reads its CSV states and
``report`` its CSV labels through these."""

from __future__ import annotations

import codecs
import re
from typing import IO

__all__ = [
    "NOT_UTF8_HINT",
    "UTF16_HINT",
    "csv_delimiter",
    "delimiter_name",
    "first_non_utf8",
    "header_note",
    "not_utf8_hint",
]


#: Said with a CSV file that is not UTF-8: what most likely made it and how to mend it.
NOT_UTF8_HINT = (
    "the whole file must be UTF-8 text; a spreadsheet's plain 'CSV' export is often "
    "Windows-1252: save it as 'CSV UTF-8', or convert it (iconv -f cp1252 -t utf-8)"
)


#: Said with a file that starts with UTF-16's byte-order mark: what a spreadsheet's "Unicode
#: Text" export writes (the cp1252 advice would garble it).
UTF16_HINT = (
    "it is UTF-16 text (a spreadsheet's 'Unicode Text' export); the whole file must be UTF-8 "
    "text: save it as 'CSV UTF-8', or convert it (iconv -f utf-16 -t utf-8)"
)


def not_utf8_hint(head: bytes) -> str:
    """What to say of a file that is not UTF-8, from its first bytes."""
    utf16 = head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    return UTF16_HINT if utf16 else NOT_UTF8_HINT


def csv_delimiter(header: str) -> str:
    """The delimiter of a CSV file read from its header line: ``,`` unless, outside quotes, the
    header holds more ``;`` or tabs than commas (Excel in a locale whose decimal mark is a comma
    writes ``;``; "Text (Tab delimited)" a tab), then the more frequent of those two. More, not
    merely some: a semicolon file's column may be named ``Preis, brutto`` (issue 31's attack)."""
    bare = re.sub(r'"[^"]*"', "", header)  # a quoted column name says nothing of the delimiter
    commas, semicolons, tabs = bare.count(","), bare.count(";"), bare.count("\t")
    if max(semicolons, tabs) <= commas:
        return ","
    return ";" if semicolons >= tabs else "\t"


def header_note(header: str, delimiter: str) -> str:
    """Why ``header`` was read with ``delimiter`` (not a comma), said on stderr."""
    name = delimiter_name(delimiter)
    why = f"more {name}s than commas" if "," in header else "no comma"
    return f"the header has {why}; read as {name}-separated"


def delimiter_name(delimiter: str) -> str:
    """How a message names a delimiter."""
    return {",": "comma", ";": "semicolon", "\t": "tab"}.get(delimiter, repr(delimiter))


def first_non_utf8(stream: IO[bytes], block: int = 1 << 20) -> tuple[int, int] | None:
    """``(line, byte)`` of the first byte of ``stream`` that is not UTF-8 (``byte`` counted from
    the start of its line, from 1), or ``None``; read in blocks."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    line, line_start, offset = 1, 0, 0
    while chunk := stream.read(block):
        try:
            decoder.decode(chunk)
        except UnicodeDecodeError as e:
            bad = offset + e.start - len(decoder.getstate()[0])
            before = chunk[: max(bad - offset, 0)]
            line += before.count(b"\n")
            if b"\n" in before:
                line_start = offset + before.rindex(b"\n") + 1
            return line, bad - line_start + 1
        line += chunk.count(b"\n")
        if b"\n" in chunk:
            line_start = offset + chunk.rindex(b"\n") + 1
        offset += len(chunk)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return line, offset - line_start  # cut inside a character at the very end
    return None
