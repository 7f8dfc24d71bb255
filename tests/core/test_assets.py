"""assets.py: lifting content parts out of a state into assets, with_images (seed 004).

Images come from tests/imagegen.py (tiny real encoders)."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

import imagegen as g
from toolnexus import Image, ImageError, lift_images, with_images

PNG = g.png(20, 17, g.checker((255, 0, 0), (0, 0, 255)))
JPG = g.jpeg(24, 18, (40, 90, 200))


def _openai(data: bytes, media: str = "image/png") -> dict[str, object]:
    url = f"data:{media};base64,{base64.b64encode(data).decode()}"
    return {"type": "image_url", "image_url": {"url": url}}


def _anthropic(data: bytes, media: str = "image/jpeg") -> dict[str, object]:
    source = {"type": "base64", "media_type": media, "data": base64.b64encode(data).decode()}
    return {"type": "image", "source": source}


def test_a_state_without_images_is_not_copied() -> None:
    state = {"text": "plain", "items": [1, {"type": "image"}, "<image:0000>"]}
    lifted = lift_images(state)
    assert lifted.state is state and lifted.assets == ()
    assert lifted.wire_assets() == {} and lifted.key_assets() == {}


def test_parts_anywhere_are_lifted_in_order_of_first_appearance() -> None:
    """Seed 004: content parts in the state are lifted into assets (nested objects, arrays)."""
    png_ph = f"<image:{hashlib.sha256(PNG).hexdigest()[:32]}>"
    jpg_ph = f"<image:{hashlib.sha256(JPG).hexdigest()[:32]}>"
    state = {
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "look"}, _openai(PNG)]},
            {"role": "user", "content": [_anthropic(JPG), Image(PNG, alias="again")]},
        ],
        "attachment": Image(JPG),  # "attachment" sorts before "messages" on the wire
    }
    lifted = lift_images(state)
    assert lifted.state == {
        "attachment": jpg_ph,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "look"}, png_ph]},
            {"role": "user", "content": [jpg_ph, "<again>"]},
        ],
    }
    assert [(a.placeholder, a.part, a.image.sha256) for a in lifted.assets] == [
        (jpg_ph, "asset-0", hashlib.sha256(JPG).hexdigest()),
        (png_ph, "asset-1", hashlib.sha256(PNG).hexdigest()),
        ("<again>", "asset-2", hashlib.sha256(PNG).hexdigest()),  # one image, two placeholders
    ]
    assert lifted.wire_assets() == {
        jpg_ph: {"type": "image", "part": "asset-0"},
        png_ph: {"type": "image", "part": "asset-1"},
        "<again>": {"type": "image", "part": "asset-2"},
    }
    assert lifted.key_assets()["<again>"] == {
        "type": "image",
        "sha256": hashlib.sha256(PNG).hexdigest(),
    }
    assert state["attachment"].__class__ is Image  # the caller's state is left alone


def test_an_image_as_the_whole_state() -> None:
    lifted = lift_images(Image(PNG))
    assert lifted.state == lifted.assets[0].placeholder


def test_placeholders_are_deterministic() -> None:
    """Issue 10: placeholders derive from the bytes or the alias, unlike the SDK's random ones."""
    first = lift_images([Image(PNG), _openai(JPG, "image/jpeg")])
    second = lift_images([Image(bytearray(PNG)), _anthropic(JPG)])
    assert first.state == second.state
    assert first.key_assets() == second.key_assets()


def test_with_images_attaches_images_the_state_mentions(tmp_path: Path) -> None:
    path = tmp_path / "after.jpg"
    path.write_bytes(JPG)
    state = with_images("Is <after> the same room as <before>?", {"before": PNG, "after": path})
    lifted = lift_images(state)
    assert lifted.state == "Is <after> the same room as <before>?"
    assert [(a.placeholder, a.part) for a in lifted.assets] == [
        ("<after>", "asset-0"),
        ("<before>", "asset-1"),
    ]
    assert lifted.assets[0].image.path == path


