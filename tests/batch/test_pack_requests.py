"""Packed requests end to end against ``toolnexus serve`` on 127.0.0.1 (issue 20): the decisions
of pack 1 and pack N are equal but for calibrated, packed and usage; usage sums to what the
server charged; one invalid state is re-asked alone; a 413 splits; plan_packs shrinks a pack
that would pass a limit."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imagegen import png
from serving import ThreadedServer
from toolnexus import (
    BatchOptions,
    ChoiceQuestion,
    ClassifierUsage,
    Decision,
    InvalidDecision,
    NoulCriteria,
    NoulQuestion,
    RawQuestion,
    ScoreQuestion,
    create_classifier,
    static_classifier,
    with_images,
)
from toolnexus.config import check_pack
from toolnexus.core.assets import lift_with_questions
from toolnexus.core.canonical import canonical_json
from toolnexus.core.imagelimits import ImageLimits
from toolnexus.core.questions import Question, questions_to_wire
from toolnexus.evaluate.packed import (
    evaluate_pack,
    packs,
)
from toolnexus.evaluate.packing import PACKED_CACHE_KIND, STATES_KEY, pack_lifted, pack_questions
from toolnexus.evaluate.packoutcome import (
    PackOutcome,
    RequestFacts,
)
from toolnexus.evaluate.packplan import (
    pack_violation,
    packed_body,
    plan_packs,
)
from toolnexus.scheduler import Outcome
from toolnexus.serve import ScriptedReply, ScriptedRequest, ServeOptions, synthesize

MODEL = "jev-preview"  # the image model: states with images pack too
RED, BLUE, GREEN = png(20, 20, (255, 0, 0)), png(20, 20, (0, 0, 255)), png(20, 20, (0, 160, 0))

QUESTIONS: dict[str, Any] = {
    "refund": {"type": "noul", "instructions": "Is a refund requested?"},
    "desk": {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {"billing": "money that moved", "tech": "the product broke"},
    },
    "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["later", "now"]},
}
STATES: list[Any] = [
    "charged twice",
    {"ticket": "app crashes", "tags": ["ios", 3]},
    with_images("Is <pic> red?", {"pic": RED}),
    with_images("Is <pic> red?", {"pic": BLUE}),  # the same alias, other bytes
    ["a", "list", "state"],
]


class Served:
    """One ``toolnexus serve`` on a background loop for a test module; ``script`` is swapped
    per test (None: plain --synthetic)."""

    def __init__(self) -> None:
        self.script: Callable[[ScriptedRequest], ScriptedReply | None] | None = None
        self.bodies: list[Any] = []
        self.threaded = ThreadedServer(ServeOptions(synthetic=True, script=self._script))

    def _script(self, request: ScriptedRequest) -> ScriptedReply | None:
        if request.endpoint == "systemone":
            self.bodies.append(_request_json(request))
        reply = None if self.script is None else self.script(request)
        if reply is not None and reply.status == 200:
            # A scripted answer is charged as the server's own (its usage is in its body).
            self.threaded.server.traffic.charge(json.loads(reply.body))
        return reply

    @property
    def url(self) -> str:
        return self.threaded.url + "/v1"

    def charged(self) -> ClassifierUsage:
        usage = self.threaded.server.traffic.usage
        return ClassifierUsage(usage["input_tokens"], usage["output_tokens"])

    def reset(self) -> None:
        self.script = None
        self.bodies.clear()
        self.threaded.server.traffic.usage.clear()


def _request_json(request: ScriptedRequest) -> Any:
    body = request.body
    if body.startswith(b"--"):  # multipart: the request part is the JSON
        head = body.split(b"\r\n\r\n", 1)[1]
        return json.loads(head.split(b"\r\n--", 1)[0])
    return json.loads(body)


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    s = Served()
    with s.threaded:
        yield s


@pytest.fixture
def server(served: Served) -> Iterator[Served]:
    served.reset()
    yield served
    served.reset()


@asynccontextmanager
async def _classifier(url: str, **options: Any) -> Any:
    async with create_classifier(
        base_url=url, api_key_env="NO_SUCH", model=MODEL, retry_base_ms=1, **options
    ) as c:
        yield c


def _run(url: str, states: list[Any], questions: Any, sizes: list[int], **opts: Any) -> Any:
    """Evaluate ``states`` in consecutive packs of ``sizes``: (results, requests)."""

    async def go() -> tuple[list[Any], list[RequestFacts]]:
        async with _classifier(url, **opts) as c:
            qs = c.prepare(questions)
            results: list[Any] = []
            requests: list[RequestFacts] = []
            start = 0
            for size in sizes:
                out: PackOutcome = await evaluate_pack(c.pipeline, states[start : start + size], qs)
                results += out.results
                requests += out.requests
                start += size
            return results, requests

    return asyncio.run(go())


def _alike(packed: Decision, alone: Decision) -> bool:
    """Equal but for calibrated, packed (and its position) and usage (issue 20 acceptance)."""
    return (
        dataclasses.replace(
            packed,
            calibrated=alone.calibrated,
            packed=alone.packed,
            position=alone.position,
            usage=alone.usage,
        )
        == alone
    )


def _total(usages: list[ClassifierUsage]) -> ClassifierUsage:
    return ClassifierUsage(
        sum(u.input_tokens for u in usages), sum(u.output_tokens for u in usages)
    )


# --- random question sets and states ---------------------------------------------------------

_KEYS = st.text(alphabet="abz:09_", min_size=1, max_size=6)  # ':' in a caller's key round-trips
_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=24)
_INSTRUCTIONS = st.one_of(_TEXT.filter(bool), st.fixed_dictionaries({"task": _TEXT}))


def _question() -> st.SearchStrategy[Question]:
    options = st.lists(_TEXT.filter(bool), min_size=1, max_size=5, unique=True)
    return st.one_of(
        st.builds(NoulQuestion, _INSTRUCTIONS),
        st.builds(NoulQuestion, _INSTRUCTIONS, st.builds(NoulCriteria, _TEXT, _TEXT)),
        st.builds(
            ChoiceQuestion, _INSTRUCTIONS, options.map(lambda os: {o: f"when {o}" for o in os})
        ),
        st.builds(ScoreQuestion, _INSTRUCTIONS, st.lists(_TEXT, min_size=2, max_size=6)),
        st.builds(RawQuestion, st.just("tally"), _INSTRUCTIONS),  # raw: a type of its own
    )


_IMAGES = {"red": RED, "blue": BLUE, "green": GREEN}
_STATE = st.one_of(
    _TEXT.filter(bool),
    st.dictionaries(_TEXT, st.one_of(_TEXT, st.integers(-1000, 1000)), max_size=3),
    st.lists(_TEXT, min_size=1, max_size=3),
    st.sampled_from(sorted(_IMAGES)).map(
        lambda colour: with_images("What colour is <pic>?", {"pic": _IMAGES[colour]})
    ),
)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    questions=st.dictionaries(_KEYS, _question(), min_size=1, max_size=4),
    states=st.lists(_STATE, min_size=2, max_size=7),
)
def test_pack_n_decides_every_state_as_pack_1_does(
    server: Served, questions: dict[str, Question], states: list[Any]
) -> None:
    """Issue 20: "the decisions of --pack 1 and --pack N are equal but for calibrated, packed
    and usage; usage sums to the server's totals" — every question type, raw included; text,
    objects, arrays and images whose aliases collide."""
    server.reset()
    alone, _ = _run(server.url, states, questions, [1] * len(states))
    charged_alone = server.charged()
    server.reset()
    packed, requests = _run(server.url, states, questions, [len(states)])
    assert len(server.bodies) == 1  # one request for the whole pack
    for got, want in zip(packed, alone, strict=True):
        assert isinstance(got, Decision) and isinstance(want, Decision)
        assert _alike(got, want)
        assert (got.packed, got.calibrated, got.reasked) == (len(states), False, False)
        assert (want.packed, want.calibrated) == (1, True)
    charged = server.charged()
    assert _total([d.usage for d in packed]) == charged == _total([r.usage for r in requests])
    assert charged.input_tokens < charged_alone.input_tokens  # one overhead, not N


def test_pack_1_requests_are_todays_bytes(server: Served) -> None:
    """Issue 20: "pack=1 requests are byte-identical to today's"."""

    async def go() -> None:
        async with _classifier(server.url) as c:
            qs = c.prepare(QUESTIONS)
            for state in STATES:
                await c.evaluate(state, QUESTIONS)
                await evaluate_pack(c.pipeline, [state], qs)

    asyncio.run(go())
    assert server.bodies[0::2] == server.bodies[1::2]
    assert all(STATES_KEY not in json.dumps(b["state"]) for b in server.bodies)


def test_colliding_aliases_are_answered_from_their_own_images(server: Served) -> None:
    """Issue 20 item 1: "two states that both say <before> with different bytes get distinct
    placeholders" — and the server answers each from its own image, as alone."""
    states = STATES[2:4]
    alone, _ = _run(server.url, states, QUESTIONS, [1, 1])
    packed, _ = _run(server.url, states, QUESTIONS, [2])
    assert server.bodies[-1]["state"] == {STATES_KEY: ["Is <pic> red?", "Is <pic@1> red?"]}
    assert sorted(server.bodies[-1]["assets"]) == ["<pic>", "<pic@1>"]
    assert all(_alike(p, a) for p, a in zip(packed, alone, strict=True))
    assert alone[0].answers != alone[1].answers  # the images differ, so do the answers


