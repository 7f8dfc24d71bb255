"""The Parquet file of a fresh ``batch --format parquet`` run, written by a process of its own.

A client at full speed keeps one CPU busy with requests; turning each finished record into Arrow
column values there cost it about 9% of a 100,000-state run (bench/parquet.py). So the run's one
thread only writes each journal line, as it must for ``kill -9``, and hands the same bytes down a
pipe to this module run as a child (``python -m toolnexus.run.parquet_sink``), which
decodes them with the JSONL codec ``--resume`` reads the journal with, and feeds
:class:`~toolnexus.records.arrow.RunWriter`: the file is the one the run would have written itself.

The child renames its file into place only when told ``END`` and it has read every line; an end
of its input without it (the parent was killed) drops its temporary file, so a killed run leaves
its journal and nothing else, as before. Ctrl-C reaches the whole process group: the child
ignores it and waits for the parent's clean end. Whatever goes wrong with the child (it cannot
start, it dies, its disk fills), the parent's end folds the journal into the file itself
(:meth:`ParquetSink.finish` returns None and ``ParquetOutput.settle`` does the rest).
"""

from __future__ import annotations

import contextlib
import pickle
import signal
import subprocess
import sys
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from ..core import Question

__all__ = ["ParquetSink"]

#: The line that tells the child the run ended cleanly (a journal line is a JSON object).
END = b"END\n"
#: Journal lines handed down at once: one pipe write per this many records.
_BATCH_LINES = 64


class ParquetSink:
    """The parent's end of the pipe: :meth:`send` each journal line, then :meth:`finish` or
    :meth:`abort`."""

    def __init__(self, path: str, questions: Mapping[str, Question]) -> None:
        self._pending: list[bytes] = []
        self._proc: subprocess.Popen[bytes] | None = None
        try:
            header = pickle.dumps((path, dict(questions)))
        except (pickle.PicklingError, TypeError, AttributeError):
            return  # a question set that does not travel: the run's end writes the file
        try:
            # stderr is dropped: the child's failure is never the user's to read, since the
            # parent then writes the file itself.
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "toolnexus.run.parquet_sink"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        except OSError:
            return
        self._put(len(header).to_bytes(8, "big") + header)

    def _put(self, data: bytes) -> None:
        proc = self._proc
        if proc is None:
            return
        stdin: IO[bytes] | None = proc.stdin
        try:
            assert stdin is not None
            stdin.write(data)
            stdin.flush()
        except (OSError, ValueError):
            self._lost()

    def send(self, line: bytes) -> None:
        """One journal line (ending in a newline)."""
        if self._proc is None:
            return
        self._pending.append(line)
        if len(self._pending) >= _BATCH_LINES:
            data, self._pending = b"".join(self._pending), []
            self._put(data)

    def finish(self) -> int | None:
        """Tell the child the run ended cleanly and wait until its file is in place: the
        records it wrote, or None when it did not (then nothing of it is left)."""
        if self._proc is None:
            return None
        self._put(b"".join(self._pending) + END)
        self._pending = []
        proc = self._proc
        if proc is None:
            return None
        self._proc = None
        out, _ = proc.communicate()
        if proc.returncode != 0:
            return None
        try:
            return int(out.decode("ascii").strip())
        except ValueError:
            return None

    def abort(self) -> None:
        """Stop the child: its temporary file is dropped, ``path`` stays as it was."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError, ValueError):
            assert proc.stdin is not None
            proc.stdin.close()  # an end of input without END: the child aborts
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()

    def _lost(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                with contextlib.suppress(OSError, ValueError):
                    if stream is not None:
                        stream.close()


def _child() -> int:
    """The child: a header, then journal lines, then END."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from ..records import RunWriter, codec_for

    source = sys.stdin.buffer
    size = int.from_bytes(source.read(8), "big")
    path, questions = pickle.loads(source.read(size))
    codec = codec_for("jsonl")
    writer = RunWriter(path, questions)
    try:
        for line in source:
            if line == END:
                sys.stdout.write(f"{writer.finish()}\n")
                return 0
            if not line.endswith(b"\n"):
                break
            record = codec.decode(line)
            if record is not None:
                writer.add(record.to_object())
    except BaseException:
        writer.abort()
        raise
    writer.abort()  # no END: the parent did not end cleanly
    return 1


if __name__ == "__main__":
    sys.exit(_child())
