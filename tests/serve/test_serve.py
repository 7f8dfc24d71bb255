"""``toolnexus serve`` as a library (issue 11): routes, the synthetic model, validation with the
API's statuses and body shapes, bodies (JSON, multipart, zstd, the size cap), faults, auth and
replay. The proxy, the CLI and the official SDK have their own test files."""

from __future__ import annotations

import asyncio
import gzip
import json
import math
from pathlib import Path
from typing import Any

import httpx
import pytest

from imagegen import png
from paths import REPO
from serving import multipart, post, run_with
from toolnexus import create_classifier, parse_decision, validate_decision
from toolnexus.core.questions import normalize_questions
from toolnexus.serve import (
    PLACEHOLDER,
    Fault,
    ReplayIndex,
    ServeOptions,
    Server,
    serve,
    synthesize,
)

RECORDINGS = REPO / "recordings"

QUESTIONS: dict[str, Any] = {
    "refund": {"type": "noul", "instructions": "Is a refund requested?"},
    "team": {
        "type": "choice",
        "instructions": "Which team?",
        "criteria": {"billing": "Payments", "technical": "Software", "sales": "Buying"},
    },
    "urgency": {
        "type": "score",
        "instructions": "How urgent?",
        "criteria": ["Routine", "Today", "Outage"],
    },
}


def body(state: Any = "charged twice", questions: Any = None, **extra: Any) -> dict[str, Any]:
    return {"model": "jev-latest", "state": state, "questions": questions or QUESTIONS, **extra}


def synthetic(**kw: Any) -> ServeOptions:
    return ServeOptions(synthetic=True, **kw)


# --- the synthetic model ------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 7, 20, 255])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_synthetic_choices_sum_to_one_at_two_decimals_and_pass_validate_decision(
    n: int, seed: int
) -> None:
    """Issue 11: 'probabilities summing to 1 at two decimals, confidences ... always passing
    validate_decision'."""
    questions = {
        "c": {
            "type": "choice",
            "instructions": "?",
            "criteria": {f"o{i}": f"d{i}" for i in range(n)},
        },
        "s": {
            "type": "score",
            "instructions": "?",
            "criteria": [f"l{i}" for i in range(min(n, 10))],
        },
    }
    for state in range(40):
        answer = synthesize(
            {"model": "jev-latest", "questions": questions, "state": [state]}, seed=seed
        )
        for key in ("c", "s"):
            probs = answer["answers"][key]["probabilities"]
            assert sum(round(p * 100) for p in probs.values()) == 100
            assert all(round(p, 2) == p for p in probs.values())
        qs = normalize_questions(questions)
        assert validate_decision(qs, parse_decision(answer, qs)) is None
        choice = answer["answers"]["c"]
        assert choice["probabilities"][choice["choice"]] == max(choice["probabilities"].values())


def test_synthetic_is_deterministic_and_ignores_the_caller_keys() -> None:
    """'same request, same answer'; seed 004: keys are addressing, never content."""
    a = synthesize(body())
    assert synthesize(body()) == a
    renamed = {f"x_{k}": q for k, q in QUESTIONS.items()}
    b = synthesize(body(questions=renamed))
    assert {k.removeprefix("x_"): v for k, v in b["answers"].items()} == a["answers"]
    assert synthesize(body(state="something else")) != a
    assert synthesize(body(), seed=1) != a
    assert a["model"] == "jev-1.13.0" and a["usage"]["input_tokens"] > 0


def test_synthetic_score_shape_echoes_the_rubric_as_legend() -> None:
    answer = synthesize(body())["answers"]["urgency"]
    assert answer["legend"] == {"0": "Routine", "1": "Today", "2": "Outage"}
    probs = answer["probabilities"]
    assert math.isclose(answer["score"], round(sum(int(k) * p for k, p in probs.items()), 2))
    assert 0 <= answer["confidence"] <= 1


def test_raw_types_answer_the_documented_placeholder_and_box_a_valid_box() -> None:
    """Issue 11: 'raw types answer a documented placeholder, and box answers a valid box'."""
    questions = {
        "where": {"type": "box", "instructions": "The dog"},
        "odd": {"type": "sentiment-2027", "instructions": "?"},
    }
    answers = synthesize(body(questions=questions))["answers"]
    box = answers["where"]["box"]
    assert 0 <= box["top"] < box["bottom"] <= 1 and 0 <= box["left"] < box["right"] <= 1
    assert answers["odd"] == {"type": "sentiment-2027", "placeholder": PLACEHOLDER}
    qs = normalize_questions(questions)
    assert validate_decision(qs, parse_decision(synthesize(body(questions=questions)), qs)) is None