# --- failures isolated per state -------------------------------------------------------------


def _poison(request: ScriptedRequest, *, alone_too: bool) -> ScriptedReply | None:
    """Answer the state "poison" with a noul of 1.5 (decodes, fails validation)."""
    body = _request_json(request)
    state = body["state"]
    answer = synthesize(body)
    if isinstance(state, dict) and STATES_KEY in state:
        index = state[STATES_KEY].index("poison")
        answer["answers"][f"{index}:refund"]["noul"] = 1.5
    elif state == "poison" and alone_too:
        answer["answers"]["refund"]["noul"] = 1.5
    else:
        return None
    return ScriptedReply(200, json.dumps(answer).encode())


@pytest.mark.parametrize("fail_closed", [False, True])
def test_one_invalid_state_is_reasked_alone_and_only_it(server: Served, fail_closed: bool) -> None:
    """Issue 20 item 6: "a response that fails validation for some states re-asks only those
    states, once, alone and unpacked, and the record says it was re-asked"; the re-ask is
    charged to that state on top of its share, so the totals are what the server charged."""
    server.script = lambda r: _poison(r, alone_too=False)
    states = ["fine", "poison", "also fine"]
    alone, _ = _run(server.url, states, QUESTIONS, [1, 1, 1])
    server.bodies.clear()
    server.threaded.server.traffic.usage.clear()

    async def go() -> PackOutcome:
        async with _classifier(server.url) as c:
            return await evaluate_pack(
                c.pipeline, states, c.prepare(QUESTIONS), fail_closed=fail_closed
            )

    out = asyncio.run(go())
    assert [b["state"] for b in server.bodies] == [{STATES_KEY: states}, "poison"]
    first, reasked, last = out.results
    assert isinstance(reasked, Decision) and isinstance(first, Decision)
    assert isinstance(last, Decision) and not last.reasked
    assert (reasked.reasked, reasked.packed, reasked.calibrated) == (True, 1, True)
    assert reasked.answers == alone[1].answers
    assert (first.reasked, first.packed) == (False, 3)
    assert _total([d.usage for d in out.results]) == server.charged()
    assert _total([r.usage for r in out.requests]) == server.charged()
    assert reasked.usage.input_tokens > alone[1].usage.input_tokens  # its share + its re-ask


