"""The run behind ``toolnexus filter``: lines in, the lines that pass out, in input order.

Lines are read by one daemon thread (stdin may block as long as its producer likes, and a run
that stops must not wait for it to close), handed to ``Classifier.evaluate_stream`` as
``(line, state)`` pairs, packed (``--pack``, default auto) and paced by the run's one scheduler
as ``batch`` is; a part-filled pack goes out after :data:`FLUSH_DELAY`
(``BatchOptions.flush``), so a pipe that stays open gets its answers. Results come back as they
finish and leave in input order through ``run.output.ReorderBuffer``, whose window
(concurrency x states per request) bounds the lines held: memory does not grow with the input.

A line passes when every ``--where`` holds (``-v``: when not). It is written byte for byte as
read, newline included. A line whose evaluation fails, or that cannot be read as a state, is
said on stderr (one line, with its line number) and dropped; ``--on-error keep`` writes it.
A blank line carries no state: it never passes (so ``-v`` keeps it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from ..core import (
    EXIT_BACKEND,
    EXIT_CONDITION,
    EXIT_FOR_CODE,
    EXIT_FOR_STOP,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STOPPED,
    EXIT_USAGE,
    RunStopped,
    one_line,
)
from .batch_options import parse_pack
from .errors import (
    CliError,
    failure_of,
)
from .filter_lines import Line, read_lines
from .filter_options import FilterFlags
from .filter_where import GateCondition, Where, parse_gate, parse_where

if TYPE_CHECKING:
    from ..core import ClassifierError, Policy, Question
    from ..evaluate import StateResult
    from ..scheduler import Caps
    from .backend import Backend
    from .options import BackendSettings

__all__ = ["FLUSH_DELAY", "FilterConfig", "run_filter"]

#: Seconds a part-filled pack waits for more lines before it is sent: long enough that a
#: stream's burst fills its packs, short beside one request's latency.
FLUSH_DELAY = 0.05
#: Lines read ahead of the evaluation (the reader thread's queue).
READ_AHEAD = 64


@dataclass(frozen=True)
class FilterConfig(FilterFlags):
    """Everything ``filter`` was asked to do, its options checked (a wrong one raises
    :class:`CliError` before anything is read)."""

    inputs: list[str] = field(default_factory=lambda: ["-"])
    pack_size: int | Literal["auto"] = field(init=False)
    caps: Caps = field(init=False)

    def __post_init__(self) -> None:
        from ..run import caps_from

        fields = [self.state_field] if isinstance(self.state_field, str) else self.state_field
        object.__setattr__(self, "state_field", list(fields) if fields else None)
        object.__setattr__(self, "pack_size", parse_pack(self.pack))
        object.__setattr__(
            self, "caps", caps_from(self.max_cost, self.max_tokens, self.max_requests)
        )
        if (self.gate is None) != (self.action is None):
            raise CliError("--gate and --action go together: --gate NAME --action ACTION")
        if not self.where and self.gate is None:
            raise CliError(
                "filter needs a condition: --where 'KEY OP VALUE' or --gate NAME --action A"
            )
        for path in self.inputs:
            if path != "-" and not Path(path).is_file():
                raise CliError(f"{path}: no such file (filter reads text files, or - for stdin)")


@dataclass
class _Counts:
    passed: int = 0
    codes: Counter[str] = field(default_factory=Counter)
    stopped: RunStopped | None = None

    def exit_code(self) -> int:
        """grep's codes first, the run's failures over them: a stop (4, a spend cap 5), then a
        backend failure (3), then an input error (2); else 0 when a line passed, 1 when none."""
        if self.stopped is not None:
            return EXIT_FOR_STOP.get(self.stopped.kind, EXIT_STOPPED)
        exits = {EXIT_FOR_CODE.get(c, EXIT_USAGE) for c in self.codes}
        for worst in (EXIT_BACKEND, EXIT_USAGE):
            if worst in exits:
                return worst
        return EXIT_OK if self.passed else EXIT_CONDITION


class _Run:
    def __init__(
        self,
        cfg: FilterConfig,
        backend: Backend,
        questions: Mapping[str, Question],
        conditions: list[Where | GateCondition],
        lines: Iterator[Line],
        out: IO[bytes],
        admission: tuple[Any, ...],
        gates: Mapping[str, Policy],
    ) -> None:
        from ..evaluate import PACK_CAP
        from ..run import ReorderBuffer

        self.cfg, self.backend, self.questions = cfg, backend, questions
        self.conditions, self.gates = conditions, gates
        self.lines, self.out, self.admission = lines, out, admission
        per_request = PACK_CAP if cfg.pack_size == "auto" else cfg.pack_size
        self.reorder = ReorderBuffer(cfg.concurrency * per_request)
        self.counts = _Counts()
        self.key_checked = False
        self.read_error: OSError | None = None
        self.slots = threading.Semaphore(READ_AHEAD)
        self.ended = False
        #: the lines handed to the classifier and not yet written (or dropped), by sequence
        #: number, in order, and those of them already answered (an interrupt says how many,
        #: issue 43 item 9)
        self.unwritten: dict[int, Line] = {}
        self.answered: set[int] = set()
        self.attempts = _Attempts()
        #: ``(lines, answered, requests in flight)`` when the run was interrupted
        self.interrupted: tuple[int, int, int] | None = None
        #: the lines over the wire's token limits (``BatchOptions.on_over_limit``)
        self.over_limit = 0

    def _reader(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Line | None]) -> None:
        """The reader thread: each line onto ``queue``, then None, at most :data:`READ_AHEAD`
        ahead of ``_feed`` (``slots``); ends when the run does. An input that fails to read is
        kept for ``_feed`` to raise."""
        try:
            for line in self.lines:
                self.slots.acquire()
                if self.ended:
                    return
                loop.call_soon_threadsafe(queue.put_nowait, line)
        except OSError as e:
            self.read_error = e
        except RuntimeError:  # the loop closed: the run ended before the input did
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(queue.put_nowait, None)

    async def _feed(self) -> AsyncIterator[tuple[tuple[int, Line], Any]]:
        from .backend import check_key

        queue: asyncio.Queue[Line | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._reader, args=(loop, queue), daemon=True).start()
        while (line := await queue.get()) is not None:
            self.slots.release()
            seq = await self.reorder.admit()
            if line.blank or line.error is not None:
                await self._emit(seq, self._outcome(line, None, line.error))
                continue
            if not self.key_checked:
                check_key(self.backend.settings)  # before the first request, as batch
                self.key_checked = True
            self.unwritten[seq] = line
            yield (seq, line), line.state
        if self.read_error is not None:
            e = self.read_error
            raise CliError(f"{e.filename or 'stdin'}: cannot read: {e.strerror or e}")

    async def _emit(self, seq: int, written: bytes | None) -> None:
        if seq in self.unwritten:
            self.answered.add(seq)
        for ready in await self.reorder.done(seq, written):
            self._write(ready)
        released = self.reorder.released
        while self.unwritten and (first := next(iter(self.unwritten))) < released:
            del self.unwritten[first]
            self.answered.discard(first)

    def _over_limit(self, state: Any, phrase: str) -> None:
        """``BatchOptions.on_over_limit``: the library's check (``eval`` and ``batch`` warn
        from it too) found a line whose request passes the wire's token limits; the first is
        named, the rest counted (issue 43 item 9)."""
        self.over_limit += 1
        if self.over_limit > 1:
            return
        where = next((ln.where for ln in self.unwritten.values() if ln.state is state), "a line")
        sys.stderr.write(
            f"toolnexus: warning: {where} will pass the wire's token limits ({phrase}); the "
            "server will refuse it: shorten the line or the instructions (filter --dry-run "
            "shows the largest request)\n"
        )
        sys.stderr.flush()

    def _write(self, written: bytes | None) -> None:
        if written is None:
            return
        self.counts.passed += 1
        if not self.cfg.count:
            self.out.write(written)
            self.out.flush()  # a pipe's reader sees each line as it passes

    def _message(self, error: ClassifierError) -> str:
        """What failed, as batch's error record says it (a replay miss names the folder)."""
        from ..core import StaticMiss

        replay = self.backend.settings.replay
        if isinstance(error, StaticMiss) and replay is not None:
            from ..styles import replay_miss_message

            return replay_miss_message(error, replay)
        return error.detail

    def _line_text(self, line: Line) -> str:
        return line.raw.decode("utf-8", errors="replace").rstrip("\r\n")

    def _outcome(
        self, line: Line, result: StateResult | None, error: tuple[str, str] | None
    ) -> bytes | None:
        """What ``line`` writes (None: nothing), saying a failure on stderr."""
        if result is not None and result.error is not None:
            failure = failure_of(result.error)
            code = failure.code if failure is not None else "error"
            error = (code, f"{line.where}: {one_line(self._message(result.error))}")
        if error is not None:
            code, message = error
            self.counts.codes[code] += 1
            keep = self.cfg.on_error == "keep"
            note = "kept (--on-error keep)" if keep else "dropped; --on-error keep keeps it"
            sys.stderr.write(f"toolnexus: {one_line(message)} [{code}; line {note}]\n")
            sys.stderr.flush()
            if not keep:
                return None
            if self.cfg.with_answers:
                obj = {"line": self._line_text(line), "error": {"code": code, "message": message}}
                return _jsonl(obj)
            return line.raw
        decision = result.decision if result is not None else None
        passed = decision is not None and all(c.holds(decision) for c in self.conditions)
        if passed == self.cfg.invert:
            return None
        if not self.cfg.with_answers:
            return line.raw
        body = None
        if decision is not None:
            from .render import decision_record

            # the record batch writes: with the file's gates, their actions
            body = decision_record(
                decision, self.questions, {}, validated=True, gates=self.gates or None
            )
        return _jsonl({"line": self._line_text(line), "decision": body})

    async def run(self) -> None:
        from ..config import BatchOptions

        options = BatchOptions(
            concurrency=self.cfg.concurrency,
            rate=self.cfg.rate,
            patience=self.cfg.patience,
            pack=self.cfg.pack_size,
            admission=self.admission,
            flush=FLUSH_DELAY,
            surface="filter",
            on_over_limit=self._over_limit,
        )
        classifier = self.backend.classifier
        stream = classifier.evaluate_stream(self._feed(), self.questions, options=options)
        async with classifier:
            try:
                async for (seq, line), result in stream:
                    await self._emit(seq, self._outcome(line, result, None))
            except (asyncio.CancelledError, KeyboardInterrupt):
                self.note_interrupt()  # before the requests in flight are cancelled
                raise
            except RunStopped as stop:
                self.counts.stopped = stop
                for ready in self.reorder.flush():
                    self._write(ready)
            finally:
                self.ended = True
                self.slots.release()  # a reader waiting for room sees the end

    def note_interrupt(self) -> None:
        """Keep what an interrupt leaves unwritten, once: the lines sent, those of them
        answered (held for input order), and the requests still in flight."""
        if self.interrupted is None:
            flying = self.attempts.open + self.attempts.cut
            self.interrupted = (len(self.unwritten), len(self.answered), flying)

    def interrupt_line(self) -> str:
        """The one line an interrupt ends with: what was sent, and paid or maybe paid, but not
        written (issue 43 item 9: "in-flight lines are dropped with only 'interrupted'")."""
        self.note_interrupt()
        assert self.interrupted is not None
        lines, answered, flying = self.interrupted
        if not lines and not flying:
            return "toolnexus: interrupted\n"
        parts = []
        if flying:
            parts.append(
                f"{flying} {_plural(flying, 'request')} still in flight (the server may bill "
                f"{'it' if flying == 1 else 'them'})"
            )
        if answered:
            parts.append(
                f"{answered} {_plural(answered, 'line')} answered (billed) and held for input order"
            )
        return (
            f"toolnexus: interrupted: {lines} {_plural(lines, 'line')} sent and not written"
            + (f": {'; '.join(parts)}" if parts else "")
            + "\n"
        )


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


