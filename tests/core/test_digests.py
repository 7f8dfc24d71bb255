"""Issue 16 item 3: "Two named digests, no third." The *request digest* (``canonical --sha256``,
sha256 of ``canonical_request(model, questions)``) and the *question-set digest* that records
carry as ``questions_sha256``. Replay misses, ``diff`` and every other message use one of them,
by name; ``canonical --questions-sha256`` prints the records' one; ``diff`` shows both."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path

import pytest

from clirun import run_cli
from paths import REPO
from toolnexus import create_classifier
from toolnexus.core.canonical import (
    QUESTIONS_DIGEST,
    REQUEST_DIGEST,
    canonical_json,
    canonical_request,
    questions_sha256,
    request_sha256,
)
from toolnexus.core.errors import StaticMiss
from toolnexus.core.questions import normalize_questions, questions_to_wire
from toolnexus.questionfile.load import load_question_set

TRIAGE = REPO / "questions" / "support-triage.yaml"
SRC = REPO / "src" / "toolnexus"


def _set() -> tuple[str, dict]:  # type: ignore[type-arg]
    qset = load_question_set(str(TRIAGE))
    return qset.model or "", qset.questions


def test_the_request_digest_is_sha256_of_canonical_request() -> None:
    model, qs = _set()
    assert request_sha256(model, qs) == hashlib.sha256(canonical_request(model, qs)).hexdigest()


def test_the_question_set_digest_keeps_the_value_records_carry() -> None:
    """Its value must not change: ``--resume`` compares it with existing outputs."""
    _, qs = _set()
    want = hashlib.sha256(canonical_json(questions_to_wire(qs))).hexdigest()
    assert questions_sha256(qs) == want


def test_canonical_questions_sha256_prints_what_batch_records_carry(tmp_path: Path) -> None:
    states = tmp_path / "s.jsonl"
    states.write_text('{"id": "a", "text": "never recorded"}\n')
    out = tmp_path / "out.jsonl"
    ran = run_cli(
        "batch", str(TRIAGE), str(states), "--state-field", "text", "--replay", "recordings/",
        "-o", str(out),
    )  # fmt: skip
    record = json.loads(out.read_text().splitlines()[0])
    printed = run_cli("canonical", "--questions-sha256", str(TRIAGE))
    assert printed.code == 0, printed.stderr
    assert printed.out == record["questions_sha256"] + "\n", ran.stderr
    assert printed.out != run_cli("canonical", "--sha256", str(TRIAGE)).out


def test_sha256_and_questions_sha256_do_not_combine() -> None:
    ran = run_cli("canonical", "--sha256", "--questions-sha256", str(TRIAGE))
    assert ran.code == 2
    assert "--sha256 and --questions-sha256 do not combine" in ran.stderr


def test_a_replay_miss_carries_and_names_the_question_set_digest() -> None:
    """Before: the miss printed sha256 of canonical_request("", questions), a third digest."""
    _, qs = _set()

    async def go() -> None:
        async with create_classifier(style="static", decisions=[]) as c:
            await c.evaluate("nobody recorded this", qs)

    with pytest.raises(StaticMiss) as e:
        asyncio.run(go())
    assert e.value.questions_sha256 == questions_sha256(normalize_questions(qs))
    assert f"{QUESTIONS_DIGEST} {questions_sha256(normalize_questions(qs))[:12]}" in str(e.value)


def test_eval_replay_miss_names_the_question_set_digest() -> None:
    _, qs = _set()
    ran = run_cli("eval", str(TRIAGE), "--state-text", "never recorded", "--replay", "recordings/")
    assert ran.code == 2
    assert f"{QUESTIONS_DIGEST} {questions_sha256(qs)[:12]}" in ran.stderr, ran.stderr


def test_diff_shows_both_digests_by_name(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(TRIAGE.read_text())
    (tmp_path / "b.yaml").write_text("model: another\n" + TRIAGE.read_text())
    ran = run_cli("diff", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"), "--format", "json")
    data = json.loads(ran.out)
    _, qs = _set()
    model = data["old"]["model"]
    assert data["new"]["sha256"] == request_sha256("another", qs)
    assert data["old"]["sha256"] == request_sha256(model, qs)
    assert data["old"]["questions_sha256"] == questions_sha256(qs)
    assert data["new"]["questions_sha256"] == questions_sha256(qs)
    text = run_cli("diff", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")).out
    assert f"{REQUEST_DIGEST} before {request_sha256(model, qs)}" in text
    assert f"{QUESTIONS_DIGEST} before {questions_sha256(qs)}" in text


_DIGEST_OF_A_SET = re.compile(
    r"sha256_hex\(\s*canonical_(request|json)\(\s*(questions_to_wire|\{\s*\"model\"|\"\")"
)


def test_no_module_but_canonical_computes_either_digest() -> None:
    """One definition per concept: the two digests are written once, in canonical.py."""
    offenders = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if path.name != "canonical.py" and _DIGEST_OF_A_SET.search(path.read_text())
    ]
    assert offenders == []