@pytest.mark.parametrize("fail_closed", [False, True])
def test_an_invalid_reask_is_what_an_invalid_decision_is_at_pack_1(
    server: Served, fail_closed: bool
) -> None:
    """Issue 20 item 6: "if the re-ask is invalid too, the state's result is what seed 004
    gives an invalid decision at pack 1": returned as decoded, or (fail closed) the error."""
    server.script = lambda r: _poison(r, alone_too=True)

    async def go() -> tuple[PackOutcome, Any]:
        async with _classifier(server.url) as c:
            qs = c.prepare(QUESTIONS)
            out = await evaluate_pack(c.pipeline, ["fine", "poison"], qs, fail_closed=fail_closed)
            try:
                at_1: Any = await c.evaluate_prepared("poison", qs, fail_closed=fail_closed)
            except InvalidDecision as e:
                at_1 = e
            return out, at_1

    out, at_1 = asyncio.run(go())
    got = out.results[1]
    assert isinstance(out.results[0], Decision)
    assert type(got) is type(at_1)
    if fail_closed:
        assert isinstance(got, InvalidDecision) and str(got) == str(at_1)
    else:
        assert isinstance(got, Decision) and got.reasked
        assert got.answers == at_1.answers
        assert got.validate(create_classifier().prepare(QUESTIONS)) is not None


