"""The run behind ``toolnexus batch``: one question set over many states, streamed.

States are read lazily (``batch_inputs``), evaluated through ``Classifier.evaluate_stream`` (at
most ``--concurrency`` in flight, per-state results), and each record is written the moment it
completes (``batch_output``). Records go to ``--output`` or stdout; progress, warnings and the
one-line summary go to stderr.

Every request goes through the run's one scheduler (``batch.scheduler_for``: slow start, AIMD on
429s, Retry-After for the whole run, ``--rate`` as a hard cap, fail fast), with the extra
admission members ``run_batch(admission=...)`` is given (a spend budget) chained after it, and
``batch_pace.SentCounter``, which counts what the summary reports. A run that stops scheduling
(``RunStopped``) lets what is in flight finish, writes every record it has, prints the stop's
one line and exits 4 (``EXIT_FOR_STOP``); the states never sent have no record, so ``--resume``
sends them. A ``--state-field`` that none of the first ``batch_pace.STATE_FIELD_PROBE`` records
has is the same kind of stop.

Exit codes, worst first: 4 when the run stopped scheduling; 3 when any state failed at the
backend (``backend_*`` codes and ``invalid_decision``); 2 for usage errors and for states the
inputs or the options could not serve (``malformed_input``, ``duplicate_id``,
``invalid_state``, ``replay_miss``, ``config_error``, ...); 1 when a ``--fail-on`` condition
holds for any record; 0 otherwise.
SIGINT exits 130 and SIGTERM 143, after fsyncing what was written.

Error record codes and their exit codes come from ``cli/errors.py``'s ``failure_of`` (one table
for every command), listed in the README.
"""

from __future__ import annotations

import asyncio
import math
import os
import signal
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import RunStopped
from ..records import DecisionRecord, ErrorRecord, Record
from ..records.gates import GateSet
from .batch_ids import question_set_sha256
from .batch_inputs import iter_inputs
from .batch_items import InputItem
from .batch_output import OutputWriter, ReorderBuffer
from .batch_pace import SentCounter, StateFieldProbe
from .batch_parquet import ParquetOutput
from .batch_progress import Progress, bar_fits, count_lines, note_once
from .batch_safety import check_config, check_existing, check_key, lock_output, open_output
from .batch_select import select
from .batch_values import BatchConfig, BatchSummary
from .errors import CONDITION_FOR_CODE, failure_of, one_line

if TYPE_CHECKING:
    from ..batch import StateResult
    from ..errors import ClassifierError
    from ..policy import Policy
    from ..questions import Question
    from ..records.decision import Recalibrator
    from ..scheduler import Admission
    from .backend import Backend
    from .batch_dry import OverLimitWatch
    from .options import BackendSettings

__all__ = ["BatchConfig", "BatchSummary", "error_code", "run_batch"]

#: ``--ordered`` holds at most this many finished records per unit of concurrency.
REORDER_WINDOW_PER_SLOT = 8


def error_code(error: ClassifierError) -> str:
    """The stable code of a per-state failure: ``failure_of``'s, the same table that gives
    ``eval`` its exit code for the same exception."""
    failure = failure_of(error)
    assert failure is not None  # every ClassifierError has a row
    return failure.code


