"""The official SDK (typesafe-sdk 0.7.5, sync and async) as a client of ``toolnexus serve``
(issue 11 "Interop, as tests"): every question type, an image state, a zstd body, 429/503 it
must retry through, a replay miss and a 401 with the SDK's own exception types and messages;
and the same requests through toolnexus give the same decisions. No network: 127.0.0.1 only."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typesafe_sdk as ts

from imagegen import png
from paths import REPO
from serving import ThreadedServer
from toolnexus import create_classifier
from toolnexus.core.assets import with_images
from toolnexus.serve import Fault, ServeOptions, parse_faults, synthesize

RECORDINGS = REPO / "recordings"
KEY = "sk-sdk-interop-7d3a"

SDK_QUESTIONS: dict[str, Any] = {
    "refund": ts.Noul(instructions="Is a refund requested?"),
    "team": ts.Choice(instructions="Which team?",
                      criteria={"billing": "Payments and refunds", "technical": "Software"}),
    "urgency": ts.Score(instructions="How urgent?", criteria=["Routine", "Today", "Outage"]),
}  # fmt: skip
WIRE_QUESTIONS: dict[str, Any] = {k: q.model_dump(mode="json") for k, q in SDK_QUESTIONS.items()}
STATES: list[Any] = ["charged twice for INV-7", {"ticket": 8, "text": "login fails"}, ["a", "b"]]


@pytest.fixture
def synthetic() -> Iterator[ThreadedServer]:
    with ThreadedServer(ServeOptions(synthetic=True)) as s:
        yield s


def client(url: str, **kw: Any) -> ts.TypeSafeClient:
    retry = ts.RetryPolicy(backoff_initial=0.01, backoff_max=0.02)
    return ts.TypeSafeClient(base_url=url, api_key=KEY, retry=retry, **kw)


def answers(response: ts.SystemOneResponse) -> dict[str, Any]:
    """The SDK's decoded answers as wire JSON (its score maps are keyed by int)."""
    out = {}
    for key, answer in response.answers.items():
        data = answer.model_dump(mode="json")
        for field in ("legend", "probabilities"):
            if isinstance(answer, ts.ScoreAnswer):
                data[field] = {str(k): v for k, v in data[field].items()}
        out[key] = data
    return out


def test_sync_client_every_text_question_type(synthetic: ThreadedServer) -> None:
    with client(synthetic.url) as c:
        for state in STATES:
            r = c.system_one(state=state, questions=SDK_QUESTIONS)
            expected = synthesize({"model": "jev-latest", "questions": WIRE_QUESTIONS,
                                   "state": state})  # fmt: skip
            assert r.model == "jev-1.13.0" and r.usage.input_tokens
            assert answers(r) == expected["answers"]
            assert r.request_id.startswith("req_serve_")
            assert set(r.nouls) == {"refund"} and set(r.choices) == {"team"}
            assert r.scores["urgency"].legend[2] == "Outage"
        names = [m.name for m in c.models.list().models]
    assert "jev-latest" in names


def test_async_client_every_type_including_box_on_an_image(synthetic: ThreadedServer) -> None:
    """Box (Jev 1.14) needs an image: the SDK sends it as multipart with an asset-0 part."""
    photo = png(48, 32)

    async def go() -> ts.SystemOneResponse:
        async with ts.AsyncTypeSafeClient(base_url=synthetic.url, api_key=KEY) as c:
            image = ts.Image(photo)
            return await c.system_one(
                state=image,
                questions={**SDK_QUESTIONS, "dog": ts.Box(instructions="The dog")},
                model="jev-preview",
            )

    r = asyncio.run(go())
    assert r.model == "jev-1.14.0"
    box = r.boxes["dog"].box
    assert 0 <= box.top < box.bottom <= 1 and 0 <= box.left < box.right <= 1
    assert set(r.answers) == {"refund", "team", "urgency", "dog"}
    assert synthetic.seen[-1]["content-type"].startswith("multipart/form-data; boundary=")


def test_an_image_state_answers_alike_through_the_sdk_and_toolnexus(
    synthetic: ThreadedServer,
) -> None:
    """Wire reference: the SDK's placeholder is random per run; serve keys on the bytes, so the
    SDK (random placeholder) and toolnexus (a placeholder derived from the bytes) agree."""
    photo = png(40, 40, (10, 200, 30))
    with client(synthetic.url) as c:
        image = ts.Image(photo)
        with c.attach_assets(image):
            sdk = c.system_one(state=f"What is in {image}?", questions=SDK_QUESTIONS,
                               model="jev-preview")  # fmt: skip

    async def ours() -> Any:
        async with create_classifier(base_url=f"{synthetic.url}/v1", model="jev-preview",
                                     api_key_env="NO_KEY_NEEDED") as judge:  # fmt: skip
            return await judge.evaluate(with_images("What is in <pic>?", {"pic": photo}),
                                        WIRE_QUESTIONS)  # fmt: skip

    decision = asyncio.run(ours())
    assert answers(sdk) == decision.to_wire()["answers"]
    assert all(h["content-type"].startswith("multipart/form-data") for h in synthetic.seen)


