"""What ``toolnexus batch`` shows on stderr while it runs: the live progress bar (on a terminal
that the records do not go to), its total for the ETA, and the inputs' notes, each once."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from .batch_items import kind_of
from .batch_values import BatchSummary
from .errors import one_line

__all__ = ["Progress", "bar_fits", "count_lines", "note_once"]


class Progress:
    """A Rich progress line on stderr (done / failed / cached / rate / ETA); only on a TTY."""

    def __init__(self, total: int | None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._started = time.monotonic()
        self._bar = Progress(
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = self._bar.add_task("batch", total=total, detail="")
        self._bar.start()

    def update(self, s: BatchSummary) -> None:
        elapsed = max(time.monotonic() - self._started, 1e-9)
        detail = f"{s.failed} failed, {s.cached} cached, {s.states / elapsed:.1f}/s"
        self._bar.update(self._task, completed=s.states, detail=detail)

    def stop(self) -> None:
        self._bar.stop()


def note_once() -> Callable[[str], None]:
    """A note sink for the inputs: each note once per run, on stderr."""
    said: set[str] = set()

    def note(message: str) -> None:
        if message not in said:
            said.add(message)
            sys.stderr.write(f"toolnexus: note: {one_line(message)}\n")
            sys.stderr.flush()

    return note


def bar_fits(output: str | None) -> bool:
    """The live bar is shown when stderr is a terminal, unless the records go to that same
    terminal (stdout without ``-o``): a bar redrawn between records glued itself onto them."""
    try:
        if not sys.stderr.isatty():
            return False
        if output is not None or not sys.stdout.isatty():
            return True
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    return (out.st_dev, out.st_ino, out.st_rdev) != (err.st_dev, err.st_ino, err.st_rdev)


def count_lines(inputs: list[str]) -> int | None:
    """A total for the ETA: the lines of the JSONL/CSV files (a fast byte count, no parsing),
    the rows of the Parquet/Arrow ones (their footers); None when an input is stdin, a
    directory of state files or a glob."""
    total = 0
    for arg in inputs:
        kind = kind_of(arg)
        if kind == "arrow":
            from .batch_arrow import parquet_rows

            rows = parquet_rows(arg)
            if rows is None:
                return None
            total += rows
            continue
        if kind not in ("jsonl", "csv"):
            return None
        with open(arg, "rb") as f:
            total += sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
        total -= kind == "csv"
    return total