def test_an_attached_image_may_be_mentioned_in_the_questions_only() -> None:
    lifted = lift_images(with_images("Which is it?", {"x": PNG}), questions_text='{"a":"<x>"}')
    assert [a.placeholder for a in lifted.assets] == ["<x>"]


def test_an_attached_image_mentioned_nowhere_is_an_error() -> None:
    """Wire notes: the API rejects an asset that the state never mentions."""
    with pytest.raises(ImageError, match=r"<ghost> is attached but neither") as e:
        lift_images(with_images({"text": "nothing here"}, {"ghost": PNG}))
    assert e.value.limit == "mention"


def test_two_images_under_one_alias_is_an_error() -> None:
    with pytest.raises(ImageError, match=r"two different images share the placeholder <a>"):
        lift_images([Image(PNG, alias="a"), Image(JPG, alias="a")])
    lift_images([Image(PNG, alias="a"), Image(PNG, alias="a")])  # the same bytes twice: fine


def test_with_images_keeps_an_image_alias_consistent() -> None:
    with pytest.raises(ImageError, match="already has the alias"):
        with_images("<a>", {"a": Image(PNG, alias="b")})
    state = with_images("<a>", {"a": Image(PNG, alias="a")})
    assert lift_images(state).assets[0].placeholder == "<a>"


@pytest.mark.parametrize(
    ("part", "needle"),
    [
        pytest.param(
            {"type": "image_url", "image_url": {"url": "https://example.invalid/x.png"}},
            "not a base64 data: URL",
            id="openai-remote-url",
        ),
        pytest.param(
            {"type": "image_url", "image_url": {"detail": "low"}},
            "has no url string",
            id="openai-no-url",
        ),
        pytest.param(
            {"type": "image", "source": {"type": "url", "url": "https://example.invalid/x"}},
            "'url' source",
            id="anthropic-url-source",
        ),
        pytest.param(
            {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
            "needs string 'data' and 'media_type'",
            id="anthropic-no-media-type",
        ),
        pytest.param(_openai(PNG, "image/gif"), "declares image/gif", id="declared-gif"),
        pytest.param(
            _openai(JPG, "image/png"),
            "declares image/png but its bytes are JPEG",
            id="declared-png-is-jpeg",
        ),
        pytest.param(_anthropic(b"GIF89a...."), "neither PNG nor JPEG", id="bytes-gif"),
    ],
)
def test_a_part_that_cannot_be_lifted_names_where_it_is(
    part: dict[str, object], needle: str
) -> None:
    with pytest.raises(ImageError) as e:
        lift_images({"messages": [{"content": [part]}]})
    assert needle in str(e.value)
    assert "state['messages'][0]['content'][0]" in str(e.value)


def test_lifting_with_the_question_text_is_written_once() -> None:
    """Issue 16 item 7: "write each repeated piece once (image lifting for a question set ...)":
    every style and command lifts through ``assets.lift_with_questions``."""
    import re

    from paths import REPO

    src = REPO / "src" / "toolnexus"
    callers = sorted(
        str(p.relative_to(src))
        for p in src.rglob("*.py")
        if p.name != "assets.py" and re.search(r"\blift_images\(", p.read_text())
    )
    assert callers == []


def test_an_attached_image_named_only_in_the_questions_is_lifted() -> None:
    from toolnexus.core.assets import lift_with_questions
    from toolnexus.core.questions import normalize_questions

    image = Image(PNG, alias="diagram")
    qs = normalize_questions(
        {
            "d": {
                "type": "choice",
                "instructions": "x",
                "criteria": {"a": "like <diagram>", "b": "no"},
            }
        }
    )
    lifted = lift_with_questions(with_images("which?", {"diagram": image}), qs)
    assert [a.placeholder for a in lifted.assets] == ["<diagram>"]
    calls: list[object] = []
    lift_with_questions("no images", qs, lambda q: calls.append(q) or b"")  # type: ignore[func-returns-value]
    assert calls == [], "the questions are encoded only for a state with attached images"