def _as_pack(body: Any) -> Any:
    return body if isinstance(body["state"], dict) else {"state": {}}


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(ScriptedReply(413, b'{"detail": "Request Entity Too Large"}'), id="413"),
        pytest.param(
            ScriptedReply(400, b'{"detail": {"error_type": "max_tokens_exceeded"}}'),
            id="context-400",
        ),
    ],
)
def test_a_413_or_a_context_error_splits_the_pack(server: Served, reply: ScriptedReply) -> None:
    """Issue 20 item 6: "a 413 or a context-length error splits the pack and retries"."""

    def too_big(request: ScriptedRequest) -> ScriptedReply | None:
        state = _request_json(request)["state"]
        if isinstance(state, dict) and len(state.get(STATES_KEY, [])) > 2:
            return reply
        return None

    server.script = too_big
    states = [f"state {i}" for i in range(5)]
    alone, _ = _run(server.url, states, QUESTIONS, [1] * 5)
    server.bodies.clear()
    packed, requests = _run(server.url, states, QUESTIONS, [5])
    sizes = [len(b["state"].get(STATES_KEY, [])) or 1 for b in map(_as_pack, server.bodies)]
    assert sizes == [5, 2, 3, 1, 2]  # 5 -> 2 + 3, 3 -> 1 + 2
    assert all(_alike(p, a) for p, a in zip(packed, alone, strict=True))
    assert [d.packed for d in packed] == [2, 2, 1, 2, 2]
    assert [r.error is not None for r in requests] == [True, False, True, False, False]


def test_a_failure_that_remains_is_every_packed_states_result(server: Served) -> None:
    """One request, one failure: each state gets what it would get alone (no silent loss)."""
    server.script = lambda r: ScriptedReply(404, b'{"detail": "Not Found"}')
    results, requests = _run(server.url, ["a", "b"], QUESTIONS, [2])
    assert [type(r).__name__ for r in results] == ["HTTPStatusError"] * 2
    assert len(requests) == 1 and requests[0].packed and requests[0].sent


# --- the cache -------------------------------------------------------------------------------


class DictCache:
    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        return self.data.get(key)

    def set(self, key: str, value: str) -> None:
        self.data[key] = value


def test_packed_answers_are_cached_under_their_own_kind(server: Served) -> None:
    """Issue 20 item 7: "a packed answer is stored under a distinct, documented kind, so it is
    never served to an unpacked request or vice versa"; cached states are not sent."""
    cache = DictCache()
    states = ["a", "b", "c"]
    first, _ = _run(server.url, states, QUESTIONS, [3], cache=cache)
    assert len(server.bodies) == 1
    again, requests = _run(server.url, states, QUESTIONS, [3], cache=cache)
    assert len(server.bodies) == 1 and requests == []  # nothing sent
    assert all(d.cached and d.packed == 3 and not d.calibrated for d in again)
    assert [dataclasses.replace(d, cached=False) for d in again] == first
    alone, _ = _run(server.url, states, QUESTIONS, [1, 1, 1], cache=cache)
    assert len(server.bodies) == 4  # the packed answers are not served to pack 1
    assert all(not d.cached and d.packed == 1 for d in alone)
    mixed, _ = _run(server.url, ["a", "new", "b"], QUESTIONS, [3], cache=cache)
    assert server.bodies[-1]["state"] == "new"  # the pack shrank to the one state not cached
    assert [d.cached for d in mixed] == [True, False, True]
    assert PACKED_CACHE_KIND == "packed-decision"


