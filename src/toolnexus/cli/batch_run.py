"""The run behind ``toolnexus batch``: one question set over many states, streamed.

States are read lazily (``batch_inputs``), evaluated through ``Classifier.evaluate_stream`` (at
most ``--concurrency`` in flight, per-state results), and each record is written the moment it
completes (``batch_output``). Records go to ``--output`` or stdout; progress, warnings and the
one-line summary go to stderr.

Exit codes, worst first: 3 when any state failed at the backend (``backend_*`` codes and
``invalid_decision``); 2 for usage errors and for states the inputs or the options could not
serve (``malformed_input``, ``duplicate_id``, ``invalid_state``, ``replay_miss``,
``config_error``, ...); 1 when a ``--fail-on`` condition holds for any record; 0 otherwise.
SIGINT exits 130 and SIGTERM 143, after fsyncing what was written.

Error record codes and their exit codes come from ``cli/errors.py``'s ``failure_of`` (one table
for every command), listed in the README.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..defaults import DEFAULT_BATCH_CONCURRENCY
from .batch_ids import SeenIds, question_set_sha256
from .batch_inputs import InputItem, InputSpec, iter_inputs, kind_of
from .batch_output import (
    QUESTIONS_SHA256,
    OutputWriter,
    PriorOutput,
    ReorderBuffer,
    error_record,
)
from .errors import (
    CONDITION_FOR_CODE,
    DUPLICATE_ID,
    EXIT_BACKEND,
    EXIT_CONDITION,
    EXIT_FOR_CODE,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    failure_of,
    one_line,
)

if TYPE_CHECKING:
    from ..batch import StateResult
    from ..errors import ClassifierError
    from ..questions import Question
    from .options import Backend, BackendSettings

#: ``--ordered`` holds at most this many finished records per unit of concurrency.
REORDER_WINDOW_PER_SLOT = 8


def shard_of(key: str, count: int) -> int:
    """The 1-based shard of an id: sha256 of its UTF-8 text, so every machine and every Python
    agrees (``hash()`` is salted per process)."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``I/N`` with 1 <= I <= N."""
    if text is None:
        return None
    i, sep, n = text.partition("/")
    try:
        index, count = int(i), int(n)
    except ValueError:
        index = count = 0
    if not sep or count < 1 or not 1 <= index <= count:
        raise CliError(f"--shard takes I/N with 1 <= I <= N (like 2/3), got {text!r}")
    return index, count


def error_code(error: ClassifierError) -> str:
    """The stable code of a per-state failure: ``failure_of``'s, the same table that gives
    ``eval`` its exit code for the same exception."""
    failure = failure_of(error)
    assert failure is not None  # every ClassifierError has a row
    return failure.code


@dataclass
class BatchConfig:
    """Everything ``batch`` was asked to do, after parsing."""

    inputs: list[str]
    spec: InputSpec = field(default_factory=InputSpec)
    concurrency: int = DEFAULT_BATCH_CONCURRENCY
    rate: float | None = None
    output: str | None = None
    fmt: str = "jsonl"
    ordered: bool = False
    resume: bool = False
    retry_errors: bool = False
    shard: tuple[int, int] | None = None
    fail_on: tuple[str, ...] = ()
    thresholds: Mapping[str, float] = field(default_factory=dict)


@dataclass
class BatchSummary:
    """Counts for the one-line summary and the exit code."""

    states: int = 0
    ok: int = 0
    cached: int = 0
    skipped: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    codes: Counter[str] = field(default_factory=Counter)
    conditions: set[str] = field(default_factory=set)
    wall: float = 0.0
    interrupted: str | None = None

    @property
    def failed(self) -> int:
        return sum(self.codes.values())

    def exit_code(self) -> int:
        """The worst outcome: a backend failure (3) over an input failure (2) over a
        ``--fail-on`` condition (1); each record code's exit code is ``failure_of``'s."""
        exits = {EXIT_FOR_CODE.get(c, EXIT_USAGE) for c in self.codes}
        for worst in (EXIT_BACKEND, EXIT_USAGE):
            if worst in exits:
                return worst
        return EXIT_CONDITION if self.conditions else EXIT_OK

    def line(self) -> str:
        codes = ", ".join(f"{c} {n}" for c, n in sorted(self.codes.items()))
        cost = "not reported" if self.cost is None else f"{self.cost:.6g}"
        parts = [
            f"{self.states} states",
            f"{self.ok} ok",
            f"{self.failed} failed" + (f" ({codes})" if codes else ""),
            f"{self.cached} cached",
        ]
        if self.skipped:
            parts.append(f"{self.skipped} skipped (already in the output)")
        parts += [
            f"tokens {self.input_tokens} in / {self.output_tokens} out",
            f"cost {cost}",
            f"{self.wall:.2f} s",
        ]
        head = f"batch interrupted by {self.interrupted}: " if self.interrupted else "batch: "
        return head + ", ".join(parts)


