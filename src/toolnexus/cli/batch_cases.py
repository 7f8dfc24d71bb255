"""``batch --emit-cases FILE`` (issue 35 item 6): golden cases for regression tests, one JSONL
line per record the review queue would hold (``--emit-cases-all``: every decided record), in
the shape the pytest plugin's ``--toolnexus-cases FILE`` runs:

    {"id": "t7", "questions": "../questions/merge.yaml", "state": "...",
     "expect": {"gates": {"merge": "hold", "strict": "needs_input"}}}

``id`` the record's id as text; ``questions`` the question file, relative to the cases file's
folder (as the plugin reads it); ``state`` the state as it was sent (text, or the JSON value a
``--state-field`` or a whole object held); ``expect.gates`` each gate's action on that record
(``needs_input`` for an escalation). Records do not carry their states, so after the run the
inputs are read again for the ids picked (no state is kept in memory during the run).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import CliError

__all__ = ["check_cases", "write_cases"]


def check_cases(cfg: Any, questions: Path) -> None:
    """Refuse, before anything is sent, what ``--emit-cases`` cannot do."""
    from .questionfile import load_question_file

    if cfg.emit_cases is None:
        raise CliError("--emit-cases-all goes with --emit-cases FILE")
    if cfg.output is None:
        raise CliError("--emit-cases reads the records the run wrote: give -o FILE")
    if "-" in cfg.inputs:
        raise CliError(
            "--emit-cases reads the inputs again for their states: not from stdin (give a file)"
        )
    _, gates = load_question_file(questions)
    if not gates:
        raise CliError(
            f"--emit-cases: {questions} has no gates: a case's expected value is each gate's action"
        )


def _expected(gates: Any) -> dict[str, str] | None:
    if not isinstance(gates, Mapping):
        return None
    return {
        str(name): str(g.get("action", "")) for name, g in gates.items() if isinstance(g, Mapping)
    }


def write_cases(cfg: Any, questions: Path) -> None:
    """Pick the cases from the run ``cfg.output``, read their states from ``cfg.inputs`` and
    write ``cfg.emit_cases``; one line on stderr says how many (and how many states could not
    be written as JSON: an image state)."""
    from ..report.judged import decided_records
    from ..report.review import queue_reasons
    from ..report.runs import ReportInputError
    from ..run.codecs import iter_inputs
    from .questionfile import load_question_file

    _, gates = load_question_file(questions)
    defaults = {name: p.default for name, p in gates.items()}
    wanted: dict[str, dict[str, str]] = {}
    try:
        for item_id, record in decided_records(cfg.output):
            expected = _expected(record.get("gates"))
            if expected and (cfg.emit_cases_all or queue_reasons(record, defaults)):
                wanted[item_id] = expected
    except ReportInputError as e:
        raise CliError(str(e)) from None
    written = unwritable = 0
    path = cfg.emit_cases
    # relative to the cases file's folder, as the plugin resolves it
    where = Path(os.path.relpath(questions.resolve(), Path(path).resolve().parent)).as_posix()
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            for item in iter_inputs(cfg.run.inputs, cfg.run.spec):
                expected = wanted.pop(item.key, None)
                if expected is None or item.error is not None:
                    continue
                case = {"id": item.key, "questions": where, "state": item.state,
                        "expect": {"gates": expected}}  # fmt: skip
                try:
                    line = json.dumps(case, ensure_ascii=False)
                except (TypeError, ValueError):
                    unwritable += 1  # an image (or bytes) state: no JSON for it
                    continue
                f.write(line + "\n")
                written += 1
    except OSError as e:
        raise CliError(f"{path}: cannot write: {e.strerror or type(e).__name__}") from None
    left = f"; {unwritable} left out: their state is not JSON (an image)" if unwritable else ""
    sys.stderr.write(f"toolnexus: {path}: {written} golden cases{left}\n")