def test_other_styles_evaluate_state_by_state() -> None:
    """Issue 20 item 2 (seed 004: "Each state goes through the per-state evaluate (every
    style)"): a static classifier with pack N answers each state as it does alone."""
    questions = {"r": {"type": "noul", "instructions": "?"}}
    recorded = [
        {"state": s, "questions": questions, "answers": {"r": {"type": "noul", "noul": 0.25 * i}}}
        for i, s in enumerate(["a", "b", "c"])
    ]

    async def go() -> tuple[PackOutcome, list[Decision]]:
        async with static_classifier(recorded) as c:
            qs = c.prepare(questions)
            alone = [await c.evaluate(s, questions) for s in "abc"]
            return await evaluate_pack(c.pipeline, list("abc"), qs), alone

    out, alone = asyncio.run(go())
    assert out.results == alone
    assert all(isinstance(d, Decision) and d.packed == 1 and d.calibrated for d in out.results)
    assert not packs(static_classifier(recorded).pipeline)
    assert packs(create_classifier().pipeline)


# --- planning --------------------------------------------------------------------------------


def _wire(questions: dict[str, Question], count: int) -> dict[str, Any]:
    return questions_to_wire(pack_questions(questions, count))


def _violation(states: list[Any], qs: dict[str, Question], limits: ImageLimits) -> str | None:
    packed = pack_lifted([lift_with_questions(s, qs) for s in states])
    wire = _wire(qs, len(states))
    return pack_violation(packed, wire, packed_body("jev-latest", packed, wire), limits)


def test_plan_packs_shrinks_a_pack_that_would_pass_the_context() -> None:
    """Issue 20 item 5: "a pack never exceeds the request limits — the scheduler's upper-bound
    token estimate ... against the 32k rule and of the request against 64k — shrinking the pack
    rather than failing"; every planned pack fits and one more state would not."""
    qs = create_classifier().prepare(QUESTIONS)
    big = ["word " * 1200 + str(i) for i in range(12)]  # ~5k upper tokens each
    plan = plan_packs(big, qs, "auto")
    assert [i for p in plan for i in p] == list(range(12))
    assert 1 < max(len(p) for p in plan) < 12
    for pack in plan:
        assert _violation([big[i] for i in pack], qs, ImageLimits()) is None
        if pack[-1] + 1 < len(big):
            grown = [big[i] for i in [*pack, pack[-1] + 1]]
            assert "over" in (_violation(grown, qs, ImageLimits()) or "")
    assert plan_packs(big, qs, 3) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]


def test_plan_packs_keeps_the_image_budget_and_the_cap() -> None:
    """The 32 MiB image budget (here a small one) shrinks packs too; "auto" stops at the cap;
    pack=1 is singletons; a state that cannot be lifted is planned alone."""
    qs = create_classifier().prepare(QUESTIONS)
    limits = ImageLimits(request_image_max_bytes=3 * len(RED))
    pics = [with_images("<p> ?", {"p": png(20, 20, (i, 0, 0))}) for i in range(7)]
    assert [len(p) for p in plan_packs(pics, qs, "auto", image_limits=limits)] == [3, 3, 1]
    small = [f"s{i}" for i in range(45)]
    assert [len(p) for p in plan_packs(small, qs, "auto")] == [20, 20, 5]
    assert [len(p) for p in plan_packs(small, qs, "auto", cap=7)][:2] == [7, 7]
    assert plan_packs(small[:3], qs, 1) == [[0], [1], [2]]
    broken = {"type": "image_url", "image_url": {"url": "data:text/plain;base64,eA=="}}
    assert plan_packs(["a", broken, "b", "c"], qs, 4) == [[0], [1], [2, 3]]


@pytest.mark.parametrize(
    "pack", [pytest.param(0, id="zero"), pytest.param(True, id="bool"), pytest.param("4", id="str")]
)
def test_pack_takes_a_whole_number_or_auto(pack: Any) -> None:
    with pytest.raises(ValueError, match="pack takes a whole number >= 1 or 'auto'"):
        check_pack(pack)


