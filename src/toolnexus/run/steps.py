"""The steps after a finished run that read back what it wrote (issue 30 item 1: they were
``toolnexus batch``'s, around the library run): ``review_out`` (``batch --review-out``, issue 35
item 6) and ``emit_cases`` / ``emit_cases_all`` (``batch --emit-cases``).

``review_out``: the queue of what the run wrote (``report.review``, as ``report --review-out
--gates`` writes it): the records a gate escalated or held (an action but the gate's default),
or with an answer uncertain, near-uniform or invalid, as a CSV a person fills in (the filled
file is a ``report --labels`` file).

``emit_cases``: golden cases for regression tests, one JSONL line per record the review queue
would hold (``emit_cases_all``: every decided record), in the shape the pytest plugin's
``--toolnexus-cases FILE`` runs::

    {"id": "t7", "questions": "../questions/merge.yaml", "state": "...",
     "expect": {"gates": {"merge": "hold", "strict": "needs_input"}}}

``id`` the record's id as text; ``questions`` the question file, relative to the cases file's
folder (as the plugin reads it); ``state`` the state as it was sent (text, or the JSON value a
``--state-field`` or a whole object held); ``expect.gates`` each gate's action on that record
(``needs_input`` for an escalation). Records do not carry their states, so after the run the
inputs are read again for the ids picked (no state is kept in memory during the run).

Each step runs once the run ended uninterrupted and its output is settled, and says what it
wrote as one ``RunNote`` of kind ``done`` (the CLI prints ``toolnexus: {message}``). What a step
cannot do is refused before anything is sent (:func:`check_steps`, :func:`check_case_gates`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..core import RunError
from .config import RunConfig

__all__ = ["check_case_gates", "check_steps", "run_steps", "write_cases", "write_review"]

#: Says what a step wrote (``engine._Session.note`` with kind ``done``).
Say = Callable[[str], None]


def check_steps(cfg: RunConfig) -> None:
    """Refuse, before anything is read or sent, what ``review_out`` and ``emit_cases`` cannot
    do with the run's other fields (the question file's gates: :func:`check_case_gates`)."""
    if cfg.review_out is not None and cfg.output is None:
        raise RunError("--review-out reads the records the run wrote: give -o FILE")
    if cfg.emit_cases is None and not cfg.emit_cases_all:
        return
    if cfg.emit_cases is None:
        raise RunError("--emit-cases-all goes with --emit-cases FILE")
    if cfg.output is None:
        raise RunError("--emit-cases reads the records the run wrote: give -o FILE")
    if "-" in cfg.inputs:
        raise RunError(
            "--emit-cases reads the inputs again for their states: not from stdin (give a file)"
        )


def check_case_gates(cfg: RunConfig) -> None:
    """``emit_cases`` needs the question file (each case names it) and its ``gates:`` (a case's
    expected value is each gate's action)."""
    if cfg.emit_cases is None:
        return
    if cfg.questions_path is None:
        raise RunError(
            "--emit-cases: each case names its question file: build the run with "
            "RunConfig.from_question_file (or give questions_path)"
        )
    if not cfg.gates:
        raise RunError(
            f"--emit-cases: {cfg.questions_path} has no gates: a case's expected value is each "
            "gate's action"
        )


def run_steps(cfg: RunConfig, say: Say) -> None:
    """The steps ``cfg`` asks for, in ``batch``'s order, after a finished run."""
    if cfg.review_out is not None:
        write_review(cfg, say)
    if cfg.emit_cases is not None:
        write_cases(cfg, say)


def _defaults(cfg: RunConfig) -> dict[str, str]:
    """Per gate, its default action: a record held by a gate is one with another action."""
    return {name: policy.default for name, policy in cfg.gates.items()}


def write_review(cfg: RunConfig, say: Say) -> None:
    """``review_out``: the queue of what the run wrote to ``output``."""
    from ..report import write_review as write

    assert cfg.output is not None and cfg.review_out is not None  # check_steps
    # A run that cannot be read is a ReportError (the CLI's one boundary prints it, exit 2).
    queued = write(cfg.output, cfg.review_out, _defaults(cfg))
    say(f"{cfg.review_out}: {queued} records to review")


def _expected(gates: Any) -> dict[str, str] | None:
    if not isinstance(gates, Mapping):
        return None
    return {
        str(name): str(g.get("action", "")) for name, g in gates.items() if isinstance(g, Mapping)
    }


def write_cases(cfg: RunConfig, say: Say) -> None:
    """``emit_cases``: pick the cases from ``output``, read their states from ``inputs`` and
    write them; one note says how many (and how many states could not be written as JSON: an
    image state)."""
    from ..report import ReportInputError, decided_records, queue_reasons
    from .codecs import iter_inputs

    path, output, questions = cfg.emit_cases, cfg.output, cfg.questions_path
    assert path is not None and output is not None and questions is not None  # the checks
    defaults = _defaults(cfg)
    wanted: dict[str, dict[str, str]] = {}
    try:
        for item_id, record in decided_records(output):
            expected = _expected(record.get("gates"))
            if expected and (cfg.emit_cases_all or queue_reasons(record, defaults)):
                wanted[item_id] = expected
    except ReportInputError as e:
        raise RunError(str(e)) from None
    written = unwritable = 0
    # relative to the cases file's folder, as the plugin resolves it
    where = Path(os.path.relpath(Path(questions).resolve(), Path(path).resolve().parent))
    from ..records import OutputError, whole_file

    try:
        with whole_file(path) as f:  # whole or not at all (issue 42 item 2)
            for item in iter_inputs(cfg.inputs, cfg.spec):
                expected = wanted.pop(item.key, None)
                if expected is None or item.error is not None:
                    continue
                case = {"id": item.key, "questions": where.as_posix(), "state": item.state,
                        "expect": {"gates": expected}}  # fmt: skip
                try:
                    line = json.dumps(case, ensure_ascii=False)
                except (TypeError, ValueError):
                    unwritable += 1  # an image (or bytes) state: no JSON for it
                    continue
                f.write(line + "\n")
                written += 1
    except OutputError as e:
        raise RunError(str(e)) from None
    left = f"; {unwritable} left out: their state is not JSON (an image)" if unwritable else ""
    say(f"{path}: {written} golden cases{left}")