# --- routes --------------------------------------------------------------------------------------


def test_both_base_urls_models_stats_and_a_request_id_on_every_answer() -> None:
    """Issue 11: 'both the SDK's host-root base URL and toolnexus's /v1 base URL work', plus
    GET /_stats; 'Every answer carries x-typesafe-request-id'."""

    async def scenario(server: Server) -> None:
        url = server.url
        root = await post(url, body(), path="/v1/systemone")
        v1 = await post(url, body(), path="/systemone")
        assert root.status_code == v1.status_code == 200
        assert root.json()["answers"] == v1.json()["answers"] == synthesize(body())["answers"]
        async with httpx.AsyncClient() as c:
            for path in ("/v1/models", "/models"):
                models = await c.get(url + path)
                assert models.status_code == 200
                assert {m["name"] for m in models.json()["models"]} >= {"jev-latest"}
                assert models.headers["x-typesafe-request-id"].startswith("req_")
            missing = await c.get(url + "/v1/v1/systemone")
            assert missing.status_code == 404 and missing.json() == {"detail": "Not Found"}
            assert missing.headers["x-typesafe-request-id"]
            bad = await post(url, {"model": "jev-latest"})
            assert bad.status_code == 422 and bad.headers["x-typesafe-request-id"]
            ids = {root.headers["x-typesafe-request-id"], v1.headers["x-typesafe-request-id"]}
            assert len(ids) == 2
            stats = (await c.get(url + "/_stats")).json()
        assert stats["routes"]["POST /v1/systemone"] == {"answered": 1, "invalid": 1}
        assert stats["routes"]["POST /systemone"] == {"answered": 1}
        assert stats["routes"]["GET /v1/models"] == {"answered": 1}
        assert stats["total"] == 6

    run_with(synthetic(), scenario)


def test_toolnexus_client_against_the_v1_base_url() -> None:
    async def scenario(server: Server) -> Any:
        async with create_classifier(base_url=server.url + "/v1", api_key_env="NO_SUCH") as c:
            return await c.evaluate("charged twice", QUESTIONS)

    decision = run_with(synthetic(), scenario)
    assert decision.to_wire()["answers"] == synthesize(body())["answers"]


# --- validation: the API's statuses and body shapes -------------------------------------------

TOO_MANY_CHOICES = {
    "c": {"type": "choice", "instructions": "?", "criteria": {f"o{i}": "d" for i in range(256)}}
}
ELEVEN_LEVELS = {"s": {"type": "score", "instructions": "?", "criteria": ["x"] * 11}}


@pytest.mark.parametrize(
    ("sent", "status", "detail"),
    [
        pytest.param(
            body(questions={"": QUESTIONS["refund"]}),
            400,
            "Question key cannot be empty.",
            id="empty-key",
        ),
        pytest.param(
            body(questions=TOO_MANY_CHOICES),
            400,
            "Too many choices. Must have at most 255 choices.",
            id="256-choices",
        ),
        pytest.param(
            body(questions=ELEVEN_LEVELS),
            400,
            "Too many score levels. Must have at most 10 levels.",
            id="11-levels",
        ),
        pytest.param(
            {**body(), "model": "gpt-9"},
            400,
            {"error_type": "api_usage_error", "message": "Unknown model: gpt-9"},
            id="unknown-model",
        ),
        pytest.param(
            body(questions={"b": {"type": "box", "instructions": "dog"}}),
            400,
            "Question type 'box' is not supported by model jev-latest.",
            id="box-on-1.13",
        ),
        pytest.param(
            body(
                state="a <pic> here", assets={"<pic>": {"type": "image", "data_base64": "aGVsbG8="}}
            ),
            400,
            "Asset '<pic>' is not a PNG or JPEG image (it starts 68 65 6c 6c).",
            id="asset-not-an-image",
        ),
    ],
)
def test_api_rules_answer_400_with_the_api_body(sent: Any, status: int, detail: Any) -> None:
    """The wire reference's 400s: 'An empty key is rejected (400 `Question key cannot be
    empty.`)', 256 options, 11 levels, box unknown on 1.13, shape 2 for an unknown model."""

    async def scenario(server: Server) -> httpx.Response:
        return await post(server.url, sent)

    r = run_with(synthetic(), scenario)
    assert (r.status_code, r.json()) == (status, {"detail": detail})


