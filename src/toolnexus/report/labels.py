"""Human labels for a report: a JSONL, CSV or Parquet file with an id column and one column
per question key (``--labels``, ``--id-field``). Every problem is a located ``ReportInputError``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..records import id_problem
from .inputs import (
    ReportInputError,
    readable_again,
)
from .runs import run_format

__all__ = ["COMMENT_PREFIX", "Labels", "merge_labels", "read_labels"]


@dataclass
class Labels:
    """Human labels, one row per id: ``rows[id] = (line, label of keys[0], label of keys[1],
    ...)``, an empty or missing cell being ``""`` (unlabelled). One lookup per record finds all
    of its labels (a dict per question cost one cache-missing lookup per answer)."""

    path: str
    #: the label columns (question keys), in the file's order, the id column left out
    keys: list[str] = field(default_factory=list)
    rows: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: what the report says about the file (a CSV read with another delimiter)
    notes: list[str] = field(default_factory=list)

    def where(self, item_id: str) -> str:
        row = self.rows.get(item_id)
        return f"{self.path}:{row[0] if row else 0}"

    def column(self, key: str) -> int | None:
        """Where ``key``'s label sits in a row (1 for the first key); None for no column."""
        try:
            return self.keys.index(key) + 1
        except ValueError:
            return None

    def labelled_keys(self) -> list[str]:
        """The keys with at least one label."""
        rows = list(self.rows.values())
        return [k for i, k in enumerate(self.keys, 1) if any(row[i] for row in rows)]

    def labelled_ids(self, keys: Iterable[str] | None = None) -> Iterator[str]:
        """The ids with at least one label (in the columns of ``keys`` only, when given)."""
        if keys is None:
            return (i for i, row in self.rows.items() if any(row[1:]))
        at = [n for n, k in enumerate(self.keys, 1) if k in set(keys)]
        return (i for i, row in self.rows.items() if any(row[n] for n in at))


def _label_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        text = str(value).strip()
        return text or None
    return None


#: A column whose name starts with this is a comment (what a review file shows a person:
#: the answers, the action, the reason), never a label column (issue 35 item 6).
COMMENT_PREFIX = "#"


def read_labels(path: str, id_field: str = "id") -> Labels:
    """A labels file: JSONL objects, a CSV with a header or a Parquet table; ``id_field`` names
    the id column, a column named ``#...`` is a comment, every other column is a question key
    (or a gate's outcome)."""
    with readable_again(path) as readable:
        labels = _read_labels(readable, id_field)
    labels.path = path
    keep = [i for i, k in enumerate(labels.keys) if not k.startswith(COMMENT_PREFIX)]
    if len(keep) < len(labels.keys):
        labels.keys = [labels.keys[i] for i in keep]
        labels.rows = {
            item: (row[0], *(row[i + 1] for i in keep)) for item, row in labels.rows.items()
        }
    return labels


def merge_labels(parts: list[Labels]) -> Labels:
    """Several labels files as one (``report --labels A --labels B``): the columns of all, and
    per id and column the last file's non-empty label (a filled review file refines a run's
    labels). Lines point into the file of each id's last row."""
    if len(parts) == 1:
        return parts[0]
    keys = list(dict.fromkeys(k for p in parts for k in p.keys))
    cells: dict[str, dict[str, str]] = {}
    lines: dict[str, Any] = {}
    for part in parts:
        for item, row in part.rows.items():
            mine = cells.setdefault(item, {})
            for i, key in enumerate(part.keys, 1):
                if row[i]:
                    mine[key] = row[i]
            lines[item] = row[0]
    out = Labels(" + ".join(p.path for p in parts), keys)
    out.rows = {item: (lines[item], *(c.get(k, "") for k in keys)) for item, c in cells.items()}
    for part in parts:
        out.notes += part.notes
    return out


def _read_labels(path: str, id_field: str) -> Labels:
    labels = Labels(path)
    fmt = run_format(path)
    if fmt.label_table is not None:
        notes, rows = fmt.label_table(path)
        labels.notes += notes
        _read_label_table(labels, id_field, rows)
        return labels
    found: dict[str, tuple[int, dict[str, str]]] = {}
    keys: dict[str, None] = {}
    for line, record in fmt.labels(path):
        if not isinstance(record, dict):
            raise ReportInputError(f"{path}:{line}: a label row is an object with {id_field!r}")
        item_id = _label_id(labels, found, record.get(id_field), id_field, line)
        cells: dict[str, str] = {}
        for key, value in record.items():
            if key == id_field:
                continue
            if isinstance(value, list | dict):
                raise ReportInputError(
                    f"{path}:{line}: question {key!r}: a label is one value, got "
                    f"{'a list' if isinstance(value, list) else 'an object'}"
                )
            keys.setdefault(key)
            cells[key] = _label_text(value) or ""
        found[item_id] = (line, cells)
    labels.keys = list(keys)
    labels.rows = {
        item_id: (line, *(cells.get(k, "") for k in labels.keys))
        for item_id, (line, cells) in found.items()
    }
    return labels


def _label_id(
    labels: Labels, seen: Mapping[str, tuple[Any, ...]], value: Any, id_field: str, line: int
) -> str:
    """The id of a label row, refused when missing, not an id as batch reads ids, or already
    labelled."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ReportInputError(f"{labels.path}:{line}: no {id_field!r} (use --id-field to name it)")
    problem = id_problem(value)
    if problem is not None:
        raise ReportInputError(f"{labels.path}:{line}: id field {id_field!r} {problem}")
    item_id = str(value).strip()
    first = seen.get(item_id)
    if first is not None:
        raise ReportInputError(
            f"{labels.path}:{line}: id {item_id!r} is labelled twice (first at line {first[0]})"
        )
    return item_id


def _read_label_table(labels: Labels, id_field: str, rows: Iterator[tuple[int, list[str]]]) -> None:
    """A labels file read as cells (CSV, the common case), kept tight: one tuple per row."""
    path = labels.path
    first = next(rows, None)
    if first is None:
        return
    header = first[1]
    if id_field not in header:
        raise ReportInputError(f"{path}:1: no {id_field!r} column (use --id-field to name it)")
    twice = next((c for i, c in enumerate(header) if c in header[:i]), None)
    if twice is not None:
        raise ReportInputError(
            f"{path}:1: column {twice!r} appears twice; a question has one label column"
        )
    id_at = header.index(id_field)
    labels.keys = header[:id_at] + header[id_at + 1 :]
    table = labels.rows
    strip = str.strip
    for line, row in rows:
        item_id = strip(row[id_at])
        if not item_id or item_id in table:  # _label_id says what is wrong
            _label_id(labels, table, item_id, id_field, line)
        del row[id_at]
        table[item_id] = (line, *map(strip, row))