def test_the_planned_estimate_is_the_request_sent(server: Served) -> None:
    """The limits are checked on the bytes the classifier sends (no request_params): the body
    plan_packs estimates is the request's JSON part, byte for byte."""
    _run(server.url, STATES, QUESTIONS, [len(STATES)])
    qs = create_classifier().prepare(QUESTIONS)
    packed = pack_lifted([lift_with_questions(s, qs) for s in STATES])
    expected = json.loads(packed_body(MODEL, packed, _wire(qs, len(STATES))))
    assert server.bodies[-1] == expected
    assert canonical_json(server.bodies[-1]) == packed_body(MODEL, packed, _wire(qs, len(STATES)))


def test_a_body_that_is_no_packed_answer_reasks_every_state_alone(server: Served) -> None:
    """One bad response never loses a state: when no state has an answer, each is asked
    again, once, alone."""

    def broken(request: ScriptedRequest) -> ScriptedReply | None:
        if isinstance(_request_json(request)["state"], dict):
            answer = {"model": "jev-1.14.0", "answers": [], "usage": {"input_tokens": 7}}
            return ScriptedReply(200, json.dumps(answer).encode())
        return None

    server.script = broken
    results, requests = _run(server.url, ["a", "b"], QUESTIONS, [2])
    assert [b["state"] for b in server.bodies] == [{STATES_KEY: ["a", "b"]}, "a", "b"]
    assert all(isinstance(d, Decision) and d.reasked and d.packed == 1 for d in results)
    assert [r.packed for r in requests] == [True, False, False]
    assert (
        _total([d.usage for d in results])
        == server.charged()
        == _total([r.usage for r in requests])
    )


def test_each_packed_state_reports_its_own_metric_event(server: Served) -> None:
    """One classifier.evaluate event per state, as at pack 1, saying how it was asked."""
    events: list[dict[str, Any]] = []
    _run(server.url, ["a", "b", "c"], QUESTIONS, [3], on_metric=events.append)
    evaluated = [e for e in events if e["event"] == "classifier.evaluate"]
    assert [(e["packed"], e["calibrated"], e["status"]) for e in evaluated] == [
        (3, False, "ok")
    ] * 3
    assert sum(e["input_tokens"] for e in evaluated) == server.charged().input_tokens


class Charged:
    """An admission member that sums what each request was settled on: a spend budget's view."""

    def __init__(self) -> None:
        self.requests = 0
        self.usage = ClassifierUsage()

    async def acquire(self, ticket: Any) -> None:
        self.requests += 1

    async def release(self, ticket: Any, usage: ClassifierUsage, outcome: Outcome) -> None:
        self.usage = _total([self.usage, usage])


def test_a_packed_batchs_members_are_settled_on_what_the_server_charged(server: Served) -> None:
    """Issue 23's budget over issue 20's packs: every request a packed batch sends (the packs
    and the one re-ask of an invalid packed answer) reaches the admission members once, settled
    on its charged usage, so the members' usage sums to the server's ``/_stats`` totals."""

    def poison_in_its_pack(request: ScriptedRequest) -> ScriptedReply | None:
        state = _request_json(request)["state"]
        if isinstance(state, dict) and "poison" in state.get(STATES_KEY, ()):
            return _poison(request, alone_too=False)
        return None

    server.script = poison_in_its_pack
    states = [f"ticket {i}" for i in range(9)] + ["poison"]
    member = Charged()

    async def go() -> list[Any]:
        async with _classifier(server.url) as c:
            options = BatchOptions(concurrency=2, pack=4, admission=(member,))
            return await c.states(states, options=options).evaluate(**QUESTIONS)

    def served() -> tuple[int, ClassifierUsage]:
        """The module's server's ``/_stats`` totals so far: answers, and usage charged."""
        with httpx.Client(trust_env=False) as client:
            stats = client.get(server.threaded.url + "/_stats").json()
        usage = stats["usage"]
        charged = ClassifierUsage(usage["input_tokens"], usage["output_tokens"])
        return sum(stats["statuses"].values()), charged

    sent_before, charged_before = served()
    results = asyncio.run(go())
    sent, charged = served()
    assert all(r.ok for r in results)
    assert results[-1].decision is not None and results[-1].decision.reasked
    # packs of 4, 4 and 2, and the one re-ask
    assert member.requests == sent - sent_before == len(server.bodies) == 4
    assert _total([member.usage, charged_before]) == charged
    assert member.usage.input_tokens > 0
