"""Issue 32, "Client CPU" and item 5's "then profile a packed run and cut what else is worth
cutting": the second pass of cuts, each pinned by a count (calls made, objects built), never
by a time. Each test fails on the code before its cut; the outputs they check are unchanged."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import create_classifier
from toolnexus.core import observe as probe
from toolnexus.core.assets import (
    LiftedState,
    lift_images,
    with_images,
)
from toolnexus.core.images import Image
from toolnexus.evaluate import packplan

QUESTIONS: dict[str, Any] = {
    "refund": {"type": "noul", "instructions": "Is the customer asking for money back?"},
}


def synthetic() -> Any:
    """The public seam instead of a patched adapter: every request answered by
    ``serve``'s synthetic model through an ``httpx.MockTransport`` (the classifier's
    ``transport=``), in this process, no socket."""
    import json

    import httpx

    from toolnexus.serve import synthesize

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=synthesize(json.loads(request.content)))

    return httpx.MockTransport(answer)


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000185d6e5e30000000049454e44ae426082"
)


@pytest.mark.parametrize(
    ("state", "walks"),
    [
        pytest.param("charged twice", 0, id="text"),
        pytest.param("", 0, id="empty-text"),
        pytest.param("see <diagram>: charged twice", 0, id="text-naming-a-placeholder"),
        pytest.param("請求が二重に発生しました", 0, id="text-without-spaces"),
        pytest.param({"ticket": "charged twice"}, 2, id="object-still-walked"),
        pytest.param(["charged", "twice"], 3, id="array-still-walked"),
    ],
)
def test_a_text_state_is_lifted_without_walking_it(state: Any, walks: int) -> None:
    """Seed 004, "content parts in the state are lifted into assets": a string holds no content
    part and no Image, so its lift is the state itself, made without the walk (the plan lifts
    every state of a packed batch: three isinstance checks each, a tenth of the plan's CPU)."""
    with probe.counting() as seen:
        assert lift_images(state) == LiftedState(state)
    assert len([e for e, _ in seen if e == "assets.walk"]) == walks


def test_a_text_state_with_attached_images_is_still_lifted_with_them() -> None:
    """The fast path is for a bare string only: a string with ``with_images`` is a
    StateWithImages, whose images are lifted as before."""
    image = Image(PNG, alias="diagram")
    lifted = lift_images(with_images("see <diagram>", {"diagram": image}))
    assert lifted.state == "see <diagram>"
    assert [a.placeholder for a in lifted.assets] == ["<diagram>"]


@pytest.mark.parametrize(
    ("sizes", "pack", "packs"),
    [
        pytest.param([40] * 64, 32, [32, 32], id="two-full-packs"),
        pytest.param([40] * 50, 32, [32, 18], id="a-short-last-pack"),
        # A state past the 32k rule's share cannot join a pack: the binary search shrinks the
        # pack before it (several sizes tried), and the big state is planned alone.
        pytest.param([40] * 10 + [200_000] + [40] * 5, 8, [8, 2, 1, 5], id="shrunk-by-search"),
    ],
)
def test_the_plan_looks_each_state_up_once_and_hands_the_send_its_lifts(
    sizes: list[int], pack: int, packs: list[int]
) -> None:
    """Issue 32 item 5: the plan lifts the states of a pack it checks and the send reuses those
    lifts. The chosen pack's lifts are the ones its last fitting check made: each state is
    looked up once by the check, not again to build the plan (it was twice per state). Object
    states: text is not lifted at all (``test_pack_cpu_objects``)."""
    qs = create_classifier().prepare(QUESTIONS)
    states = [{"ticket": f"{i}: " + "x" * n} for i, n in enumerate(sizes)]
    with probe.counting() as seen:
        planned = packplan.plan_requests(states, qs, pack)
    looked_up = [v for e, v in seen if e == "plan.lift"]
    tried = [v if v > 1 else 0 for e, v in seen if e == "plan.fit"]  # a pack of one: no check
    assert [len(p.indices) for p in planned] == packs
    for p in planned:
        if len(p.indices) > 1:
            assert p.lifted == tuple(LiftedState(states[i]) for i in p.indices)
    # Every look-up is one state of one size the search tried; none is made to build the plan.
    assert len(looked_up) == sum(tried)


def _records() -> list[Any]:
    from toolnexus.records import DecisionRecord, ErrorRecord

    answers = {"refund": {"type": "noul", "noul": 1e-05, "band": "no", "flags": []}}
    return [
        DecisionRecord("t1", "sha", "jev-1", packed=20, position=3, answers=answers),
        DecisionRecord(7, model="請求 «double» \u2028 \x7f", thresholds={"yes": 0.8}),
        DecisionRecord("\ud800 a lone surrogate from JSON input", model="m"),
        ErrorRecord("e1", "backend_http", "HTTP 500: boom"),
    ]


@pytest.mark.parametrize(
    "fmt", [pytest.param("jsonl", id="jsonl"), pytest.param("json", id="json")]
)
def test_a_record_line_builds_no_encoder_and_keeps_every_byte(
    fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32 (the CLI's per-state CPU, "do not change one output byte"): a JSONL or JSON
    record is encoded by encoders built once, not by a ``json.dumps`` that builds one per
    record, and its bytes are those ``json.dumps`` wrote (non-ASCII kept, a lone surrogate
    escaped, 1e-05 as Python spells it)."""
    import json

    from toolnexus.records.codec import codec_for

    def old(obj: Any, lead: str) -> bytes:
        try:
            text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
        return (lead + text + "\n").encode("utf-8")

    records = _records()
    expected = [
        old(r.to_object(), "" if i == 0 or fmt == "jsonl" else ",") for i, r in enumerate(records)
    ]
    built: list[Any] = []
    init = json.JSONEncoder.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        built.append(kwargs)
        init(self, *args, **kwargs)

    monkeypatch.setattr(json.JSONEncoder, "__init__", counting)
    codec = codec_for(fmt)
    got = [codec.encode(r, i == 0) for i, r in enumerate(records)]
    assert built == []
    assert got == expected


def test_a_record_holding_nan_is_still_refused() -> None:
    """``allow_nan`` stays off: a NaN read back from a damaged run never reaches an output."""
    from toolnexus.records import DecisionRecord
    from toolnexus.records.codec import codec_for

    record = DecisionRecord("x", model="m", thresholds={"yes": float("nan")})
    with pytest.raises(ValueError, match="not JSON compliant"):
        codec_for("jsonl").encode(record)


def test_requests_share_one_timeout_and_read_a_sized_reply_in_one_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 32's "a new aiohttp ClientTimeout per request?" and "response read through several
    layers?": the adapter builds one (frozen) ClientTimeout per timeout value, and reads a reply
    that declares its length and no content coding in one call, not through a chunk iterator
    (a coded reply still is: the bomb tests in test_hostile_server.py keep the cap on it)."""
    import asyncio

    import aiohttp

    from serving import ThreadedServer
    from toolnexus import BatchOptions
    from toolnexus.serve import ServeOptions

    timeouts: list[Any] = []
    chunked: list[int] = []
    make, iter_chunked = aiohttp.ClientTimeout, aiohttp.StreamReader.iter_chunked

    def counting_timeout(*args: Any, **kwargs: Any) -> Any:
        timeouts.append(kwargs)
        return make(*args, **kwargs)

    def counting_chunks(self: Any, n: int) -> Any:
        chunked.append(n)
        return iter_chunked(self, n)

    monkeypatch.setattr(aiohttp, "ClientTimeout", counting_timeout)
    monkeypatch.setattr(aiohttp.StreamReader, "iter_chunked", counting_chunks)
    states = [f"ticket {i}: charged twice" for i in range(3)]

    async def go() -> list[Any]:
        async with create_classifier(
            base_url=server.url + "/v1", api_key_env="NO_SUCH", model="jev-latest"
        ) as c:
            options = BatchOptions(concurrency=1, pack=1)
            return await c.evaluate_batch(states, QUESTIONS, options=options)

    with ThreadedServer(ServeOptions(synthetic=True)) as server:
        got = asyncio.run(go())
    assert len(got) == 3 and all(d.answers["refund"].type == "noul" for d in got)
    assert len(timeouts) == 1
    assert chunked == []


def test_a_stream_hands_results_over_without_a_queue_coroutine_per_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 32 (``toolnexus batch`` streams its states: its per-state CPU): a result is put
    on the stream's queue, and taken from it, through a coroutine only when the queue is full
    (or empty); with room, a pack's results pass without one each. Same order, same results."""
    import asyncio

    from toolnexus import BatchOptions

    puts: list[Any] = []
    gets: list[int] = []
    put, get = asyncio.Queue.put, asyncio.Queue.get

    async def counting_put(self: Any, item: Any) -> None:
        puts.append(item)
        await put(self, item)

    async def counting_get(self: Any) -> Any:
        gets.append(self.qsize())
        return await get(self)

    monkeypatch.setattr(asyncio.Queue, "put", counting_put)
    monkeypatch.setattr(asyncio.Queue, "get", counting_get)
    states = [(f"t{i}", f"ticket {i}: charged twice") for i in range(40)]

    async def go() -> list[Any]:
        async def source() -> Any:
            for pair in states:
                yield pair

        async with create_classifier(
            base_url="http://127.0.0.1:9", api_key_env="NO_SUCH", transport=synthetic()
        ) as c:
            options = BatchOptions(concurrency=64, pack=20)
            return [kr async for kr in c.evaluate_stream(source(), QUESTIONS, options=options)]

    got = asyncio.run(go())
    assert sorted(k for k, _ in got) == sorted(k for k, _ in states)
    assert all(r.decision is not None and r.decision.packed == 20 for _, r in got)
    assert [p for p in puts if p is not None] == []  # only each worker's end mark
    assert all(size == 0 for size in gets)  # the consumer awaited only an empty queue
    assert len(gets) < len(states)


@pytest.mark.parametrize(
    ("cache", "lookups"),
    [
        pytest.param(False, 0, id="no-cache-no-lookup"),
        pytest.param(True, 40, id="a-cache-is-still-read-and-written"),
    ],
)
def test_a_packed_run_without_a_cache_never_calls_into_it(cache: bool, lookups: int) -> None:
    """Issue 32 pack CPU: whether the classifier caches is asked once per pack, not once per
    state on the way in and once more on the way out; with a cache, every state is still looked
    up and stored (``packcache``)."""
    import asyncio

    from toolnexus import BatchOptions

    states = [f"ticket {i}: charged twice" for i in range(40)]

    class Memory:
        def __init__(self) -> None:
            self.kept: dict[str, str] = {}

        def get(self, key: str) -> str | None:
            return self.kept.get(key)

        def set(self, key: str, value: str) -> None:
            self.kept[key] = value

    extra: dict[str, Any] = {"cache": Memory()} if cache else {}

    async def go() -> list[Any]:
        async with create_classifier(
            base_url="http://127.0.0.1:9", api_key_env="NO_SUCH", transport=synthetic(), **extra
        ) as c:
            options = BatchOptions(concurrency=2, pack=20)
            return await c.evaluate_batch(states, QUESTIONS, options=options)

    with probe.counting() as seen:
        got = asyncio.run(go())
    calls = [e for e, _ in seen]
    assert [d.packed for d in got] == [20] * 40
    assert calls.count("pack.cache_get") == lookups and calls.count("pack.cache_set") == lookups
