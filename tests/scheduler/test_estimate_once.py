"""Issue 32 item 5: "Each request's estimate is computed once and travels with it; the pack
plan and the send reuse it." Counted, not timed: the bytes the estimator reads in a packed run,
against the bytes the run sends (the profile had ``estimate_tokens`` reading every packed body
5 times, about a sixth of a packed run's client CPU)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from serving import ThreadedServer
from toolnexus import BatchOptions, create_classifier
from toolnexus.core.answers import ClassifierUsage
from toolnexus.scheduler import Outcome, Ticket, TokenEstimate, estimate_tokens
from toolnexus.scheduler import tokens as token_module
from toolnexus.serve import ScriptedReply, ScriptedRequest, ServeOptions

QUESTIONS: dict[str, Any] = {
    "refund": {"type": "noul", "instructions": "Is the customer asking for money back?"},
    "desk": {
        "type": "choice",
        "instructions": "Which desk should own this ticket?",
        "criteria": {"billing": "money that moved", "technical": "the product broke"},
    },
}


class Recorder:
    """An admission member that asks every ticket for its estimate (as a budget does)."""

    def __init__(self) -> None:
        self.estimates: list[TokenEstimate] = []

    async def acquire(self, ticket: Ticket) -> None:
        self.estimates.append(ticket.estimate)

    async def release(self, ticket: Ticket, usage: ClassifierUsage, outcome: Outcome) -> None:
        return None


class Bodies:
    def __init__(self) -> None:
        self.seen: list[bytes] = []
        self.threaded = ThreadedServer(ServeOptions(synthetic=True, script=self._script))

    def _script(self, request: ScriptedRequest) -> ScriptedReply | None:
        if request.endpoint == "systemone":
            self.seen.append(request.body)
        return None


@pytest.fixture(scope="module")
def bodies() -> Iterator[Bodies]:
    b = Bodies()
    with b.threaded:
        yield b


def test_a_packed_run_reads_each_body_once_and_admits_it_on_its_own_estimate(
    bodies: Bodies, monkeypatch: pytest.MonkeyPatch
) -> None:
    bodies.seen.clear()
    read: list[int] = []
    tally = token_module.tally

    def counting(body: bytes | str) -> Any:
        read.append(len(body))
        return tally(body)

    monkeypatch.setattr(token_module, "tally", counting)
    recorder = Recorder()
    states = [f"ticket {i}: I was charged twice for order {i * 7}" for i in range(96)]

    async def go() -> None:
        async with create_classifier(
            base_url=bodies.threaded.url + "/v1", api_key_env="NO_SUCH", model="jev-latest"
        ) as c:
            options = BatchOptions(concurrency=4, pack=32, admission=(recorder,))
            await c.evaluate_batch(states, QUESTIONS, options=options)

    asyncio.run(go())
    sent = sum(len(b) for b in bodies.seen)
    assert len(bodies.seen) == 3
    # Once at most: the plan tallies the derived questions once and each pack's states once;
    # the send and the scheduler reuse that estimate (before: 5 full passes per body).
    assert sum(read) <= sent
    monkeypatch.setattr(token_module, "tally", tally)
    # ...and the estimate that travelled is exactly that of the bytes sent.
    assert Counter(recorder.estimates) == Counter(estimate_tokens(b) for b in bodies.seen)


@pytest.mark.parametrize(
    ("text", "lifts"),
    [
        pytest.param(False, 1, id="an-object-lifted-once"),
        pytest.param(True, 0, id="text-never-lifted"),
    ],
)
def test_a_packed_run_lifts_each_state_once(text: bool, lifts: int, bodies: Bodies) -> None:
    """Issue 32 item 5's "then profile a packed run and cut what else is worth cutting": the
    plan lifts every state of a pack it checks, and the send reuses a lift without images
    instead of walking the state again (it was twice per state). Text holds no image: it is
    not lifted at all."""
    from toolnexus.core import observe as probe

    texts = [f"ticket {i}: the terminal charged invoice {i} twice" for i in range(64)]
    states: list[Any] = texts if text else [{"ticket": t} for t in texts]

    async def go() -> list[Any]:
        async with create_classifier(
            base_url=bodies.threaded.url + "/v1", api_key_env="NO_SUCH", model="jev-latest"
        ) as c:
            options = BatchOptions(concurrency=2, pack=32)
            return await c.evaluate_batch(states, QUESTIONS, options=options)

    with probe.counting() as events:
        got = asyncio.run(go())
    lifted = [v for e, v in events if e == "assets.lift"]
    assert [(d.packed, d.position) for d in got] == [(32, i % 32) for i in range(64)]
    seen = Counter(json.dumps(s, sort_keys=True) for s in lifted)
    # each state once, none twice (an object); none at all (text)
    assert seen == Counter({json.dumps(s, sort_keys=True): lifts for s in states if lifts})


def test_a_packed_run_without_a_token_member_estimates_nothing(
    bodies: Bodies, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32 item 5, "computed once" read as at most once: packed bodies under
    ``LIMIT_SAFE_BYTES`` cannot pass a limit, so neither the plan nor the send estimates them;
    with no token rate and no budget no member asks, and no body is read (as at pack 1)."""
    bodies.seen.clear()
    read: list[int] = []
    tally = token_module.tally

    def counting(body: bytes | str) -> Any:
        read.append(len(body))
        return tally(body)

    monkeypatch.setattr(token_module, "tally", counting)
    states = [f"ticket {i}: I was charged twice for order {i * 7}" for i in range(64)]

    async def go() -> None:
        async with create_classifier(
            base_url=bodies.threaded.url + "/v1", api_key_env="NO_SUCH", model="jev-latest"
        ) as c:
            await c.evaluate_batch(states, QUESTIONS, options=BatchOptions(pack=32))

    asyncio.run(go())
    assert len(bodies.seen) == 2
    assert max(len(b) for b in bodies.seen) <= token_module.LIMIT_SAFE_BYTES
    assert read == []


def test_plans_of_one_question_set_derive_its_packed_questions_once() -> None:
    """A stream (``toolnexus batch``) plans each pack's worth of states apart; the derived
    questions, their bytes and the tally of that head are made once per question set and pack
    size, not once per pack (two thirds of the CLI's planning at pack 20, issue 32)."""
    from toolnexus.core import observe as probe
    from toolnexus.evaluate import packplan

    qs = create_classifier().prepare(QUESTIONS)
    long = {k: {**v, "instructions": v["instructions"] * 20} for k, v in QUESTIONS.items()}
    big = create_classifier().prepare(long)  # a head past LIMIT_SAFE_BYTES: estimated
    with probe.counting() as events:
        for questions in (qs, big):
            for chunk in range(4):
                states = [f"ticket {chunk}-{i}: charged twice" for i in range(20)]
                (planned,) = packplan.plan_requests(states, questions, 20)
                assert planned.indices == list(range(20))
    assert [v for e, v in events if e == "pack.questions"] == [20, 20]