class _Attempts:
    """An attempt observer (``transport.observe``) that counts the HTTP requests on the wire:
    ``open``, started and not ended; ``cut``, ended with no answer and no failure (a
    cancellation: an interrupt may cancel them before the run hears of it)."""

    def __init__(self) -> None:
        self.open = 0
        self.cut = 0

    def attempt(self, resend_count: int) -> _Attempt:
        self.open += 1
        return _Attempt(self)

    def waited(self, seconds: float, resend_count: int) -> None:
        pass


class _Attempt:
    """One attempt of :class:`_Attempts`."""

    def __init__(self, attempts: _Attempts) -> None:
        self.attempts = attempts
        self.heard = False

    def response(self, status: int, request_id: str | None) -> None:
        self.heard = True

    def failed(self, kind: str) -> None:
        self.heard = True

    def end(self) -> None:
        self.attempts.open -= 1
        if not self.heard:
            self.attempts.cut += 1


def _jsonl(obj: Any) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def _streams(inputs: list[str]) -> list[tuple[str, IO[bytes]]]:
    return [("stdin", sys.stdin.buffer) if p == "-" else (p, open(p, "rb")) for p in inputs]


def run_filter(cfg: FilterConfig, questions_path: Path, settings: BackendSettings) -> int:
    """Run ``filter`` and return its exit code (the stop's line already on stderr)."""
    from ..questionfile import load_question_file
    from .backend import build_backend, price_of, warn_if_over_limits, warn_to_stderr

    (file_model, questions), gates = load_question_file(questions_path)
    conditions: list[Where | GateCondition] = [
        parse_where(text, questions) for text in cfg.where or ()
    ]
    if cfg.gate is not None and cfg.action is not None:
        conditions.append(parse_gate(cfg.gate, cfg.action, gates, questions))
    price = price_of(cfg.price)
    from ..run import require_price

    require_price(cfg.caps, price, "filter")  # issue 42 item 7: --max-cost needs --price
    streams = _streams(cfg.inputs)
    try:
        lines = read_lines(streams, cfg.state_field)
        if cfg.dry_run:
            return _say_estimate(cfg, lines, questions, file_model, settings, price)
        backend = build_backend(settings, file_model=file_model, on_metric=warn_to_stderr)
        warn_if_over_limits(settings, backend.model, questions)  # as batch (issue 34 item 4)
        budget = _budget(cfg, backend, questions, price)
        run = _Run(
            cfg, backend, questions, conditions, lines, sys.stdout.buffer,
            () if budget is None else (budget,), gates,
        )  # fmt: skip
        from ..run import counting_resends
        from ..transport import observing

        try:
            with counting_resends(budget), observing(run.attempts):
                asyncio.run(run.run())
        except KeyboardInterrupt:
            sys.stderr.write(run.interrupt_line())
            return EXIT_INTERRUPTED
    finally:
        for name, stream in streams:
            if name != "stdin":
                stream.close()
    counts = run.counts
    if run.over_limit > 1:
        sys.stderr.write(
            f"toolnexus: {run.over_limit} lines were over the wire's token limits (the first "
            "is named above)\n"
        )
    if counts.stopped is not None:
        sys.stderr.write(f"toolnexus: {one_line(counts.stopped.message)}\n")
    if cfg.count:
        sys.stdout.write(f"{counts.passed}\n")
    return counts.exit_code()


