"""A batch that needs no server: a question file, a ``--replay`` directory that answers each
state with a recorded noul, and a JSONL input of those states. Shared by the tests of the run's
side steps and of the side-output guard."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path


def replayed_batch(
    tmp_path: Path, questions: str, states: Mapping[str, float]
) -> tuple[Path, Path, Path]:
    """The question file (``questions``, one noul ``addresses_task``), a replay directory
    answering each state of ``states`` with its noul, and the inputs (``id`` = ``text`` = the
    state)."""
    from toolnexus.questionfile.load import load_question_set
    from toolnexus.styles.recordings import write_recording

    qpath = tmp_path / "q.yaml"
    qpath.write_text(questions, "utf-8")
    _, qs = load_question_set(qpath)
    rec = tmp_path / "rec"
    for state, p in states.items():
        body = {"model": "m", "answers": {"addresses_task": {"type": "noul", "noul": p}},
                "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
        write_recording(rec, model="m", endpoint="e", state=state, questions=qs, response=body)
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": s, "text": s}) + "\n" for s in states), "utf-8")
    return qpath, rec, src
