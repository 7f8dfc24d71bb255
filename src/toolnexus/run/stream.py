"""The stream of one batch run (:class:`Stream`): states read lazily (``inputs``) are evaluated
through ``Classifier.evaluate_stream`` (at most ``concurrency`` in flight, per-state results), and
each record is written the moment it completes, in input order with ``ordered`` (a bounded
``output.ReorderBuffer``). It counts what the summary reports and notes the ``fail_on``
conditions each record meets. ``engine`` opens the output around it and ends the run.

Every request goes through the run's one scheduler (``batch.scheduler_for``: slow start, AIMD on
429s, Retry-After for the whole run, ``rate`` as a hard cap, fail fast), with the config's
``admission`` members (a spend budget) chained after it and ``pace.SentCounter``, which counts
what the summary reports. A run that stops scheduling (``RunStopped``) lets what is in flight
finish and writes every record it has (``summary.stopped``); the states never sent have no
record, so ``resume`` sends them. A ``state_fields`` that none of the first
``pace.STATE_FIELD_PROBE`` records has is the same kind of stop.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..core import CONDITION_FOR_CODE, RunStopped, failure_of, one_line
from ..records import ErrorRecord, GateSet, Record
from .codecs import SinkWriter
from .config import RunConfig
from .ids import question_set_sha256
from .items import InputItem
from .output import ReorderBuffer
from .pace import OverLimitWatch, SentCounter, StateFieldProbe
from .safety import check_key
from .summary import RunProgress, RunSummary

if TYPE_CHECKING:
    from ..classifier import Classifier
    from ..core import ClassifierError, Policy, Question
    from ..evaluate import StateResult
    from ..records import Recalibrator
    from ..scheduler import Admission

__all__ = ["REORDER_WINDOW_PER_SLOT", "Stream", "error_code", "result_record"]

#: ``ordered`` holds at most this many finished records per unit of concurrency.
REORDER_WINDOW_PER_SLOT = 8


def error_code(error: ClassifierError) -> str:
    """The stable code of a per-state failure: ``failure_of``'s, the same table that gives
    ``eval`` its exit code for the same exception."""
    failure = failure_of(error)
    assert failure is not None  # every ClassifierError has a row
    return failure.code


def result_record(
    item_id: str | int,
    result: StateResult,
    questions: Mapping[str, Question],
    sha: str,
    *,
    thresholds: Mapping[str, float] | None = None,
    question_thresholds: Mapping[str, Mapping[str, float]] | None = None,
    recalibrator: Recalibrator | None = None,
    gates: Mapping[str, Policy] | None = None,
    replay: str | os.PathLike[str] | None = None,
) -> Record:
    """One state's result as its record: an error record under ``failures``' code (a replay
    miss names the recordings ``replay`` holds), or the decision's record. The one place a
    result becomes a record, for the run and for ``toolnexus.arrow``'s tables alike.
    ``evaluate_stream`` validated the decision fail-closed: an invalid one is an error result."""
    from ..core import StaticMiss
    from ..records import record

    if result.error is not None:
        message = result.error.message
        if isinstance(result.error, StaticMiss) and replay is not None:
            from ..styles import replay_miss_message

            message = replay_miss_message(result.error, replay)
        return ErrorRecord(item_id, error_code(result.error), one_line(message), sha)
    assert result.decision is not None  # a result holds a decision or an error
    return record(
        item_id,
        sha,
        result.decision,
        questions,
        thresholds,
        validated=True,
        recalibrator=recalibrator,
        question_thresholds=question_thresholds,
        gates=gates,
    )


class Stream:
    """One batch run's stream: feeds the states, turns results into records, writes them."""

    def __init__(
        self,
        cfg: RunConfig,
        classifier: Classifier,
        writer: SinkWriter,
        items: Iterator[InputItem],
        summary: RunSummary,
        on_progress: Callable[[RunProgress], object] | None = None,
        *,
        note: Callable[[str], None],
        recalibrator: Recalibrator | None = None,
        watch: OverLimitWatch | None = None,
        admission: tuple[Admission, ...] | None = None,
    ) -> None:
        self.cfg = cfg
        self.watch = watch
        self.recalibrator = recalibrator
        # compiled once for the run: a record walks them without a lookup (issue 35, Speed)
        self.gates = GateSet(cfg.gates) if cfg.gates else cfg.gates
        self.classifier = classifier
        self.questions = cfg.questions
        self.note = note
        self.writer = writer
        self.items = items
        self.summary = summary
        self.on_progress = on_progress
        # stdin may block for as long as its producer likes; the event loop must not.
        self.threaded_input = "-" in cfg.inputs
        self.reorder = (
            ReorderBuffer(REORDER_WINDOW_PER_SLOT * cfg.concurrency) if cfg.ordered else None
        )
        self.keep_state = cfg.record is not None
        self.sha = question_set_sha256(cfg.questions)
        # The config's members (and the budget its caps make), then the summary's counter.
        members = cfg.admission if admission is None else admission
        self.admission: tuple[Admission, ...] = (*members, SentCounter(summary))
        self.probe = StateFieldProbe(cfg.state_fields, cfg.surface)
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
            met = [c for c in self.cfg.fail_on if c in record.flags]
        for condition in met:
            if condition is not None and condition in self.cfg.fail_on:
                self.summary.met(condition, record.id)

    def _count_error(self, code: str, item_id: str | int) -> None:
        self.summary.states += 1
        self.summary.codes[code] += 1
        if self.on_progress is not None:
            self.on_progress(self.summary.progress())

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
                check_key(self.cfg.classifier)
                self.key_checked = True
            flying = self.watch.sent(item) if self.watch is not None else 0
            yield (seq, item.id, item.state if self.keep_state else None, flying), item.state
        if (unseen := self.probe.unseen()) is not None:
            self.note(unseen)

    def _record(self, item_id: str | int, result: StateResult, state: Any) -> Record:
        cfg, s = self.cfg, self.summary
        record = result_record(
            item_id, result, self.questions, self.sha,
            thresholds=cfg.thresholds, question_thresholds=cfg.question_thresholds,
            recalibrator=self.recalibrator, gates=self.gates, replay=cfg.replay,
        )  # fmt: skip
        if isinstance(record, ErrorRecord):
            self._count_error(record.code, item_id)
            return record
        decision = result.decision
        assert decision is not None
        if cfg.record is not None and not decision.cached:
            # A cached decision sent nothing: it is not an exchange to record.
            cfg.record(state, self.questions, decision)
        s.states += 1
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
        if self.on_progress is not None:
            self.on_progress(s.progress())
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
            pack=1 if self.cfg.retry_errors else self.cfg.pack,
            admission=self.admission,
            on_over_limit=self.watch,
            surface=self.cfg.surface,
        )
        stream = self.classifier.evaluate_stream(self._feed(), self.questions, options=options)
        async with self.classifier:
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