class _Run:
    """One batch run: feeds the stream, turns results into records, writes them."""

    def __init__(
        self,
        cfg: BatchConfig,
        backend: Backend,
        questions: Mapping[str, Question],
        writer: OutputWriter | ParquetOutput,
        items: Iterator[InputItem],
        summary: BatchSummary,
        progress: Any = None,
        *,
        threaded_input: bool = False,
        admission: Sequence[Admission] = (),
        recalibrator: Recalibrator | None = None,
        gates: Mapping[str, Policy] | None = None,
        watch: OverLimitWatch | None = None,
    ) -> None:
        self.cfg = cfg
        self.watch = watch
        self.recalibrator = recalibrator
        # compiled once for the run: a record walks them without a lookup (issue 35, Speed)
        self.gates = GateSet(gates) if gates else gates
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
        self.admission = (*admission, SentCounter(summary))
        self.probe = StateFieldProbe(cfg.state_field)
        self.key_checked = False

    async def _emit(self, seq: int, record: Record) -> None:
        if self.reorder is None:
            self._write(record)
            return
        for ready in await self.reorder.done(seq, record):
            self._write(ready)

    def _write(self, record: Record) -> None:
        """Write ``record`` and note the ``--fail-on`` conditions it meets, in the order the
        records are written (with ``--ordered``, input order: the first ids named are those)."""
        self.writer.write(record)
        if isinstance(record, ErrorRecord):
            met = [CONDITION_FOR_CODE.get(record.code)]
        else:
            met = [c for c in self.cfg.conditions if c in record.flags]
        for condition in met:
            if condition is not None and condition in self.cfg.conditions:
                self.summary.met(condition, record.id)

    def _count_error(self, code: str, item_id: str | int) -> None:
        self.summary.states += 1
        self.summary.codes[code] += 1
        if self.progress is not None:
            self.progress.update(self.summary)

    async def _next_item(self) -> InputItem | None:
        if self.threaded_input:
            # stdin may block for as long as its producer likes; the event loop must not.
            return await asyncio.to_thread(next, self.items, None)
        return next(self.items, None)

    async def _feed(self) -> AsyncIterator[tuple[tuple[int, str | int, Any, int], Any]]:
        while (item := await self._next_item()) is not None:
            self.probe.see(item)
            seq = await self.reorder.admit() if self.reorder is not None else -1
            if item.error is not None:
                code, message = item.error
                self._count_error(code, item.id)
                await self._emit(seq, ErrorRecord(item.id, code, message, self.sha))
                continue
            if not self.key_checked:
                # Before the first request, not before the inputs' own errors are written.
                check_key(self.backend.settings)
                self.key_checked = True
            flying = self.watch.sent(item) if self.watch is not None else 0
            yield (seq, item.id, item.state if self.keep_state else None, flying), item.state
        if (unseen := self.probe.unseen()) is not None:
            note_once()(unseen)

    def _record(self, item_id: str | int, result: StateResult, state: Any) -> Record:
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
            self._count_error(code, item_id)
            return ErrorRecord(item_id, code, one_line(message), self.sha)
        decision = result.decision
        assert decision is not None
        if self.keep_state:
            self.backend.record(state, self.questions, decision)
        # evaluate_stream validated this decision fail-closed: an invalid one is an error result.
        record = DecisionRecord.from_body(
            item_id,
            self.sha,
            decision_record(
                decision,
                self.questions,
                self.cfg.cut_points,
                validated=True,
                recalibrator=self.recalibrator,
                question_thresholds=self.cfg.question_cut_points,
                gates=self.gates,
            ),
        )
        s.ok += 1
        if decision.cached:
            # A cached decision's usage was spent by the run that first asked: counted apart.
            s.cached += 1
            s.cached_input_tokens += decision.usage.input_tokens
            s.cached_output_tokens += decision.usage.output_tokens
        else:
            s.input_tokens += decision.usage.input_tokens
            s.output_tokens += decision.usage.output_tokens
            if decision.usage.cost is not None and math.isfinite(decision.usage.cost):
                s.add_cost(decision.usage.cost)
        if self.progress is not None:
            self.progress.update(s)
        return record

    async def run(self) -> None:
        from ..config import BatchOptions

        options = BatchOptions(
            concurrency=self.cfg.concurrency,
            rate=self.cfg.rate,
            patience=self.cfg.patience,
            # --retry-errors asks each failed state alone (issue 32 item 3): packed again, a
            # state that failed its pack would cost a bisection per pack, and at pack 1 its
            # error is its own, as the record it replaces claims.
            pack=1 if self.cfg.retry_errors else self.cfg.pack_size,
            admission=self.admission,
            on_over_limit=self.watch,
        )
        stream = self.backend.classifier.evaluate_stream(
            self._feed(), self.questions, options=options
        )
        async with self.backend.classifier:
            try:
                async for (seq, item_id, state, flying), result in stream:
                    if self.watch is not None:
                        self.watch.done(flying)
                    await self._emit(seq, self._record(item_id, result, state))
            except RunStopped as stop:
                self.summary.stopped, self.summary.stop_kind = stop.message, stop.kind
                if self.reorder is not None:
                    for record in self.reorder.flush():
                        self._write(record)