def _where(cfg: BatchConfig, source: int, line: int, key: str) -> str:
    """``INPUT:line`` for a JSONL/CSV item, the path (its id) for a state file."""
    return f"{cfg.inputs[source]}:{line}" if line else key


def _select(
    items: Iterator[InputItem],
    cfg: BatchConfig,
    prior: PriorOutput | None,
    summary: BatchSummary,
    retried: set[str],
) -> Iterator[InputItem]:
    """The items this run evaluates: its shard, minus what ``--resume`` already has; with
    ``--retry-errors``, the ids whose last record is an error (noted in ``retried``).

    A second item with an id already seen (``7`` and ``"7"`` are one id) becomes a
    ``duplicate_id`` error item naming where the first was read; it is never evaluated."""
    seen = SeenIds()
    for item in items:
        key = item.key
        if cfg.shard is not None and shard_of(key, cfg.shard[1]) != cfg.shard[0]:
            continue
        first = seen.add(key, (item.source << 40) | item.line)
        if first is not None:
            if prior is not None and key in prior:
                summary.skipped += 1  # reported by the run that first met it
                continue
            here, there = (
                _where(cfg, item.source, item.line, key),
                _where(cfg, first >> 40, first & ((1 << 40) - 1), key),
            )
            yield InputItem(
                item.id,
                error=(
                    DUPLICATE_ID.code,
                    f"{here}: id {item.id!r} was already read at {there}; give each state its "
                    'own id (7 and "7" are one id)',
                ),
            )
            continue
        if prior is not None:
            if key in prior.errors and cfg.retry_errors:
                retried.add(key)
            elif key in prior or not cfg.resume:
                summary.skipped += 1
                continue
        yield item


class _Run:
    """One batch run: feeds the stream, turns results into records, writes them."""

    def __init__(
        self,
        cfg: BatchConfig,
        backend: Backend,
        questions: Mapping[str, Question],
        writer: OutputWriter,
        items: Iterator[InputItem],
        summary: BatchSummary,
        progress: Any = None,
        *,
        threaded_input: bool = False,
    ) -> None:
        self.cfg = cfg
        self.backend = backend
        self.questions = questions
        self.writer = writer
        self.items = items
        self.summary = summary
        self.progress = progress
        self.threaded_input = threaded_input
        self.reorder = (
            ReorderBuffer(REORDER_WINDOW_PER_SLOT * cfg.concurrency) if cfg.ordered else None
        )
        self.keep_state = backend.settings.record is not None
        self.sha = question_set_sha256(questions)

    async def _emit(self, seq: int, record: dict[str, Any]) -> None:
        if self.reorder is None:
            self.writer.write(record)
            return
        for ready in await self.reorder.done(seq, record):
            self.writer.write(ready)

    def _count_error(self, code: str) -> None:
        self.summary.states += 1
        self.summary.codes[code] += 1
        condition = CONDITION_FOR_CODE.get(code)
        if condition is not None and condition in self.cfg.fail_on:
            self.summary.conditions.add(condition)
        if self.progress is not None:
            self.progress.update(self.summary)

    async def _next_item(self) -> InputItem | None:
        if self.threaded_input:
            # stdin may block for as long as its producer likes; the event loop must not.
            return await asyncio.to_thread(next, self.items, None)
        return next(self.items, None)

    async def _feed(self) -> AsyncIterator[tuple[tuple[int, str | int, Any], Any]]:
        interval = 60.0 / self.cfg.rate if self.cfg.rate else 0.0
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while (item := await self._next_item()) is not None:
            seq = await self.reorder.admit() if self.reorder is not None else -1
            if item.error is not None:
                code, message = item.error
                self._count_error(code)
                await self._emit(seq, error_record(item.id, code, message, self.sha))
                continue
            if interval:
                now = loop.time()
                if next_at > now:
                    await asyncio.sleep(next_at - now)
                next_at = max(now, next_at) + interval
            yield (seq, item.id, item.state if self.keep_state else None), item.state

    def _record(self, item_id: str | int, result: StateResult, state: Any) -> dict[str, Any]:
        from ..errors import StaticMiss
        from .render import decision_record

        s = self.summary
        s.states += 1
        if result.error is not None:
            code = error_code(result.error)
            message = result.error.message
            if isinstance(result.error, StaticMiss) and self.backend.settings.replay is not None:
                from ..recordings import replay_miss_message

                message = replay_miss_message(result.error, self.backend.settings.replay)
            s.states -= 1  # _count_error counts it
            self._count_error(code)
            return error_record(item_id, code, one_line(message), self.sha)
        decision = result.decision
        assert decision is not None
        if self.keep_state:
            self.backend.record(state, self.questions, decision)
        # evaluate_stream validated this decision fail-closed: an invalid one is an error result.
        record = {
            "id": item_id,
            QUESTIONS_SHA256: self.sha,
            **decision_record(decision, self.questions, self.cfg.thresholds, validated=True),
        }
        s.ok += 1
        s.cached += decision.cached
        s.input_tokens += decision.usage.input_tokens
        s.output_tokens += decision.usage.output_tokens
        if decision.usage.cost is not None and math.isfinite(decision.usage.cost):
            s.cost = (s.cost or 0.0) + decision.usage.cost
        s.conditions.update(f for f in self.cfg.fail_on if f in record["flags"])
        if self.progress is not None:
            self.progress.update(s)
        return record

    async def run(self) -> None:
        stream = self.backend.classifier.evaluate_stream(
            self._feed(), self.questions, concurrency=self.cfg.concurrency
        )
        async with self.backend.classifier:
            async for (seq, item_id, state), result in stream:
                await self._emit(seq, self._record(item_id, result, state))