def test_a_body_over_1_kib_goes_zstd_compressed_and_is_decoded(synthetic: ThreadedServer) -> None:
    """Wire reference: 'every body of 1,024 bytes or more ... goes with Content-Encoding: zstd'."""
    state = "a long ticket. " * 200
    with client(synthetic.url) as c:
        r = c.system_one(state=state, questions=SDK_QUESTIONS)
    assert synthetic.seen[-1].get("content-encoding") == "zstd"
    expected = synthesize({"model": "jev-latest", "questions": WIRE_QUESTIONS, "state": state})
    assert answers(r) == expected["answers"]


@pytest.mark.parametrize("status", [429, 503])
def test_the_sdk_retries_through_429_and_503(synthetic: ThreadedServer, status: int) -> None:
    """Issue 11: '429/503 faults the SDK must retry through' (it honours retry-after-ms)."""
    (fault,) = parse_faults(str(status), retry_after_ms=20)
    assert fault.retry_after_ms == "20" and fault.retry_after == "1"
    synthetic.server.push(fault, fault)
    with client(synthetic.url) as c:
        r = c.system_one(state="charged twice", questions=SDK_QUESTIONS)
    assert r.answers
    counts = [h.get("x-typesafe-retry-count") for h in synthetic.seen]
    assert counts == [None, "1", "2"]


def test_the_sdk_gives_up_with_its_rate_limit_error(synthetic: ThreadedServer) -> None:
    synthetic.server.push(*parse_faults("429,429,429", retry_after_ms=10))
    with client(synthetic.url) as c, pytest.raises(ts.TypeSafeRateLimitError) as info:
        c.system_one(state="x", questions=SDK_QUESTIONS)
    assert info.value.retry_after_ms == 10.0
    assert "429 Rate limit exceeded: 1200 requests per minute." in str(info.value)
    assert "(request_id=req_serve_" in str(info.value)


def test_a_reset_is_retried_as_a_connection_error(synthetic: ThreadedServer) -> None:
    synthetic.server.push(Fault.reset())
    with client(synthetic.url) as c:
        assert c.system_one(state="x", questions=SDK_QUESTIONS).answers
    assert len(synthetic.seen) == 2


def test_a_replay_miss_reaches_the_sdk_as_an_api_error_naming_the_fix() -> None:
    with (
        ThreadedServer(ServeOptions(replay=RECORDINGS)) as s,
        client(s.url) as c,
        pytest.raises(ts.TypeSafeAPIError) as info,
    ):
        c.system_one(state="nobody recorded this", questions=SDK_QUESTIONS)
    e = info.value
    assert type(e) is ts.TypeSafeAPIError and e.status == 409  # 409 has no subclass in the SDK
    text = str(e)
    assert text.startswith(f"POST {s.url}/v1/systemone: 409 replay miss: no recording in ")
    assert "'nobody recorded this'" in text and "--record" in text
    assert e.body["questions_sha256"] and e.body["state_preview"] == "nobody recorded this"


def test_a_recorded_request_replays_through_the_sdk() -> None:
    import json

    rec = json.loads(next(RECORDINGS.glob("0470*.json")).read_text(encoding="utf-8"))
    questions = {k: ts.Noul(**{kk: v for kk, v in q.items() if kk != "type"})
                 for k, q in rec["questions"].items()}  # fmt: skip
    with ThreadedServer(ServeOptions(replay=RECORDINGS)) as s, client(s.url) as c:
        r = c.system_one(state=rec["state"], questions=questions)
    assert r.model == rec["response"]["model"]
    assert answers(r) == rec["response"]["answers"]


def test_a_wrong_key_is_the_sdks_authentication_error_without_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SERVE_SDK_KEY", "sk-the-right-one")
    with ThreadedServer(ServeOptions(synthetic=True, require_key_env="SERVE_SDK_KEY")) as s:
        with client(s.url) as c, pytest.raises(ts.TypeSafeAuthenticationError) as info:
            c.system_one(state="x", questions=SDK_QUESTIONS)
        with ts.TypeSafeClient(base_url=s.url, api_key="sk-the-right-one") as ok:
            assert ok.system_one(state="x", questions=SDK_QUESTIONS).answers
    text = str(info.value)
    assert "401 Invalid API key." in text and KEY not in text
    assert len(s.seen) == 2  # a 401 is not retried


