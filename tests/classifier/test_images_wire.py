"""Images on the wire (seed 004 images-header, backends, classifier-unsupported, decisionKey;
the wire notes' "What the official SDK sends"): multipart bodies, the images header, the
unsupported error, cache keys, static matching, retries, and the llm style's image parts."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from email.message import Message
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path
from typing import Any

import httpx
import pytest

import imagegen as g
from toolnexus import (
    IMAGES_HEADER,
    ChoiceQuestion,
    ClassifierUnsupported,
    Image,
    ImageError,
    NoulQuestion,
    RecordedDecision,
    StaticMiss,
    create_classifier,
    decision_cache_key,
    memory_cache,
    static_classifier,
    with_images,
)
from toolnexus.core.canonical import canonical_json
from toolnexus.core.questions import questions_to_wire

Q = {"cat": NoulQuestion("Is there a cat in the picture?")}
PNG = g.png(20, 17, g.checker((255, 0, 0), (0, 0, 255)))
JPG = g.jpeg(24, 18, (40, 90, 200))
PNG_PH = f"<image:{hashlib.sha256(PNG).hexdigest()[:32]}>"
JPG_PH = f"<image:{hashlib.sha256(JPG).hexdigest()[:32]}>"
OK = {"model": "jev-1.14.0", "answers": {"cat": {"type": "noul", "noul": 0.75}}, "usage": {}}


class Server:
    """An httpx.MockTransport handler that keeps every request and answers from a script."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        status = self.statuses.pop(0) if self.statuses else 200
        if status != 200:
            return httpx.Response(status, json={"detail": "busy"})
        return httpx.Response(200, json=OK)


def classifier(server: Server, **opts: Any) -> Any:
    opts.setdefault("model", "jev-1.14.0")
    return create_classifier(transport=httpx.MockTransport(server), retry_base_ms=1, **opts)


def evaluate(server: Server, state: Any, **opts: Any) -> Any:
    async def go() -> Any:
        async with classifier(server, **opts) as c:
            return await c.evaluate(state, Q)

    return asyncio.run(go())


def parse_multipart(request: httpx.Request) -> list[Message]:
    """The body parsed back by the standard library's MIME parser (an independent reader)."""
    content_type = request.headers["content-type"]
    raw = f"Content-Type: {content_type}\r\n\r\n".encode() + request.content
    message = BytesParser(policy=HTTP).parsebytes(raw)
    assert message.is_multipart() and not message.defects
    return list(message.iter_parts())  # type: ignore[attr-defined]


def sdk_shape(parts: list[Message]) -> list[tuple[str | None, str | None, str]]:
    return [(p.get_param("name", header="content-disposition"), p.get_filename(),
             p.get_content_type()) for p in parts]  # fmt: skip


# --- multipart, as the official SDK sends it --------------------------------------------------


def test_an_image_request_is_multipart_exactly_as_the_official_sdk_sends_it() -> None:
    """Wire notes: part 1 name="request", no filename, application/json, the JSON body plus
    "assets"; then one part per image in order of first appearance, name="asset-N",
    filename="asset-N" (no extension), Content-Type image/png or image/jpeg."""
    server = Server()
    state = {"caption": "two photos", "photos": [Image(JPG), {"keep": Image(PNG)}]}
    decision = evaluate(server, state)
    assert decision.noul("cat").noul == 0.75
    (request,) = server.requests
    assert request.url == "https://api.typesafe.ai/v1/systemone"
    boundary = request.headers["content-type"].removeprefix("multipart/form-data; boundary=")
    assert len(boundary) == 32 and int(boundary, 16) >= 0  # the SDK's uuid4-hex shape
    parts = parse_multipart(request)
    assert sdk_shape(parts) == [
        ("request", None, "application/json"),
        ("asset-0", "asset-0", "image/jpeg"),
        ("asset-1", "asset-1", "image/png"),
    ]
    assert json.loads(parts[0].get_payload(decode=True)) == {
        "model": "jev-1.14.0",
        "questions": questions_to_wire(Q),
        "state": {"caption": "two photos", "photos": [JPG_PH, {"keep": PNG_PH}]},
        "assets": {
            JPG_PH: {"type": "image", "part": "asset-0"},
            PNG_PH: {"type": "image", "part": "asset-1"},
        },
    }
    assert parts[1].get_payload(decode=True) == JPG
    assert parts[2].get_payload(decode=True) == PNG
    assert request.headers[IMAGES_HEADER] == "true"


