"""What ``toolnexus batch`` shows on stderr while it runs: the live progress bar (on a terminal
that the records do not go to), its total for the ETA, and the run's notes, each once. It is the
run's ``on_progress`` (``toolnexus.run``), fed a typed value after every record."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..run import RunNote, RunProgress

__all__ = ["Display", "Progress", "bar_fits", "count_lines"]


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

    def update(self, s: RunProgress) -> None:
        elapsed = max(time.monotonic() - self._started, 1e-9)
        detail = f"{s.failed} failed, {s.cached} cached, {s.states / elapsed:.1f}/s"
        self._bar.update(self._task, completed=s.states, detail=detail)

    def stop(self) -> None:
        self._bar.stop()


class Display:
    """The run's ``on_progress``: the bar (when ``show``) and each note on stderr."""

    def __init__(self, inputs: Sequence[str], output: str | None, show: bool | None) -> None:
        if show is None:
            show = bar_fits(output)
        self.bar = Progress(count_lines(inputs)) if show else None

    def __call__(self, event: RunProgress | RunNote) -> None:
        from ..run import RunNote

        if isinstance(event, RunNote):
            # The run said it on one line already (a note through one_line).
            sys.stderr.write(f"toolnexus: {event.kind}: {event.message}\n")
            sys.stderr.flush()
        elif self.bar is not None:
            self.bar.update(event)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


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


def count_lines(inputs: Sequence[str]) -> int | None:
    """A total for the ETA: what each input's reader can count without parsing it (the lines
    of a JSONL/CSV file, the rows in a Parquet footer); None when one cannot (stdin, a
    directory of state files, a glob)."""
    from ..run.codecs import reader_for

    total = 0
    for arg in inputs:
        reader = reader_for(arg)
        rows: Any = reader.count(arg) if reader is not None else None
        if rows is None:
            return None
        total += rows
    return total
