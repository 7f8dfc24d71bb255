"""``run_batch`` / ``arun_batch``: one question set over many states, streamed to an output.

The order of a run: every option checked before anything is read (``safety.check_config``),
the output locked for the whole run (a second run aimed at the same file is refused), an
output that already holds a run continued (``resume`` / ``retry_errors``) or replaced
(``overwrite``), never truncated; then the stream (``stream.Stream``), and at its end the
writer closed: a finished run settles the output (one record per id; a Parquet run folds its
journal into the file), an interrupted one leaves what it wrote for ``resume``.

Interruptions stop the run the same way from the CLI and from a script: SIGINT / SIGTERM
during ``run_batch`` (``summary.interrupted`` names the signal), and cancelling the task that
awaits ``arun_batch`` (the summary says ``cancelled``; the ``CancelledError`` goes on). The
records already written are kept and fsynced, the lock is released, and a later run with
``resume=True`` sends only the states that have no record.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from ..core import one_line
from .budget import budget_of, counting_resends, require_price
from .codecs import SinkWriter, iter_inputs, sink_for
from .config import RunConfig
from .pace import OverLimitWatch
from .safety import check_config, check_existing, lock_output, open_output
from .select import select
from .steps import check_case_gates, check_steps
from .stream import Stream
from .summary import RunEnded, RunNote, RunProgress, RunSummary

if TYPE_CHECKING:
    from ..classifier import Classifier
    from ..records import Recalibrator
    from ..scheduler import Admission
    from .otel import RunSpan
    from .resume import PriorOutput

__all__ = ["OnProgress", "Prepare", "arun_batch", "run_batch"]

#: What ``on_progress`` hears: the counts after each record, each note once, and the run's end.
OnProgress = Callable[[RunProgress | RunNote | RunEnded], object]
#: Completes a checked config before anything is read or sent (``toolnexus batch``: the question
#: file, read once, and the backend joined to the flags after the flags were checked).
Prepare = Callable[[RunConfig], RunConfig]

_log = logging.getLogger("toolnexus.run")


def run_batch(
    config: RunConfig,
    *,
    on_progress: OnProgress | None = None,
    prepare: Prepare | None = None,
) -> RunSummary:
    """Run ``config`` and return its summary (``summary.exit_code()`` is ``toolnexus batch``'s).

    Blocks until the run ends. SIGINT and SIGTERM (on the main thread) stop it as they stop
    the CLI: what is in flight is dropped, what was written is kept, and the summary's
    ``interrupted`` names the signal. The steps after a finished run (``review_out``,
    ``emit_cases``) run once the event loop is closed, under the default Ctrl-C again.
    ``prepare`` completes the config once its options are checked, before the rest of the
    checks (``toolnexus batch`` reads its question file there: every flag is checked first)."""
    from .otel import run_telemetry

    run = _Session(config, on_progress, prepare)
    with run_telemetry(config.otel) as span:
        _run_on_a_loop(run)
        run.ended(span)
    return run.summary


def _run_on_a_loop(run: _Session) -> None:
    """``run`` on a new event loop, SIGINT / SIGTERM (on the main thread) stopping it."""
    on_main = threading.current_thread() is threading.main_thread()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        signals = (signal.SIGINT, signal.SIGTERM) if on_main else ()
        for sig in signals:

            def stop(name: str = sig.name) -> None:
                run.summary.interrupted = name
                task.cancel()

            loop.add_signal_handler(sig, stop)
        try:
            await run.arun()
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)

    try:
        asyncio.run(main())
    except asyncio.CancelledError:
        if run.summary.interrupted is None:
            raise


async def arun_batch(
    config: RunConfig,
    *,
    on_progress: OnProgress | None = None,
    prepare: Prepare | None = None,
) -> RunSummary:
    """:func:`run_batch` on the running event loop. Cancelling the awaiting task stops the run
    (records kept, output consistent, lock released) and re-raises ``CancelledError``. The
    steps after a finished run (``review_out``, ``emit_cases``) read files on this loop's
    thread, as ``batch`` does after its run."""
    from .otel import run_telemetry

    run = _Session(config, on_progress, prepare)
    with run_telemetry(config.otel) as span:
        await run.arun()
        run.ended(span)
    return run.summary


class _Session:
    """One run, from its checks to its settled output."""

    def __init__(
        self, config: RunConfig, on_progress: OnProgress | None, prepare: Prepare | None = None
    ) -> None:
        self.cfg = config
        self.on_progress = on_progress
        self._prepare = prepare
        self.summary = RunSummary(pack=config.pack)
        self.writer: SinkWriter | None = None
        self._said: set[str] = set()

    def note(self, message: str, kind: Literal["note", "warning", "done"] = "note") -> None:
        """Tell the user ``message`` (a note once per run, on one line): to ``on_progress``,
        else the log."""
        if kind == "note":
            message = one_line(message)
            if message in self._said:
                return
            self._said.add(message)
        if self.on_progress is not None:
            self.on_progress(RunNote(message, kind))
        else:
            _log.log(logging.WARNING if kind == "warning" else logging.INFO, "%s", message)

    def ended(self, span: RunSpan) -> None:
        """The run ended: its counts on the run's span, :class:`RunEnded` to ``on_progress``,
        then (unless interrupted) the steps after it, each saying what it wrote."""
        span.summary(self.summary)
        if self.on_progress is not None:
            self.on_progress(RunEnded(self.summary))
        if self.summary.interrupted is None:
            from .steps import run_steps

            run_steps(self.cfg, lambda message: self.note(message, "done"))

    async def arun(self) -> None:
        cfg = self.cfg
        check_config(cfg)
        require_price(cfg.caps, cfg.price, cfg.surface)
        check_steps(cfg)
        if self._prepare is not None:
            self.cfg = cfg = self._prepare(cfg)
        if cfg.gate_floors:
            # A thresholds file's gates: floors set the gates' cut-points (issue 35 item 4),
            # for a script as for --thresholds @FILE.
            self.cfg = cfg = replace(cfg, gates=cfg.floored_gates(), gate_floors={})
        check_case_gates(cfg)
        classifier = self._classifier()
        recalibrator = self._recalibrator()
        columns = self._columns(recalibrator)
        created = cfg.output is not None and not os.path.lexists(cfg.output)
        lock = lock_output(cfg.output) if cfg.output is not None else None
        try:
            check_existing(cfg)
            budget = budget_of(cfg, self.note)
            admission = cfg.admission if budget is None else (*cfg.admission, budget)
            # Every resend bills like a request: charged through the transport's hook.
            with counting_resends(budget):
                await self._locked(classifier, columns, recalibrator, admission)
            self._over_cost_cap(admission)
        except BaseException:
            refused = self.summary.interrupted is None and not _written(self)
            if created and cfg.output is not None and refused:
                # A run refused before its first record (an unset key, a calibration refused
                # at the first decision) leaves no empty output behind (issue 31 item 18).
                _remove(sink_for(cfg.fmt).files(cfg.output))
            raise
        finally:
            if lock is not None:
                os.close(lock)

    def _over_cost_cap(self, admission: tuple[Admission, ...]) -> None:
        """What the spend passed ``max_cost`` by, for the summary: only the estimate error of
        requests already in flight can carry it past (issue 42 item 7)."""
        from ..scheduler import Budget

        for member in admission:
            if isinstance(member, Budget) and member.over_cost_cap > 0:
                self.summary.over_cost_cap = member.over_cost_cap
                self.summary.cost_cap = member.caps.max_cost

    def _classifier(self) -> Classifier:
        from ..classifier import create_classifier

        options = dict(self.cfg.classifier)
        if self.cfg.cache is not None:
            options["cache"] = self.cfg.cache
        return create_classifier(**options)

    def _recalibrator(self) -> Recalibrator | None:
        cfg = self.cfg
        if cfg.calibration is None:
            return None
        from ..records import Recalibrator
        from .ids import question_set_sha256

        # An unpacked run asks every state alone: a packed map is refused before anything is
        # sent (a packed run's sizes vary by request, so its maps are checked per decision).
        pack = 1 if cfg.pack == 1 else None
        style = "static" if "decisions" in cfg.classifier else cfg.classifier.get("style")
        sha = question_set_sha256(cfg.questions)
        return Recalibrator.load(cfg.calibration, sha, style or "systemone", pack)

    def _columns(self, recalibrator: Recalibrator | None) -> list[str]:
        """The CSV-like sink's header, learnt from a record of this question set."""
        cfg = self.cfg
        if not sink_for(cfg.fmt).columns:
            return []
        from ..records import sample_record
        from .ids import question_set_sha256
        from .output import csv_columns

        sha = question_set_sha256(cfg.questions)
        sample = sample_record(cfg.questions, cfg.thresholds, recalibrator, cfg.gates, sha)
        return csv_columns(sample.to_object())

    async def _locked(
        self,
        classifier: Classifier,
        columns: list[str],
        recalibrator: Recalibrator | None,
        admission: tuple[Admission, ...],
    ) -> None:
        """The run once ``output`` (if any) is locked."""
        cfg, summary = self.cfg, self.summary
        writer, prior = open_output(cfg, columns, cfg.questions)
        self.writer = writer
        retried: set[str] = set()
        items = select(
            iter_inputs(cfg.inputs, cfg.spec, note=self.note), cfg, prior, summary, retried
        )
        stream = Stream(
            cfg, classifier, writer, items, summary, self.on_progress, note=self.note,
            recalibrator=recalibrator, admission=admission,
            watch=OverLimitWatch(cfg, summary, warned=cfg.said_over_limits, note=self.note),
        )  # fmt: skip
        started = time.perf_counter()
        completed = clean = False
        try:
            await stream.run()
            completed = clean = True
        except asyncio.CancelledError:
            if summary.interrupted is None:
                summary.interrupted = "cancelled"
            clean = True
            raise
        finally:
            summary.wall = time.perf_counter() - started
            finished = summary.interrupted is None
            writer.close(finished=finished, replace=completed and finished)
            summary.kept_old_output = writer.staged and not (completed and finished)
            if not clean:
                writer.abort()  # an error: what was written stays for resume
            if clean:
                self._settle(writer, prior, retried, finished=finished)

    def _settle(
        self, writer: SinkWriter, prior: PriorOutput | None, retried: set[str], *, finished: bool
    ) -> None:
        if prior is not None:
            # What resume left in the output still counts (issue 31 item 2): it once said
            # "1901 ok, 0 failed" and exited 0 over 99 error records.
            self.summary.left_errors.update(
                c for k, c in prior.error_codes.items() if k not in retried
            )
        superseded = retried | (prior.repeated if prior is not None else set())
        writer.settle(superseded, finished=finished)


def _written(run: _Session) -> bool:
    """Whether the run wrote a record (a writer that does not count is taken to have)."""
    writer = run.writer
    return writer is not None and bool(getattr(writer, "written", 1))


def _remove(paths: list[str]) -> None:
    """Remove the files a run refused before its first record created."""
    for path in paths:
        try:
            if os.path.exists(path):
                os.unlink(path)
        except OSError:
            pass  # the refusal is what the user must see; a file left over is harmless
