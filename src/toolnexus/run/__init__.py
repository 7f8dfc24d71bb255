"""``toolnexus.run``: the batch run as a library, what ``toolnexus batch`` does, from a script.

::

    from toolnexus.run import RunConfig, run_batch

    summary = run_batch(RunConfig(questions, ("tickets.jsonl",), id_field="id",
                                  state_fields=("text",), output="out.jsonl", resume=True))

A :class:`RunConfig` says everything a run does (inputs and their fields, output and format,
resume / retry-errors / overwrite, shard, pack, spend caps, calibration, cache, the
scheduler's settings, a thresholds file's gate floors, the steps after the run and its
OpenTelemetry span); ``RunConfig.from_question_file(path, inputs, ...)`` builds one from a
question file as ``batch`` loads it (``toolnexus.questionfile``); :func:`run_batch` (or
:func:`arun_batch` on a running loop) runs it and returns a :class:`RunSummary`;
:func:`estimate` is its dry run. Progress reaches ``on_progress`` as :class:`RunProgress` values
(notes as :class:`RunNote`, the run's end as :class:`RunEnded`). Readers and sinks are
registered codecs (:func:`register_reader`, :func:`register_sink`): Parquet is one like the
others.

The modules::

    config      RunConfig, caps_from: what a run is asked to do
    codecs      the reader and sink registry (jsonl, json, csv, parquet; stdin, dir, glob, arrow)
    engine      run_batch / arun_batch: checks, lock, stream, settle; signals and cancellation
    dry         estimate (the dry run: requests, tokens, cost, the largest request), DryRun
    budget      the Budget a run's caps give it, the output's earlier spend, resends charged
    stream      Stream: feeds the states, turns results into records, writes them
    summary     RunSummary, RunProgress, RunNote, RunEnded
    steps       after a finished run: review_out (the review queue), emit_cases (golden cases)
    otel        the run's OpenTelemetry span (the otel extra, imported only when it is on)
    safety      the checks before anything is written, the lock, opening the output
    inputs      the JSONL / CSV / state-file readers; items: one state read (InputItem)
    arrowin     the Parquet / Arrow reader (the parquet extra)
    states      how one state file or text is read (``eval`` reads states with it too)
    output      the line writer (one os.write per record) and the reorder buffer
    parquet     the Parquet sink and its journal; parquet_sink: the child that writes the file
    resume      reading an output back, compacting it to one record per id
    select      shard, resume and retry-errors selection, duplicate ids
    ids         the question set's digest and the seen-ids table
    pace        the run's admission counters, the state-field probe, the over-limit warning
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .codecs import Reader, Sink, register_reader, register_sink
    from .config import RunConfig, caps_from
    from .dry import DryRun, estimate
    from .engine import arun_batch, run_batch
    from .items import InputItem, InputSpec
    from .summary import RunEnded, RunNote, RunProgress, RunSummary

#: Each public name and its module, imported on first use (PEP 562): ``eval`` reads its state
#: with ``toolnexus.run.states`` and must not load the whole run to do it.
_WHERE = {
    "DryRun": "dry",
    "InputItem": "items",
    "InputSpec": "items",
    "Reader": "codecs",
    "RunConfig": "config",
    "RunEnded": "summary",
    "RunNote": "summary",
    "RunProgress": "summary",
    "RunSummary": "summary",
    "Sink": "codecs",
    "arun_batch": "engine",
    "caps_from": "config",
    "estimate": "dry",
    "register_reader": "codecs",
    "register_sink": "codecs",
    "run_batch": "engine",
}

__all__ = [
    "DryRun",
    "InputItem",
    "InputSpec",
    "Reader",
    "RunConfig",
    "RunEnded",
    "RunNote",
    "RunProgress",
    "RunSummary",
    "Sink",
    "arun_batch",
    "caps_from",
    "estimate",
    "register_reader",
    "register_sink",
    "run_batch",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'toolnexus.run' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
