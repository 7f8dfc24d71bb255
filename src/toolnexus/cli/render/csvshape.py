"""The ONE CSV shape, shared by ``eval --format csv`` and ``batch --format csv``.

One row per state. The columns are ``id``, ``error.code``, ``error.message``, then the decision
record's fields flattened to dotted names in record order: ``model``, ``calibrated``,
``cached``, ``usage.*``, ``thresholds.*``, ``answers.<key>.<field>`` for every answer, ``flags``
and ``invalid``. Cells: ``true``/``false`` for booleans, empty for null, flags as their words
separated by spaces (``near-uniform uncalibrated``), any other list or object (a probability
map, a legend) as compact JSON; a newline inside a cell is written ``\\n`` so every row is one
physical line. The ``id`` cell alone is escaped losslessly (``cli.batch_ids.escape_id``): ``\\``,
``\n`` and ``\r`` for a backslash, LF and CR, so that ``--resume`` reads every id back exactly.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..batch_ids import escape_id

__all__ = [
    "ERROR_CODE_COLUMN",
    "ERROR_MESSAGE_COLUMN",
    "FLATTEN_DEPTH",
    "csv_header",
    "csv_line",
    "flatten",
]

ERROR_CODE_COLUMN = "error.code"
ERROR_MESSAGE_COLUMN = "error.message"

#: How deep ``flatten`` opens objects: ``answers.<key>.<field>`` is a column, but a
#: probability map or a legend stays one JSON cell (a 255-option choice is not 255 columns).
FLATTEN_DEPTH = 3


def flatten(record: Mapping[str, Any], prefix: str = "", depth: int = 1) -> dict[str, Any]:
    """Nested objects become dotted keys down to ``FLATTEN_DEPTH`` segments; deeper objects
    and arrays stay whole."""
    out: dict[str, Any] = {}
    for k, v in record.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping) and depth < FLATTEN_DEPTH:
            out.update(flatten(v, name + ".", depth + 1))
        else:
            out[name] = v
    return out


def csv_header(sample_record: Mapping[str, Any]) -> list[str]:
    """The header: ``id``, the error columns, then every column of ``sample_record`` (a
    decision record for this question set) in its own order."""
    cols = ["id", ERROR_CODE_COLUMN, ERROR_MESSAGE_COLUMN]
    cols += [c for c in flatten(sample_record) if c not in cols]
    return cols


def _is_flags(column: str) -> bool:
    return column == "flags" or column.endswith(".flags")


def _cell(column: str, value: Any) -> str:
    if column == "id":
        # Ids key --resume: written losslessly (a newline in an id once came back as the two
        # characters \n and was re-sent on every resume).
        return escape_id(str(value))
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_flags(column) and isinstance(value, list | tuple):
        return " ".join(str(v) for v in value)
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = str(value)
    return text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")


def _row(cells: Sequence[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(cells)
    return buf.getvalue()


def csv_line(columns: Sequence[str], record: Mapping[str, Any] | Sequence[str]) -> str:
    """One CSV line: the header itself when ``record`` is the column list, else ``record``
    (``{"id", ...}``: a decision record or an error record) flattened under ``columns``."""
    if not isinstance(record, Mapping):
        return _row(list(record))
    flat = flatten(record)
    return _row([_cell(c, flat.get(c)) for c in columns])