def _say_estimate(
    cfg: FilterConfig,
    lines: Iterator[Line],
    questions: Mapping[str, Any],
    file_model: str | None,
    settings: BackendSettings,
    price: Any,
) -> int:
    """``--dry-run``: batch's estimate over the lines to send; nothing sent, nothing written."""
    from ..run import InputItem, estimate_items
    from .backend import check_estimable, classifier_options

    items = (
        InputItem(line.where, state=line.state, error=line.error)
        for line in lines
        if not line.blank
    )
    check_estimable(settings)
    options = classifier_options(settings, file_model=file_model)
    result = estimate_items(items, questions, options, cfg.pack_size, price=price)
    sys.stdout.write(result.text() + "\n")
    return EXIT_OK


def _budget(cfg: FilterConfig, backend: Backend, questions: Mapping[str, Any], price: Any) -> Any:
    """``--max-cost`` / ``--max-tokens`` / ``--max-requests``: batch's budget, as the scheduler's
    admission member. A stream has no estimate up front (its end is not known), so unlike
    ``batch`` nothing is refused before the first request: the cap stops the run (exit 5)."""
    if not cfg.caps.any:
        return None
    from ..run import unestimated_budget

    prepared = backend.classifier.prepare(questions)
    return unestimated_budget(cfg.caps, price, prepared, "filter")