def run_batch(
    cfg: BatchConfig,
    questions_path: Path,
    settings: BackendSettings,
    *,
    cache: Any = None,
    show_progress: bool | None = None,
    admission: Sequence[Admission] = (),
) -> BatchSummary:
    """Run the batch and return its summary (the caller prints it and exits with its code).

    ``admission``: extra admission members for the run's scheduler (``--max-cost``'s budget),
    chained after its limiter and fail fast; a ``RunStopped`` they raise stops the run as fail
    fast does (``summary.stop_kind`` is its kind)."""
    from ..records.decision import sample_record
    from .backend import build_backend, warn_to_stderr
    from .batch_dry import warn_if_over_limits
    from .batch_output import csv_columns
    from .gatefloors import with_gate_floors
    from .questionfile import load_question_file

    check_config(cfg, questions_path)
    (file_model, questions), gates = load_question_file(questions_path)
    # ``--thresholds @FILE``'s gates: floors (report --write-thresholds --gates), issue 35 item 4
    gates = with_gate_floors(gates, cfg.thresholds, questions_path)
    backend = build_backend(settings, file_model=file_model, on_metric=warn_to_stderr, cache=cache)
    warned = warn_if_over_limits(settings, backend.model, questions)  # issue 34 item 4
    sha = question_set_sha256(questions)
    recalibrator = None
    if cfg.calibration is not None:
        from ..records.decision import Recalibrator

        # An unpacked run asks every state alone: a packed map is refused before anything is
        # sent (a packed run's sizes vary by request, so its maps are checked per decision).
        pack = 1 if cfg.pack_size == 1 else None
        recalibrator = Recalibrator.load(cfg.calibration, sha, settings.style, pack)
    columns: list[str] = []
    if cfg.fmt == "csv":  # the header learns its columns from a record of this question set
        sample = DecisionRecord.from_body(
            "", sha, sample_record(questions, cfg.cut_points, recalibrator, gates)
        )
        columns = csv_columns(sample.to_object())
    created = cfg.output is not None and not os.path.lexists(cfg.output)
    lock = lock_output(cfg.output) if cfg.output is not None else None
    try:
        check_existing(cfg)
        return _run_locked(
            cfg, backend, questions, columns, show_progress, admission, recalibrator, gates,
            warned=warned,
        )  # fmt: skip
    except BaseException:
        if created and cfg.output is not None:
            # A run refused before its first record (an unset key, a calibration refused at
            # the first decision) leaves no empty -o file behind (issue 31 item 18).
            _remove_if_empty(cfg.output, cfg.fmt)
        raise
    finally:
        if lock is not None:
            os.close(lock)


def _remove_if_empty(path: str, fmt: str) -> None:
    """Remove ``path`` (and a Parquet run's journal) when it holds no record."""
    from ..records.parquet import journal_path
    from .batch_resume import read_ids

    paths = [path, journal_path(path)] if fmt == "parquet" else [path]
    try:
        if fmt == "parquet":
            empty = all(not os.path.exists(p) or os.path.getsize(p) == 0 for p in paths)
        else:
            empty = not read_ids(path, fmt)
        if empty:
            for p in paths:
                if os.path.exists(p):
                    os.unlink(p)
    except (OSError, ValueError):
        pass  # the refusal is what the user must see; a file left over is harmless


def _run_locked(
    cfg: BatchConfig,
    backend: Backend,
    questions: Mapping[str, Question],
    columns: list[str],
    show_progress: bool | None,
    admission: Sequence[Admission],
    recalibrator: Recalibrator | None = None,
    gates: Mapping[str, Policy] | None = None,
    *,
    warned: bool = False,
) -> BatchSummary:
    """The run once ``--output`` (if any) is locked; ``warned``: the question set's own
    over-limit warning was printed (each state over them is then only counted)."""
    from .batch_dry import OverLimitWatch
    from .batch_resume import compact

    writer, prior = open_output(cfg, columns, questions)
    summary = BatchSummary(pack=cfg.pack_size)
    retried: set[str] = set()
    items = select(
        iter_inputs(cfg.inputs, cfg.spec, note=note_once()), cfg, prior, summary, retried
    )
    if show_progress is None:
        show_progress = bar_fits(cfg.output)
    progress = Progress(count_lines(cfg.inputs)) if show_progress else None
    run = _Run(
        cfg, backend, questions, writer, items, summary, progress,
        threaded_input="-" in cfg.inputs, admission=admission, recalibrator=recalibrator,
        gates=gates, watch=OverLimitWatch(cfg, summary, warned=warned),
    )  # fmt: skip
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

    completed = clean = False
    try:
        asyncio.run(main())
        completed = clean = True
    except asyncio.CancelledError:
        if summary.interrupted is None:
            raise
        clean = True
    finally:
        summary.wall = time.perf_counter() - started
        if progress is not None:
            progress.stop()
        finished = summary.interrupted is None
        writer.close(finished=finished, replace=completed and finished)
        summary.kept_old_output = writer.staged and not (completed and finished)
        if isinstance(writer, ParquetOutput) and not clean:
            writer.abort()  # an error: the journal stays for --resume
    if prior is not None:
        # What --resume left in the output still counts (issue 31 item 2): it once said
        # "1901 ok, 0 failed" and exited 0 over 99 error records.
        summary.left_errors.update(c for k, c in prior.error_codes.items() if k not in retried)
    superseded = retried | (prior.repeated if prior is not None else set())
    if isinstance(writer, ParquetOutput):
        # Finished or interrupted (a signal): either way a clean end folds the journal in.
        writer.settle(superseded)
    elif cfg.output is not None and summary.interrupted is None and superseded:
        compact(cfg.output, cfg.fmt, superseded, columns)
    return summary