def test_the_multipart_framing_is_the_sdks_byte_for_byte() -> None:
    """The official SDK's encoder writes, per part: --boundary CRLF Content-Disposition CRLF
    Content-Type CRLF CRLF content CRLF, then --boundary-- CRLF. Same bytes here."""
    server = Server()
    evaluate(server, Image(PNG, alias="photo"))
    (request,) = server.requests
    boundary = request.headers["content-type"].split("boundary=")[1]
    body = json.dumps(
        {
            "assets": {"<photo>": {"part": "asset-0", "type": "image"}},
            "model": "jev-1.14.0",
            "questions": questions_to_wire(Q),
            "state": "<photo>",
        },
        sort_keys=True,
        separators=(",", ":"),
    ).encode()
    expected = b"".join(
        [
            f'--{boundary}\r\nContent-Disposition: form-data; name="request"\r\n'
            "Content-Type: application/json\r\n\r\n".encode(),
            body,
            b"\r\n",
            f'--{boundary}\r\nContent-Disposition: form-data; name="asset-0"; '
            'filename="asset-0"\r\nContent-Type: image/png\r\n\r\n'.encode(),
            PNG,
            b"\r\n",
            f"--{boundary}--\r\n".encode(),
        ]
    )
    assert request.content == expected


def test_one_image_under_two_aliases_is_sent_once_per_alias() -> None:
    """Wire notes: one image under two aliases is sent once per alias."""
    server = Server()
    evaluate(server, with_images("Is <a> the same as <b>?", {"a": PNG, "b": PNG}))
    parts = parse_multipart(server.requests[0])
    assert [p.get_filename() for p in parts] == [None, "asset-0", "asset-1"]
    assert json.loads(parts[0].get_payload(decode=True))["assets"] == {
        "<a>": {"type": "image", "part": "asset-0"},
        "<b>": {"type": "image", "part": "asset-1"},
    }


def test_the_same_request_is_the_same_bytes_every_time(tmp_path: Path) -> None:
    """Issue 10: deterministic placeholders, so the same state and images always make the
    same request (the boundary is derived too)."""
    path = tmp_path / "p.png"
    path.write_bytes(PNG)
    one, two = Server(), Server()
    evaluate(one, {"img": Image(PNG)})
    evaluate(two, {"img": Image(path)})
    assert one.requests[0].content == two.requests[0].content


def test_a_request_without_assets_is_byte_for_byte_plain_json() -> None:
    """Issue 10: a request without assets is byte-for-byte what it is today."""
    server = Server()
    state = {"text": "no images", "parts": [{"type": "text", "text": "<image:abc>"}]}
    evaluate(server, state)
    (request,) = server.requests
    assert request.headers["content-type"] == "application/json"
    assert IMAGES_HEADER.lower() not in {k.lower() for k in request.headers}
    assert request.content == canonical_json(
        {"model": "jev-1.14.0", "questions": questions_to_wire(Q), "state": state}
    )


def test_request_params_with_their_own_assets_go_as_json() -> None:
    """Wire notes: if the caller's extra body already has assets, the request goes as JSON."""
    server = Server()
    own = {"<photo>": {"data_base64": base64.b64encode(PNG).decode(), "format": "png"}}
    evaluate(server, Image(PNG, alias="photo"), request_params={"assets": own})
    (request,) = server.requests
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.content)["assets"] == own


def test_retries_resend_the_same_bytes() -> None:
    """Issue 10: retries resend the same bytes (the body is built once per evaluate)."""
    server = Server(503, 429)
    evaluate(server, [Image(PNG), Image(JPG)])
    assert len(server.requests) == 3
    assert len({r.content for r in server.requests}) == 1
    assert len({r.headers["content-type"] for r in server.requests}) == 1
    assert [r.headers.get("x-typesafe-retry-count") for r in server.requests] == [None, "1", "2"]


# --- the images header and the backends table -------------------------------------------------