class _Progress:
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


def _count_lines(inputs: list[str]) -> int | None:
    """A total for the ETA: the lines of the JSONL/CSV files (a fast byte count, no parsing);
    None when an input is stdin, a directory or a glob."""
    total = 0
    for arg in inputs:
        kind = kind_of(arg)
        if kind not in ("jsonl", "csv"):
            return None
        with open(arg, "rb") as f:
            total += sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
        total -= kind == "csv"
    return total


def _sample_record(questions: Mapping[str, Question], thresholds: Mapping[str, float]) -> Any:
    """A decision record for this question set, to learn the CSV columns from the renderer
    itself (so the header can never drift from ``decision_record``)."""
    from ..decision import parse_decision
    from ..questions import ChoiceQuestion, ScoreQuestion
    from .render import decision_record

    answers: dict[str, Any] = {}
    for key, q in questions.items():
        if q.type == "noul":
            answers[key] = {"type": "noul", "noul": 0.5}
        elif isinstance(q, ChoiceQuestion):
            opts = list(q.criteria)
            probs = {o: 1.0 / len(opts) for o in opts}
            answers[key] = {
                "type": "choice",
                "choice": opts[0],
                "probabilities": probs,
                "confidence": 0.5,
            }
        elif isinstance(q, ScoreQuestion):
            levels = list(q.criteria)
            answers[key] = {
                "type": "score",
                "score": 0.0,
                "legend": {str(i): lv for i, lv in enumerate(levels)},
                "probabilities": {str(i): float(i == 0) for i in range(len(levels))},
                "confidence": 0.5,
            }
        else:
            answers[key] = {"type": q.type}
    body = {"model": "m", "answers": answers, "usage": {"input_tokens": 0, "output_tokens": 0}}
    return decision_record(parse_decision(body, questions), questions, thresholds)


