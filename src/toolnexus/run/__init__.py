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
    from .arrowin import RowBlock as RowBlock
    from .arrowin import column_problem as column_problem
    from .arrowin import read_columns as read_columns
    from .arrowin import row_block as row_block
    from .budget import counting_resends as counting_resends
    from .budget import output_per_request as output_per_request
    from .budget import require_price as require_price
    from .budget import unestimated_budget as unestimated_budget
    from .codecs import Reader, Sink, register_reader, register_sink
    from .codecs import reader_for as reader_for
    from .config import RunConfig, caps_from
    from .config import apply_gate_floors as apply_gate_floors
    from .decided import decided_ids as decided_ids
    from .dry import DryRun, estimate
    from .dry import check_dry as check_dry
    from .dry import estimate_items as estimate_items
    from .engine import arun_batch, run_batch
    from .items import InputItem, InputSpec
    from .otel import prepare_telemetry as prepare_telemetry
    from .otel import run_telemetry as run_telemetry
    from .output import ReorderBuffer as ReorderBuffer
    from .resume import PriorMismatch as PriorMismatch
    from .resume import UnreadableRecord as UnreadableRecord
    from .safety import check_files as check_files
    from .safety import check_key as check_key
    from .states import STATE_FORMATS as STATE_FORMATS
    from .states import StateFormat as StateFormat
    from .states import attach_images as attach_images
    from .states import guess_format as guess_format
    from .states import load_state as load_state
    from .states import load_states_jsonl as load_states_jsonl
    from .states import parse_image_options as parse_image_options
    from .stream import result_record as result_record
    from .summary import RunEnded, RunNote, RunProgress, RunSummary

#: Each public name and its module, imported on first use (PEP 562): ``eval`` reads its state
#: with ``toolnexus.run.states`` and must not load the whole run to do it.
_WHERE = {
    "DryRun": "dry",
    "InputItem": "items",
    "InputSpec": "items",
    "PriorMismatch": "resume",
    "Reader": "codecs",
    "ReorderBuffer": "output",
    "RowBlock": "arrowin",
    "RunConfig": "config",
    "RunEnded": "summary",
    "RunNote": "summary",
    "RunProgress": "summary",
    "RunSummary": "summary",
    "STATE_FORMATS": "states",
    "Sink": "codecs",
    "StateFormat": "states",
    "UnreadableRecord": "resume",
    "apply_gate_floors": "config",
    "arun_batch": "engine",
    "attach_images": "states",
    "caps_from": "config",
    "check_dry": "dry",
    "check_files": "safety",
    "check_key": "safety",
    "column_problem": "arrowin",
    "counting_resends": "budget",
    "decided_ids": "decided",
    "estimate": "dry",
    "estimate_items": "dry",
    "guess_format": "states",
    "load_state": "states",
    "load_states_jsonl": "states",
    "output_per_request": "budget",
    "parse_image_options": "states",
    "prepare_telemetry": "otel",
    "read_columns": "arrowin",
    "reader_for": "codecs",
    "register_reader": "codecs",
    "register_sink": "codecs",
    "require_price": "budget",
    "result_record": "stream",
    "row_block": "arrowin",
    "run_batch": "engine",
    "run_telemetry": "otel",
    "unestimated_budget": "budget",
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
