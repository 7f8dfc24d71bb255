"""Runs the tests build without a server, around one noul question ``addresses_task``: a batch
to replay (a question file, a ``--replay`` directory, the inputs) and a labelled run written as
batch writes it. Shared by the run-step, side-output, gate-floor and thresholds-file tests."""

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


def labelled_noul_run(
    tmp_path: Path,
    questions: str,
    sample: list[tuple[float, str, int]],
    *,
    digest: bool = True,
) -> tuple[Path, Path, Path]:
    """The question file, a run of one noul ``addresses_task`` written as batch writes its
    records, and labels: for each ``(p, outcome, n)`` of ``sample``, ``n`` records answering
    ``p``, labelled ``addresses_task`` true when ``outcome`` is ``permit`` and ``merge`` =
    ``outcome``. ``digest=False``: records without ``questions_sha256`` (a run written before
    digests)."""
    from toolnexus import NoulAnswer
    from toolnexus.core.canonical import questions_sha256
    from toolnexus.core.decision import Decision
    from toolnexus.questionfile.load import load_question_set
    from toolnexus.records.decision import decision_record
    from toolnexus.records.model import DecisionRecord

    qpath = tmp_path / "q.yaml"
    qpath.write_text(questions, "utf-8")
    _, qs = load_question_set(qpath)
    sha = questions_sha256(qs) if digest else None
    lines, labels, i = [], ["id,addresses_task,merge"], 0
    for p, outcome, n in sample:
        for _ in range(n):
            body = decision_record(Decision("m", {"addresses_task": NoulAnswer(p)}), qs)
            lines.append(json.dumps(DecisionRecord.from_body(f"r{i}", sha, body).to_object()))
            labels.append(f"r{i},{'true' if outcome == 'permit' else 'false'},{outcome}")
            i += 1
    run, lab = tmp_path / "run.jsonl", tmp_path / "labels.csv"
    run.write_text("\n".join(lines) + "\n", "utf-8")
    lab.write_text("\n".join(labels) + "\n", "utf-8")
    return qpath, run, lab
