"""Issue 33 item 3: "`serve` speaks the wire exactly, without changing the library's types": the
server and its recorder work on each request as received, never through the typed question
round trip; `--synthetic` answers everything the wire allows and rejects what the API's schema
rejects with the API's status and body shape; `--proxy --record` records every answered request
exactly, so a replay answers only the request that was recorded."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from serving import post, run_with
from toolnexus.serve import ServeOptions, Server
from toolnexus.styles.recordings import read_recording


def _body(question: dict[str, Any]) -> dict[str, Any]:
    return {"model": "jev-latest", "state": "a ticket", "questions": {"q": question}}


NOUL = "Is it spam?"
#: Requests the wire allows (the API's schema: noul criteria sides are text or null, either may
#: be absent; a noul may have no instructions; option descriptions are text or null).
ALLOWED = [
    pytest.param({"type": "noul", "instructions": NOUL}, id="noul-criteria-absent"),
    pytest.param({"type": "noul", "instructions": NOUL, "criteria": None}, id="noul-criteria-null"),
    pytest.param(
        {"type": "noul", "instructions": NOUL, "criteria": {"true": "ads"}}, id="noul-one-sided"
    ),
    pytest.param(
        {"type": "noul", "instructions": NOUL, "criteria": {"true": {"kind": "ads"}, "false": []}},
        id="noul-structured-criteria",
    ),
    pytest.param({"type": "noul", "criteria": {"true": "ads"}}, id="noul-without-instructions"),
    pytest.param(
        {"type": "choice", "instructions": "Which?", "criteria": {"a": None, "b": None}},
        id="choice-null-descriptions",
    ),
    pytest.param(
        {"type": "score", "instructions": "How?", "criteria": ["low", {"label": "high"}]},
        id="score-structured-level",
    ),
]


REJECTED = [
    pytest.param(
        {"type": "score", "instructions": "How?", "criteria": ["low", None]},
        ["questions", "q", "score", "criteria", 1],
        id="score-level-null",
    ),
    pytest.param(
        {"type": "score", "instructions": "How?", "criteria": ["low", 2]},
        ["questions", "q", "score", "criteria", 1],
        id="score-level-number",
    ),
    pytest.param(
        {"type": "score", "instructions": "How?", "criteria": [True, "high"]},
        ["questions", "q", "score", "criteria", 0],
        id="score-level-boolean",
    ),
    pytest.param(
        {"type": "choice", "instructions": "Which?", "criteria": {"a": 1, "b": None}},
        ["questions", "q", "choice", "criteria", "a"],
        id="choice-description-number",
    ),
    pytest.param(
        {"type": "choice", "instructions": "Which?", "criteria": {"a": False}},
        ["questions", "q", "choice", "criteria", "a"],
        id="choice-description-boolean",
    ),
    pytest.param(
        {"type": "noul", "instructions": NOUL, "criteria": {"true": 3}},
        ["questions", "q", "noul", "criteria", "true"],
        id="noul-criterion-number",
    ),
]


@pytest.mark.parametrize(("question", "loc"), REJECTED)
def test_synthetic_rejects_what_the_schema_rejects_with_a_422_detail_list(
    question: dict[str, Any], loc: list[Any]
) -> None:
    async def scenario(server: Server) -> Any:
        return await post(server.url, _body(question))

    r = run_with(ServeOptions(synthetic=True), scenario)
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert [(d["type"], d["loc"]) for d in detail] == [("string_type", ["body", *loc])]


def test_record_keeps_each_request_exactly_and_replay_answers_only_that_request(
    tmp_path: Path,
) -> None:
    """The issue's example: a one-sided noul `{"true": X}` was recorded as `{"true": X, "false":
    ""}`, so a replay served an answer recorded for a different request; and four valid requests
    could not be recorded at all."""
    record = tmp_path / "rec"
    asked = [p.values[0] for p in ALLOWED]
    two_sided = {"type": "noul", "instructions": NOUL, "criteria": {"true": "ads", "false": ""}}

    async def go() -> tuple[list[Any], dict[str, int], list[Any], Any]:
        async with Server(ServeOptions(synthetic=True)) as a:
            b = Server(ServeOptions(proxy=a.url, record=record))
            async with b:
                proxied = [(await post(b.url, _body(q))).json() for q in asked]
                stats = {f"{r} {o}": n for (r, o), n in b.stats.items()}
        async with Server(ServeOptions(replay=record)) as c:
            replayed = [(await post(c.url, _body(q))).json() for q in asked]
            other = await post(c.url, _body(two_sided))
        return proxied, stats, replayed, other

    proxied, stats, replayed, other = asyncio.run(go())
    assert stats == {"POST /v1/systemone proxied:200 recorded": len(asked)}
    recorded = sorted(
        json.dumps(json.loads(f.read_text(encoding="utf-8"))["questions"]["q"], sort_keys=True)
        for f in record.glob("*.json")
    )
    assert recorded == sorted(json.dumps(q, sort_keys=True) for q in asked)
    assert replayed == proxied
    assert other.status_code == 409  # the two-sided spelling was never recorded
    # toolnexus's own --replay uses only the recordings of requests it sends exactly so.
    askable = {
        json.dumps(r.questions["q"], sort_keys=True): r.askable()
        for r in map(read_recording, record.glob("*.json"))
    }
    sendable = {"noul-criteria-absent", "choice-null-descriptions", "score-structured-level"}
    assert askable == {json.dumps(p.values[0], sort_keys=True): p.id in sendable for p in ALLOWED}
