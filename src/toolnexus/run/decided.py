"""What an earlier Parquet run decided, read by its columns: the ids a re-run over the same
inputs skips (``toolnexus.ray``'s ``previous=``), by ``--resume``'s rules (``resume.py``).

The rules are the run's, and so are their refusals:

- **Decided** is an id with a decision (a row with no error), and an id whose records are all
  errors unless the re-run retries errors (``retry_errors``, as ``--retry-errors``). A decision
  is never given up for a later error of the same id (``resume.note_record``).
- A record of a ``schema_version`` this toolnexus does not read is refused as ``--resume``
  refuses it (``records.model.record_from_object``'s line, naming the record); records answering
  another question set are ``resume.PriorMismatch`` with ``--resume``'s words.
- A Parquet run written by ``batch -o run.parquet`` counts its journal too
  (``.run.parquet.journal``, what a killed run left; read by ``resume.read_prior``); an empty
  file (``batch`` locks its output by creating it) holds nothing.

Vectorised: a Parquet run is read as four columns (``id``, ``schema_version``,
``questions_sha256``, ``error``) and decided with Arrow compute, never a record at a time.
"""

from __future__ import annotations

import os
from typing import Any

from ..core import one_line
from ..records import (
    SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
    journal_path,
    record_from_object,
    require_pyarrow,
)
from .items import parquet_files
from .resume import PriorMismatch, check_question_set, read_prior, written_format

__all__ = ["decided_ids"]

_COLUMNS = ("id", SCHEMA_VERSION_KEY, "questions_sha256", "error")


def _first(mask: Any) -> int | None:
    """The index of the first true value of an Arrow boolean mask (null is false), or None."""
    import pyarrow.compute as pc

    found = pc.indices_nonzero(pc.fill_null(mask, False))
    return int(found[0].as_py()) if len(found) else None


def _read(path: str) -> Any:
    """The run's columns that exist among :data:`_COLUMNS`, rows with no id dropped (no record:
    ``record_from_object``), or None for an empty file."""
    pa = require_pyarrow()
    import pyarrow.compute as pc
    import pyarrow.dataset as pds

    if not os.path.exists(path):
        raise ValueError("no such file or directory; give the Parquet output of an earlier run")
    if os.path.isfile(path):
        if os.path.getsize(path) == 0:
            return None
        written = written_format(path)
        if written != "parquet":
            raise PriorMismatch(
                f"it was written as {written}, not as a Parquet run; give the Parquet output "
                "of an earlier run"
            )
    try:
        # A file through the reader batch's --resume uses (its errors read alike), a directory
        # (Ray Data's write_parquet) as one dataset.
        if os.path.isfile(path):
            import pyarrow.parquet as pq

            source: Any = pq.ParquetFile(path)
            names = source.schema_arrow.names
        else:
            # The files a directory input is read by (a data lake's README is not a run).
            files = parquet_files(path)
            if not files:
                raise ValueError("a directory holding no .parquet file; give the output of a run")
            source = pds.dataset(files, format="parquet")
            names = source.schema.names
        if "id" not in names:
            raise ValueError(f"{path}: not a run (no id column)")
        columns = [c for c in _COLUMNS if c in names]
        table = source.read(columns) if os.path.isfile(path) else source.to_table(columns)
    except pa.ArrowException as e:
        # run.codecs' words for a Parquet output --resume cannot read
        raise ValueError(f"not a readable Parquet run: {one_line(str(e))}") from None
    if "error" not in table.column_names:
        table = table.append_column("error", pa.nulls(table.num_rows))
    return table.filter(pc.is_valid(table.column("id")))


def _check(table: Any, questions_sha256: str) -> None:
    """``--resume``'s refusals, for the first row that earns one."""
    import pyarrow.compute as pc

    if SCHEMA_VERSION_KEY in table.column_names:
        version = table.column(SCHEMA_VERSION_KEY)
        bad = pc.or_(pc.less(version, 0), pc.greater(version, SCHEMA_VERSION))
        row = _first(bad)
        if row is not None:
            # record_from_object raises the one line --resume gives (RecordVersionError).
            record_from_object(
                {"id": table.column("id")[row].as_py(), SCHEMA_VERSION_KEY: version[row].as_py()}
            )
    if "questions_sha256" in table.column_names:
        sha = table.column("questions_sha256")
        row = _first(pc.not_equal(sha, questions_sha256))
        if row is not None:
            check_question_set(sha[row].as_py(), questions_sha256)


def decided_ids(
    previous: str | os.PathLike[str], questions_sha256: str, *, retry_errors: bool = False
) -> Any:
    """The ids (a pyarrow string array, each once) that a re-run of the question set
    ``questions_sha256`` skips over the Parquet run ``previous`` (a file or a directory of
    Parquet files): see the module docstring. Raises ``resume.PriorMismatch``,
    ``resume.UnreadableRecord`` (its journal), ``records.model.RecordVersionError``, or the
    reader's own ``OSError`` / ``ValueError`` for a run that cannot be read."""
    pa = require_pyarrow()
    import pyarrow.compute as pc

    path = os.fspath(previous)
    table = _read(path)
    ok: list[Any] = []
    failed: list[Any] = []
    if table is not None:
        _check(table, questions_sha256)
        ids, errors = table.column("id"), table.column("error")
        ok.append(pc.filter(ids, pc.is_null(errors)).combine_chunks())
        failed.append(pc.filter(ids, pc.is_valid(errors)).combine_chunks())
    journal = journal_path(path)
    if os.path.isfile(path) and os.path.exists(journal):
        prior = read_prior(journal, "jsonl", questions_sha256)
        ok.append(pa.array(sorted(prior.ok), pa.string()))
        failed.append(pa.array(sorted(prior.errors), pa.string()))
    every = [a.cast(pa.string()) for a in ok if len(a)]
    if not retry_errors:
        every += [a.cast(pa.string()) for a in failed if len(a)]
    if not every:
        return pa.array([], pa.string())
    return pc.unique(pa.concat_arrays(every))