@pytest.mark.parametrize(
    ("opts", "header"),
    [
        pytest.param({"model": "jev-1.14.0"}, True, id="typesafe-1.14"),
        pytest.param({"model": "jev-preview"}, True, id="typesafe-preview"),
        pytest.param(
            {"backend": "openrouter", "model": "typesafe/jev-1.14", "supports": {"images": True}},
            True,
            id="openrouter-supports-overrides",
        ),
        pytest.param(
            {"backend": "custom", "base_url": "http://h/v1", "supports": {"images": True}},
            True,
            id="custom-declares-images",
        ),
        pytest.param(
            {"backend": "vercel", "supports": {"images": True}}, True, id="vercel-supports"
        ),
    ],
)
def test_the_images_header_goes_with_assets_when_the_row_or_supports_says_images(
    opts: dict[str, Any], header: bool
) -> None:
    """Seed 004 images-header: sent as true only when a request carries assets AND the backend
    row says so; supports={"images": true} overrides the row."""
    with_assets, without = Server(), Server()
    evaluate(with_assets, Image(PNG), **opts)
    evaluate(without, "text only", **opts)
    assert with_assets.requests[0].headers.get(IMAGES_HEADER) == ("true" if header else None)
    assert IMAGES_HEADER not in without.requests[0].headers


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        pytest.param(
            {"backend": "openrouter", "model": None},
            "classifier: openrouter (typesafe/jev-1.13) does not support images",
            id="openrouter",
        ),
        pytest.param(
            {"model": "jev-1.13.0"},
            "classifier: typesafe (jev-1.13.0) does not support images",
            id="typesafe-1.13",
        ),
        pytest.param(
            {"backend": "cloudflare", "model": None},
            "classifier: cloudflare (jev-latest) does not support images",
            id="cloudflare",
        ),
        pytest.param(
            {"model": "jev-1.14.0", "supports": {"images": False}},
            "classifier: typesafe (jev-1.14.0) does not support images",
            id="supports-false-overrides-row",
        ),
        pytest.param(
            {"backend": "custom", "base_url": "http://h/v1", "supports": {"images": False}},
            "classifier: custom (jev-1.14.0) does not support images",
            id="custom-declares-none",
        ),
    ],
)
def test_classifier_unsupported_before_any_request(
    opts: dict[str, Any], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 004 classifier-unsupported: message, exact; raised before anything is sent."""
    monkeypatch.setenv("CLOUDFLARE_ACCOUNT_ID", "acct")
    monkeypatch.setenv("CLOUDFLARE_GATEWAY_ID", "gw")
    server = Server()
    with pytest.raises(ClassifierUnsupported) as e:
        evaluate(server, {"photo": Image(PNG)}, **opts)
    assert str(e.value) == message
    assert e.value.feature == "images"
    assert server.requests == []
    evaluate(server, "text still works", **opts)
    assert len(server.requests) == 1


def test_limits_are_checked_before_any_request_and_can_be_overridden() -> None:
    server = Server()
    with pytest.raises(ImageError, match="image_max_side limit of 20 px"):
        evaluate(server, Image(JPG), image_limits={"image_max_side": 20})
    with pytest.raises(ImageError, match=r"image <tiny> is 20x8 px, under the image_min_side"):
        evaluate(server, Image(g.png(20, 8), alias="tiny"))
    assert server.requests == []
    with pytest.raises(Exception, match="unknown image limit 'max_side'"):
        classifier(server, image_limits={"max_side": 20})


def test_an_attached_image_mentioned_in_choice_criteria_only_is_sent() -> None:
    """Wire notes: the state (and even choice criteria) refer to an image by its placeholder."""
    questions = {"which": ChoiceQuestion("Which fits?", {"a": "looks like <ref>", "b": "not"})}
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        answer = {"type": "choice", "choice": "a", "confidence": 1.0, "probabilities": {"a": 1.0}}
        return httpx.Response(200, json={"model": "m", "answers": {"which": answer}})

    async def go() -> None:
        async with create_classifier(
            transport=httpx.MockTransport(handler), model="jev-1.14.0"
        ) as c:
            await c.evaluate(with_images("a red square", {"ref": PNG}), questions)

    asyncio.run(go())
    parts = parse_multipart(requests[0])
    assert json.loads(parts[0].get_payload(decode=True))["assets"] == {
        "<ref>": {"type": "image", "part": "asset-0"}
    }


# --- cache keys and static matching ------------------------------------------------------------

#: A fixed 16x16 PNG, its bytes pinned here rather than regenerated, so neither a zlib version
#: nor a change to the test encoder can move the key below.
PINNED = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFUlEQVR4nGNgaPhPGhrVMKph+GoAAJ5XfxAVxgy+"
    "AAAAAElFTkSuQmCC"
)
PINNED_SHA256 = "0f691e285289a70131299f3aa9f49c989b9d70dd50c32a16bf140e8febd37e2f"
PINNED_KEY = "c80660c3fbfafc01f08fcc3001e1c46e9ab45eff57405796d9a7c5734cffcf50"


def test_decision_cache_key_with_assets_is_stable_across_runs() -> None:
    """Seed 004 decisionKey = sha256hex(canon({assets?, endpoint, kind, model, questions,
    state})), keyed on each image's sha256 and never on a random name; the value is pinned, so
    a change of shape (or a random placeholder) cannot go unseen."""
    image = Image(PINNED)
    assert (image.size, image.sha256) == ((16, 16), PINNED_SHA256)
    assert image.placeholder == f"<image:{PINNED_SHA256[:32]}>"
    assets = {image.placeholder: {"sha256": image.sha256, "type": "image"}}
    endpoint = "https://api.typesafe.ai/v1"
    key = decision_cache_key(endpoint, "jev-1.14.0", image.placeholder, Q, assets)
    expected = hashlib.sha256(
        canonical_json(
            {
                "assets": assets,
                "endpoint": endpoint,
                "kind": "decision",
                "model": "jev-1.14.0",
                "questions": questions_to_wire(Q),
                "state": image.placeholder,
            }
        )
    ).hexdigest()
    assert key == expected == PINNED_KEY


def test_cache_keys_differ_for_different_image_bytes_and_omit_empty_assets() -> None:
    """Seed 004: an empty or nil assets omits the member; keys follow the image bytes."""
    base = decision_cache_key("e", "m", "s", Q)
    assert decision_cache_key("e", "m", "s", Q, {}) == base
    assert decision_cache_key("e", "m", "s", Q, None) == base
    one = Image(PNG, alias="x")
    two = Image(g.png(20, 17, (0, 0, 0)), alias="x")
    keys = {
        decision_cache_key("e", "m", "<x>", Q, {"<x>": {"sha256": i.sha256, "type": "image"}})
        for i in (one, two)
    }
    assert len(keys) == 2


def test_the_cache_answers_the_same_images_and_misses_on_other_bytes() -> None:
    server = Server()
    cache = memory_cache()

    async def go() -> list[Any]:
        async with classifier(server, cache=cache) as c:
            return [
                await c.evaluate({"p": Image(PNG)}, Q),
                await c.evaluate({"p": Image(bytearray(PNG))}, Q),  # same bytes: a hit
                await c.evaluate({"p": Image(JPG)}, Q),  # other bytes: live
            ]

    first, second, third = asyncio.run(go())
    assert (first.cached, second.cached, third.cached) == (False, True, False)
    assert len(server.requests) == 2


def test_static_recordings_match_on_image_hashes_not_bytes(tmp_path: Path) -> None:
    """Issue 10: static/replay recordings match on the image bytes' hashes and store none."""
    path = tmp_path / "cat.png"
    path.write_bytes(PNG)
    recorded = RecordedDecision(
        state={"photo": PNG_PH},
        questions=Q,
        response=OK,
        assets={PNG_PH: {"type": "image", "sha256": hashlib.sha256(PNG).hexdigest()}},
    )

    async def go(state: Any) -> Any:
        async with static_classifier([recorded]) as c:
            return await c.evaluate(state, Q)

    assert asyncio.run(go({"photo": Image(path)})).noul("cat").noul == 0.75
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    openai_part = {"type": "image_url", "image_url": {"url": data_url}}
    assert asyncio.run(go({"photo": openai_part})).noul("cat").noul == 0.75
    with pytest.raises(StaticMiss):
        asyncio.run(go({"photo": Image(JPG)}))
    with pytest.raises(StaticMiss):  # the placeholder text alone is not the image
        asyncio.run(go({"photo": PNG_PH}))


def test_a_static_entry_may_hold_the_image_itself() -> None:
    recorded = RecordedDecision(state=[Image(PNG)], questions=Q, response=OK)

    async def go() -> Any:
        async with static_classifier([recorded]) as c:
            return await c.evaluate([Image(bytes(PNG))], Q)

    assert asyncio.run(go()).noul("cat").noul == 0.75


# --- the llm style -----------------------------------------------------------------------------


def test_the_llm_style_sends_images_as_chat_image_parts_and_stays_uncalibrated() -> None:
    """Issue 10: the llm style sends the same images as image content parts of its chat
    request (data URLs) and reports calibrated: false."""
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        content = json.dumps({"answers": {"q1": {"type": "noul", "noul": 0.6}}})
        return httpx.Response(
            200, json={"model": "vision-1", "choices": [{"message": {"content": content}}]}
        )

    async def go() -> Any:
        async with create_classifier(
            style="llm", llm_model="vision-1", transport=httpx.MockTransport(handler)
        ) as c:
            return await c.evaluate({"photo": Image(JPG), "note": "kitchen"}, Q)

    decision = asyncio.run(go())
    assert decision.calibrated is False and decision.noul("cat").noul == 0.6
    user = seen[0]["messages"][1]["content"]
    assert user[0]["type"] == "text"
    assert json.loads(user[0]["text"])["state"] == {"note": "kitchen", "photo": JPG_PH}
    assert user[1:] == [
        {"type": "text", "text": f"Image {JPG_PH}:"},
        {
            "type": "image_url",
            "image_url": {"url": "data:image/jpeg;base64," + base64.b64encode(JPG).decode()},
        },
    ]


# --- against the official SDK's own bytes -------------------------------------------------------


def test_the_same_image_request_as_the_official_sdk_sends_it() -> None:
    """The official SDK (typesafe-sdk 0.7.5, a dev dependency) and toolnexus send the same
    request for the same state, aliases and images: the same parts, in the same order, with the
    same names, filenames, content types and bytes, and the same JSON part once parsed (the SDK
    does not sort keys; toolnexus sends canonical JSON). Only the boundary differs: the SDK's is
    random, toolnexus's derived."""
    import httpx2
    import typesafe_sdk as ts

    from toolnexus.serve.wire import zstd_decompressor

    captured: list[tuple[str, bytes]] = []

    def sdk_handler(request: httpx2.Request) -> httpx2.Response:
        content = request.read()
        if request.headers.get("content-encoding") == "zstd":
            decompress = zstd_decompressor()
            assert decompress is not None
            content = decompress(content, 1 << 20)
        captured.append((request.headers["content-type"], content))
        return httpx2.Response(200, json={**OK, "model": "jev-1.14.0"})

    state = "Is <before> the same room as <after>?"
    sdk = ts.TypeSafeClient(
        api_key="sk-sdk", base_url="http://sdk.invalid",
        http_client=httpx2.Client(transport=httpx2.MockTransport(sdk_handler)),
    )  # fmt: skip
    with sdk:
        sdk.system_one(
            state=state,
            questions={"cat": ts.Noul(instructions="Is there a cat in the picture?")},
            model="jev-1.14.0",
            assets={"<before>": ts.Image(PNG), "<after>": ts.Image(JPG)},
        )
    server = Server()
    evaluate(server, with_images(state, {"before": PNG, "after": JPG}))
    ours = server.requests[0]
    sdk_type, sdk_body = captured[0]
    sdk_request = httpx.Request(
        "POST", "http://x", content=sdk_body, headers={"content-type": sdk_type}
    )
    theirs_parts, our_parts = parse_multipart(sdk_request), parse_multipart(ours)
    assert sdk_shape(our_parts) == sdk_shape(theirs_parts)
    assert [p.get_payload(decode=True) for p in our_parts[1:]] == [
        p.get_payload(decode=True) for p in theirs_parts[1:]
    ]
    assert json.loads(our_parts[0].get_payload(decode=True)) == json.loads(
        theirs_parts[0].get_payload(decode=True)
    )
    # The framing, byte for byte, once the boundaries and the JSON part are set aside.
    ours_boundary = ours.headers["content-type"].split("boundary=")[1].encode()
    sdk_boundary = sdk_type.split("boundary=")[1].encode()
    sdk_json = theirs_parts[0].get_payload(decode=True)
    our_json = our_parts[0].get_payload(decode=True)
    assert ours.content.replace(ours_boundary, b"B").replace(our_json, b"J") == sdk_body.replace(
        sdk_boundary, b"B"
    ).replace(sdk_json, b"J")