@pytest.mark.parametrize(
    ("sent", "locs"),
    [
        pytest.param(
            body(state=5),
            [
                ["body", "state", "str"],
                ["body", "state", "dict[str,any]"],
                ["body", "state", "list[any]"],
            ],
            id="number-state",
        ),
        pytest.param(
            body(state=None),
            [
                ["body", "state", "str"],
                ["body", "state", "dict[str,any]"],
                ["body", "state", "list[any]"],
            ],
            id="null-state",
        ),
        pytest.param(
            {"model": "jev-latest", "questions": QUESTIONS}, [["body", "state"]], id="missing-state"
        ),
        pytest.param({**body(), "questions": {}}, [["body", "questions"]], id="no-questions"),
        pytest.param(
            body(questions={"q": {"type": "vibe"}}),
            [["body", "questions", "q"]],
            id="unknown-type-outside-synthetic",
        ),
        pytest.param(
            body(questions={"q": {"type": "score", "criteria": []}}),
            [["body", "questions", "q", "score", "criteria"]],
            id="score-no-levels",
        ),
        pytest.param(body(assets={}), [["body", "assets"]], id="empty-assets"),
        pytest.param(b"{not json", [["body", 1]], id="not-json"),
    ],
)
def test_field_validation_answers_422_with_a_detail_list(
    sent: Any, locs: list[Any], tmp_path: Path
) -> None:
    """Wire reference: 'A number, boolean or null is rejected (422)'; body shape 4,
    ``{"detail": [{"type", "loc", "msg", "input"}, ...]}``. Unknown types are 422 in replay
    mode (the API's rule); only --synthetic answers them, for raw questions."""

    async def scenario(server: Server) -> httpx.Response:
        return await post(server.url, sent)

    r = run_with(ServeOptions(replay=RECORDINGS), scenario)
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert [d["loc"] for d in detail] == locs
    assert all({"type", "loc", "msg", "input"} <= set(d) for d in detail)


# --- bodies: multipart images, zstd, the size cap ----------------------------------------------


def test_multipart_images_are_keyed_on_their_bytes_not_their_placeholder() -> None:
    """Wire reference: 'a recording or cache keyed on the placeholder text (random per run in
    the SDK) never matches; key on the image bytes'."""
    image, other = png(32, 32), png(32, 32, (0, 90, 200))

    def request(placeholder: str) -> dict[str, Any]:
        return body(
            state=f"Is {placeholder} a receipt?",
            assets={placeholder: {"type": "image", "part": "asset-0"}},
        )

    async def scenario(server: Server) -> list[httpx.Response]:
        ctype = {"Content-Type": "multipart/form-data; boundary=b0undary"}
        return [
            await post(server.url, multipart(request(p), [img]), headers=ctype)
            for p, img in [
                ("<image:aaaa>", image),
                ("<image:bbbb>", image),
                ("<image:aaaa>", other),
            ]
        ]

    a, b, c = run_with(synthetic(), scenario)
    assert a.status_code == b.status_code == c.status_code == 200, a.text
    assert a.json()["answers"] == b.json()["answers"] != c.json()["answers"]
    assert a.json()["usage"]["input_tokens"] > synthesize(body())["usage"]["input_tokens"]


@pytest.mark.parametrize(
    ("assets", "parts", "message"),
    [
        pytest.param(
            {"<x>": {"type": "image", "part": "asset-0"}},
            1,
            "Asset '<x>' is not mentioned in the state or the questions.",
            id="asset-never-mentioned",
        ),
        pytest.param(
            {"<a>": {"type": "image", "part": "asset-3"}},
            1,
            "Asset '<a>' names part 'asset-3', which was not sent.",
            id="part-missing",
        ),
        pytest.param(
            {"<a>": {"type": "image", "part": "asset-0"}},
            2,
            "The multipart part 'asset-1' is claimed by no asset.",
            id="unclaimed-part",
        ),
    ],
)
def test_asset_rules(assets: dict[str, Any], parts: int, message: str) -> None:
    """Wire reference: 'The API rejects an empty assets and an asset that the state never
    mentions'."""
    sent = multipart(body(state="look at <a>", assets=assets), [png(20, 20)] * parts)

    async def scenario(server: Server) -> httpx.Response:
        return await post(
            server.url, sent, headers={"Content-Type": "multipart/form-data; boundary=b0undary"}
        )

    r = run_with(synthetic(), scenario)
    assert (r.status_code, r.json()) == (400, {"detail": message})


