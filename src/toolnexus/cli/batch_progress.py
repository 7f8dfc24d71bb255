"""What ``toolnexus batch`` shows on stderr while it runs: the live progress bar (on a terminal
that the records do not go to), its total for the ETA, and the run's notes, each once. It is the
run's ``on_progress`` (``toolnexus.run``), fed a typed value after every record."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..run import RunEnded, RunNote, RunProgress, RunSummary

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

    def __init__(
        self,
        inputs: Sequence[str],
        output: str | None,
        show: bool | None,
        ended: Callable[[RunSummary], object] | None = None,
    ) -> None:
        if show is None:
            show = bar_fits(output)
        self.bar = Progress(count_lines(inputs)) if show else None
        self._ended = ended
        #: whether the run's end was said (``ended`` called)
        self.said_end = False

    def __call__(self, event: RunProgress | RunNote | RunEnded) -> None:
        from ..run import RunEnded, RunNote

        if isinstance(event, RunNote):
            # The run said it on one line already (a note through one_line); a step after the
            # run (--review-out, --emit-cases) says what it wrote as batch always did.
            kind = "" if event.kind == "done" else f"{event.kind}: "
            sys.stderr.write(f"toolnexus: {kind}{event.message}\n")
            sys.stderr.flush()
        elif isinstance(event, RunEnded):
            self.end(event.summary)
        elif self.bar is not None:
            self.bar.update(event)

    def end(self, summary: RunSummary) -> None:
        """The run ended: the bar goes, then ``ended`` says so (the summary line)."""
        self.stop()
        self.said_end = True
        if self._ended is not None:
            self._ended(summary)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


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
    from ..run import reader_for

    total = 0
    for arg in inputs:
        reader = reader_for(arg)
        rows: Any = reader.count(arg) if reader is not None else None
        if rows is None:
            return None
        total += rows
    return total