def _lock_output(path: str) -> int:
    """Hold an advisory lock on ``--output`` for the whole run (released when the returned fd
    is closed), so a second process aimed at the same file is refused instead of interleaving
    its records with ours (two shards on one file once lost half the records and exited 0)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError as e:
        raise CliError(f"--output {path}: {e.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise CliError(
            f"--output {path}: another process (a toolnexus batch?) holds its lock and is "
            "writing it; wait for that run to end, or write to another file"
        ) from None
    return fd


def _open_output(
    cfg: BatchConfig, columns: list[str], questions_sha256: str
) -> tuple[OutputWriter, PriorOutput | None]:
    from .batch_output import PriorMismatch, read_prior

    prior = None
    if cfg.output is not None and (cfg.resume or cfg.retry_errors):
        try:
            prior = read_prior(cfg.output, cfg.fmt, questions_sha256)
        except PriorMismatch as e:
            raise CliError(f"--output {cfg.output}: cannot resume: {e}") from None
        except (OSError, ValueError) as e:
            raise CliError(f"--output {cfg.output}: cannot resume from it: {e}") from None
        if cfg.fmt == "csv" and prior.header is not None and prior.header != columns:
            raise CliError(
                f"--output {cfg.output}: its CSV columns differ from this question set's; "
                "resume with the same question file, or write to a new file"
            )
    try:
        return OutputWriter(cfg.output, cfg.fmt, columns, prior), prior
    except OSError as e:
        raise CliError(f"--output {cfg.output}: {e.strerror}") from None


def _inside(path: str, directory: str) -> bool:
    real, root = os.path.realpath(path), os.path.realpath(directory)
    return os.path.commonpath([real, root]) == root


def _check_output(cfg: BatchConfig, questions_path: Path) -> None:
    """``-o`` onto the question file, onto an input, or into a directory/glob input is refused
    before anything is written (the question file was once overwritten, exit 0)."""
    import fnmatch
    import glob

    output = cfg.output
    if output is None:
        return
    if os.path.isdir(output):
        raise CliError(f"--output {output} is a directory; name a file")
    exists = os.path.exists(output)
    if exists and os.path.exists(questions_path) and os.path.samefile(questions_path, output):
        raise CliError(f"--output {output} is the question file; it would be overwritten")
    for arg in cfg.inputs:
        kind = kind_of(arg)
        if kind in ("jsonl", "csv") and exists and os.path.samefile(arg, output):
            raise CliError(f"--output {output} is also an input; it would be overwritten")
        if kind == "dir" and _inside(output, arg):
            raise CliError(
                f"--output {output} is inside the input directory {arg}; its records would be "
                "read back as states: write it elsewhere"
            )
        if kind == "glob" and (
            fnmatch.fnmatch(os.path.abspath(output), os.path.abspath(arg))
            or any(os.path.samefile(p, output) for p in glob.glob(arg) if exists)
        ):
            raise CliError(
                f"--output {output} matches the input pattern {arg}; its records would be read "
                "back as states: write it elsewhere"
            )


def _check_config(cfg: BatchConfig, questions_path: Path) -> None:
    from ..batch import MAX_CONCURRENCY, MIN_CONCURRENCY

    if not MIN_CONCURRENCY <= cfg.concurrency <= MAX_CONCURRENCY:
        raise CliError(
            f"--concurrency takes {MIN_CONCURRENCY}..{MAX_CONCURRENCY} requests in flight, "
            f"got {cfg.concurrency}"
        )
    if cfg.rate is not None and not cfg.rate > 0:
        raise CliError(f"--rate must be a positive number of requests per minute, got {cfg.rate}")
    if (cfg.resume or cfg.retry_errors) and cfg.output is None:
        raise CliError("--resume and --retry-errors need --output FILE (they read it back)")
    if cfg.inputs.count("-") > 1:
        raise CliError("stdin (-) can be given only once")
    if "-" in cfg.inputs and sys.stdin is None:  # fd 0 closed
        raise CliError("-: stdin is closed; pipe the JSONL states in, or name an input file")
    for arg in cfg.inputs:
        if kind_of(arg) == "missing":
            raise CliError(f"{arg}: no such input file or directory")
    _check_output(cfg, questions_path)


def run_batch(
    cfg: BatchConfig,
    questions_path: Path,
    settings: BackendSettings,
    *,
    cache: Any = None,
    show_progress: bool | None = None,
) -> BatchSummary:
    """Run the batch and return its summary (the caller prints it and exits with its code)."""
    from .batch_output import csv_columns
    from .options import build_backend, warn_to_stderr
    from .questionfile import load_question_set

    _check_config(cfg, questions_path)
    file_model, questions = load_question_set(questions_path)
    backend = build_backend(settings, file_model=file_model, on_metric=warn_to_stderr, cache=cache)
    columns = csv_columns(_sample_record(questions, cfg.thresholds)) if cfg.fmt == "csv" else []
    sha = question_set_sha256(questions)
    if cfg.fmt == "csv":  # the header learns the questions_sha256 column from the sample too
        columns = csv_columns({QUESTIONS_SHA256: sha, **_sample_record(questions, cfg.thresholds)})
    lock = _lock_output(cfg.output) if cfg.output is not None else None
    try:
        return _run_locked(cfg, backend, questions, columns, show_progress)
    finally:
        if lock is not None:
            os.close(lock)


def _run_locked(
    cfg: BatchConfig,
    backend: Backend,
    questions: Mapping[str, Question],
    columns: list[str],
    show_progress: bool | None,
) -> BatchSummary:
    """The run once ``--output`` (if any) is locked."""
    from .batch_output import compact

    writer, prior = _open_output(cfg, columns, question_set_sha256(questions))
    summary = BatchSummary()
    retried: set[str] = set()
    items = _select(iter_inputs(cfg.inputs, cfg.spec), cfg, prior, summary, retried)
    if show_progress is None:
        show_progress = sys.stderr.isatty()
    progress = _Progress(_count_lines(cfg.inputs)) if show_progress else None
    run = _Run(
        cfg, backend, questions, writer, items, summary, progress, threaded_input="-" in cfg.inputs
    )
    started = time.perf_counter()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        for sig in (signal.SIGINT, signal.SIGTERM):

            def stop(name: str = sig.name) -> None:
                summary.interrupted = name
                task.cancel()

            loop.add_signal_handler(sig, stop)
        try:
            await run.run()
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        if summary.interrupted is None:
            raise
    finally:
        summary.wall = time.perf_counter() - started
        if progress is not None:
            progress.stop()
        writer.close(finished=summary.interrupted is None)
    superseded = retried | (prior.repeated if prior is not None else set())
    if cfg.output is not None and summary.interrupted is None and superseded:
        compact(cfg.output, cfg.fmt, superseded, columns)
    return summary