def test_zstd_bodies_are_decoded_and_other_encodings_are_415(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Wire reference: 'A server that cannot decode it should answer 415, not a plain 400'."""
    from backports import zstd

    raw = json.dumps(body()).encode()

    async def scenario(server: Server) -> list[httpx.Response]:
        return [
            await post(server.url, zstd.compress(raw), headers={"Content-Encoding": "zstd"}),
            await post(server.url, gzip.compress(raw), headers={"Content-Encoding": "gzip"}),
        ]

    ok, gz = run_with(synthetic(), scenario)
    assert ok.status_code == 200 and ok.json()["answers"] == synthesize(body())["answers"]
    assert gz.status_code == 415 and "gzip" in gz.json()["detail"]

    import toolnexus.serve.wire as wire

    monkeypatch.setattr(wire, "zstd_decompressor", lambda: None)
    (no_codec, _) = run_with(synthetic(), scenario)
    assert no_codec.status_code == 415
    assert "install backports.zstd" in no_codec.json()["detail"]


def test_the_body_cap_answers_413_naming_it_before_and_after_decompression() -> None:
    from backports import zstd

    small = json.dumps(body()).encode()
    big = json.dumps(body(state="x" * 5000)).encode()

    async def scenario(server: Server) -> list[httpx.Response]:
        return [
            await post(server.url, small),
            await post(server.url, big),
            await post(server.url, zstd.compress(big), headers={"Content-Encoding": "zstd"}),
        ]

    ok, plain, packed = run_with(synthetic(max_body_bytes=2000), scenario)
    assert ok.status_code == 200
    assert plain.status_code == packed.status_code == 413
    assert "--max-body-bytes" in plain.json()["detail"]
    assert "2,000 bytes" in packed.json()["detail"] and "decompress" in packed.json()["detail"]


# --- faults and auth ------------------------------------------------------------------------------


def test_429_and_503_carry_retry_after_and_retry_after_ms() -> None:
    """Issue 11: 'with Retry-After and retry-after-ms on 429/503'."""

    async def scenario(server: Server) -> list[httpx.Response]:
        return [await post(server.url, body()) for _ in range(3)]

    options = synthetic(fault_rate=1.0, retry_after_ms=1500, faults="429,503")
    for r in run_with(options, scenario):
        assert r.status_code in (429, 503)
        assert r.headers["retry-after-ms"] == "1500" and r.headers["retry-after"] == "2"
        assert r.headers["x-typesafe-request-id"]


def test_fault_rate_draws_are_reproducible_with_the_seed() -> None:
    async def scenario(server: Server) -> list[int]:
        return [(await post(server.url, body(state=f"s{i}"))).status_code for i in range(30)]

    first = run_with(synthetic(fault_rate=0.3, seed=7), scenario)
    assert first == run_with(synthetic(fault_rate=0.3, seed=7), scenario)
    assert 200 in first and {429, 500, 502, 503, 504, 529} & set(first)


def test_reset_and_stall_faults() -> None:
    async def scenario(server: Server) -> None:
        server.push(Fault.reset())
        with pytest.raises(httpx.TransportError):
            await post(server.url, body())
        server.push(Fault.stall(30))
        with pytest.raises(httpx.ReadTimeout):
            async with httpx.AsyncClient(timeout=0.2) as c:
                await c.post(server.url + "/v1/systemone", json=body())
        assert (await post(server.url, body())).status_code == 200

    run_with(synthetic(), scenario)


def test_a_stalled_request_is_answered_when_the_server_stops() -> None:
    """SIGINT/SIGTERM 'finish in-flight requests': a stall is cut short, then answered."""

    async def go() -> httpx.Response:
        server = Server(synthetic())
        await server.start()
        server.push(Fault.stall(30))
        pending = asyncio.ensure_future(post(server.url, body()))
        while server.in_flight == 0:  # the request is in, stalled
            await asyncio.sleep(0.01)
        await server.stop()
        return await asyncio.wait_for(pending, 5)

    r = asyncio.run(go())
    assert r.status_code == 200


def test_require_key_env_answers_401_echoing_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 11: '--require-key-env NAME (401 without echoing anything)'."""
    monkeypatch.setenv("SERVE_TEST_KEY", "sk-right-key")

    async def scenario(server: Server) -> list[httpx.Response]:
        return [
            await post(server.url, body(), headers={"Authorization": "Bearer sk-WRONG-secret"}),
            await post(server.url, body()),
            await post(server.url, body(), headers={"Authorization": "Bearer sk-right-key"}),
        ]

    wrong, none, right = run_with(synthetic(require_key_env="SERVE_TEST_KEY"), scenario)
    assert wrong.status_code == none.status_code == 401
    assert "WRONG" not in wrong.text and "Bearer" not in wrong.text
    # Issue 33: the body follows jevcompat's reference server (detail.error_type).
    assert wrong.json() == {
        "detail": {"error_type": "authentication_error", "message": "Invalid API key."}
    }
    assert none.json()["detail"]["message"] == "Missing API key."
    assert right.status_code == 200


def test_a_latency_delays_every_answer() -> None:
    async def scenario(server: Server) -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        await post(server.url, body())
        return loop.time() - start

    assert run_with(synthetic(latency_ms=150), scenario) >= 0.15


# --- replay --------------------------------------------------------------------------------------


def test_replay_answers_the_shipped_recordings_byte_for_byte() -> None:
    """Issue 11: '--replay DIR: recordings as --record writes them (the shipped recordings/
    works)'."""
    files = sorted(RECORDINGS.glob("*.json"))
    recs = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    # Image recordings carry placeholders and digests: their replay needs the image bytes, sent
    # as multipart (tests/cli/test_images_cli.py replays them through toolnexus serve).
    recs = [r for r in recs if "assets" not in r]

    async def scenario(server: Server) -> list[httpx.Response]:
        return [
            await post(
                server.url, {"model": r["model"], "state": r["state"], "questions": r["questions"]}
            )
            for r in recs
        ]

    for rec, r in zip(recs, run_with(ServeOptions(replay=RECORDINGS), scenario), strict=True):
        assert r.status_code == 200 and r.json() == rec["response"]


def test_replay_answers_a_pinned_model_and_an_sdk_spelling_of_the_questions() -> None:
    rec = json.loads(next(RECORDINGS.glob("0470*.json")).read_text(encoding="utf-8"))
    sdk_questions = {
        k: {kk: vv for kk, vv in q.items() if vv is not None} for k, q in rec["questions"].items()
    }

    async def scenario(server: Server) -> httpx.Response:
        return await post(
            server.url, {"model": "jev-1.13.0", "state": rec["state"], "questions": sdk_questions}
        )

    r = run_with(ServeOptions(replay=RECORDINGS), scenario)
    assert r.status_code == 200 and r.json() == rec["response"]


def test_a_replay_miss_is_409_naming_the_question_set_and_the_state() -> None:
    """Issue 11: 'A miss answers 409 with a JSON body naming the question-set sha256 and a state
    preview, and how to record it.'"""

    async def scenario(server: Server) -> httpx.Response:
        return await post(server.url, body(state="a state nobody recorded " * 10))

    r = run_with(ServeOptions(replay=RECORDINGS), scenario)
    assert r.status_code == 409
    miss = r.json()
    assert len(miss["questions_sha256"]) == 64
    assert (
        miss["state_preview"].startswith("a state nobody recorded")
        and len(miss["state_preview"]) <= 60
    )
    message = miss["detail"]["message"]
    assert miss["questions_sha256"][:12] in message and "--record" in message
    assert str(RECORDINGS) in message


def test_a_replay_miss_names_the_question_set_digest_records_carry_in_body_and_log() -> None:
    """Issue 16 item 3: 'Replay misses, `diff`, the serve access log and every other message use
    one of these two [digests], by name': the miss's ``questions_sha256`` is the value batch
    records carry (it was the sha256 of ``canonical_request("", questions)``, a third digest),
    and the access-log line says which digest it prints."""
    import io

    from toolnexus.run.ids import question_set_sha256

    log = io.StringIO()

    async def scenario(server: Server) -> httpx.Response:
        return await post(server.url, body(state="nobody recorded this"))

    r = run_with(ServeOptions(replay=RECORDINGS, access_log=log), scenario)
    digest = question_set_sha256(normalize_questions(QUESTIONS))
    assert r.status_code == 409 and r.json()["questions_sha256"] == digest
    named = f"question-set digest (questions_sha256) {digest[:12]}"
    assert named in r.json()["detail"]["message"]
    (line,) = log.getvalue().splitlines()
    assert " 409 " in line and line.endswith(f" replay_miss {named}")


def test_a_replay_directory_that_is_missing_or_broken_is_a_config_error(tmp_path: Path) -> None:
    from toolnexus import ConfigError

    with pytest.raises(ConfigError, match="does not exist"):
        ReplayIndex.load(tmp_path / "nope")
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.json"):
        ReplayIndex.load(tmp_path)


def test_serve_context_manager_yields_the_host_root_url() -> None:
    async def go() -> tuple[str, int]:
        async with serve(synthetic=True) as url:
            r = await post(url, body())
            return url, r.status_code

    url, status = asyncio.run(go())
    assert url.startswith("http://127.0.0.1:") and status == 200


def test_exactly_one_answer_source() -> None:
    from toolnexus import ConfigError

    with pytest.raises(ConfigError, match="exactly one answer source"):
        Server(ServeOptions())
    with pytest.raises(ConfigError, match="exactly one answer source"):
        Server(ServeOptions(synthetic=True, replay=RECORDINGS))