def test_a_v1_base_url_is_the_sdks_not_found(synthetic: ThreadedServer) -> None:
    """Wire reference: 'a base ending in /v1 gives /v1/v1/... and a 404' (as the real API)."""
    with client(synthetic.url + "/v1") as c, pytest.raises(ts.TypeSafeNotFoundError):
        c.system_one(state="x", questions=SDK_QUESTIONS)


def test_validation_errors_reach_the_sdk_with_the_api_messages(
    synthetic: ThreadedServer,
) -> None:
    too_many = {"c": ts.Choice(instructions="?", criteria={f"o{i}": None for i in range(256)})}
    with client(synthetic.url) as c:
        with pytest.raises(ts.TypeSafeBadRequestError) as info:
            c.system_one(state="x", questions=too_many)
        assert "400 Too many choices. Must have at most 255 choices." in str(info.value)
        with pytest.raises(ts.TypeSafeUnprocessableEntityError) as info422:
            c.system_one(state="x", questions=SDK_QUESTIONS, extra_body={"state": 5})
    assert "422 state.str: Input should be a valid string" in str(info422.value)


def test_toolnexus_and_the_sdk_get_the_same_decisions_for_a_batch(
    synthetic: ThreadedServer,
) -> None:
    """Issue 11: 'The same requests through toolnexus give the same decisions as through the
    SDK (same server, same answers)'."""
    states = [f"ticket {i}: {'refund please' if i % 2 else 'app crashes'}" for i in range(10)]
    with client(synthetic.url) as c:
        sdk = [answers(c.system_one(state=s, questions=SDK_QUESTIONS)) for s in states]

    async def ours() -> list[Any]:
        async with create_classifier(base_url=f"{synthetic.url}/v1",
                                     api_key_env="NO_KEY_NEEDED") as judge:  # fmt: skip
            return await judge.evaluate_batch(states, WIRE_QUESTIONS, concurrency=4)

    decisions = asyncio.run(ours())
    assert [d.to_wire()["answers"] for d in decisions] == sdk


def test_an_unknown_answer_type_is_dropped_by_the_sdk_with_a_warning(
    caplog: pytest.LogCaptureFixture, synthetic: ThreadedServer
) -> None:
    """The synthetic placeholder for a raw type: the SDK drops types it does not model."""
    with client(synthetic.url) as c, caplog.at_level(logging.WARNING, "typesafe_sdk"):
        r = c.system_one(
            state="x", questions={**SDK_QUESTIONS, "odd": {"type": "vibe", "instructions": "?"}}
        )  # type: ignore[dict-item]
    assert "odd" not in r.answers and "vibe" in caplog.text


def test_an_image_recorded_by_toolnexus_replays_to_the_sdk(tmp_path: Path) -> None:
    """toolnexus ``eval --image --record`` writes the image's sha256 under ``assets``; serve
    ``--replay`` then answers the SDK, whose placeholder for the same bytes is random."""
    from clirun import run_cli

    photo = tmp_path / "shelf.png"
    photo.write_bytes(png(36, 36, (90, 90, 250)))
    qfile = tmp_path / "q.yaml"
    qfile.write_text(
        "model: jev-preview\nquestions:\n  stocked:\n    type: noul\n"
        "    instructions: Is the shelf stocked?\n",
        encoding="utf-8",
    )
    record = tmp_path / "rec"
    with ThreadedServer(ServeOptions(synthetic=True)) as upstream:
        ran = run_cli("eval", str(qfile), "--state-text", "Look at <shelf>.", "--image",
                      f"shelf={photo}", "--base-url", f"{upstream.url}/v1", "--record",
                      str(record), "--format", "json")  # fmt: skip
        assert ran.code == 0, ran.stderr
    (recorded,) = record.glob("*.json")
    with ThreadedServer(ServeOptions(replay=record)) as s, client(s.url) as c:
        image = ts.Image(photo.read_bytes())
        r = c.system_one(state=f"Look at {image}.", questions={
            "stocked": ts.Noul(instructions="Is the shelf stocked?")},
            model="jev-preview", assets={str(image): image})  # fmt: skip
    import json

    assert answers(r) == json.loads(recorded.read_text(encoding="utf-8"))["response"]["answers"]
