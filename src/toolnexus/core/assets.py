"""Lifting images out of a state into assets (seed 004: "content parts in the state are lifted
into assets"): ``with_images`` and ``StateWithImages`` attach images to a state that mentions
them as ``<name>``; ``lift_images`` replaces every image in a state (an ``Image``, an OpenAI-style
or Anthropic-style content part) by its placeholder and returns a ``LiftedState``: the state as
sent and its assets (``Asset``) in multipart part order.

Pure: no HTTP, no terminal, no I/O of its own; an ``Image`` reads its bytes, lazily and once, when
lifting needs its format or its sha256. ``Image``, its deterministic placeholders and the limits
are ``images.py``; this module imports that one, never the reverse.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from . import observe as probe
from .canonical import canonical_json
from .errors import ImageError
from .images import Image
from .questions import Question, questions_to_wire

__all__ = [
    "Asset",
    "LiftedState",
    "StateWithImages",
    "lift_images",
    "lift_with_questions",
    "with_images",
]

_FORMAT_OF_MEDIA_TYPE = {"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg"}
_DATA_URL = re.compile(r"data:([^;,]*)((?:;[^;,]*)*),(.*)", re.DOTALL)


@dataclass(frozen=True)
class StateWithImages:
    """A state (text, object or array) that refers to attached images by ``<name>``; build it
    with :func:`with_images`. The images are read when the state is sent, not before."""

    state: Any
    images: Mapping[str, Image]


def with_images(
    state: Any, images: Mapping[str, Image | bytes | str | os.PathLike[str]]
) -> StateWithImages:
    """Attach images to a state that mentions them as ``<name>``, e.g.
    ``with_images("Is <before> the same room as <after>?", {"before": "a.png", "after": b})``.
    Values are ``Image`` objects, bytes, or paths; the name becomes the image's alias."""
    attached: dict[str, Image] = {}
    for name, value in images.items():
        if isinstance(value, Image):
            image = value
            if image.alias is not None and image.alias != name:
                raise ImageError(
                    f"classifier: image attached as <{name}> already has the alias "
                    f"<{image.alias}>; attach it under one name",
                    asset=f"<{name}>",
                    limit="alias",
                )
            if image.alias is None:
                image = _aliased(image, name)
        else:
            image = Image(value, alias=name)
        attached[name] = image
    return StateWithImages(state, attached)


def _aliased(image: Image, alias: str) -> Image:
    """The same image (same source, same lazily read bytes) under an alias."""
    clone = Image(b"", alias=alias)
    for slot in ("_b64", "_data", "_format", "_path", "_sha256", "_size", "_source"):
        object.__setattr__(clone, slot, getattr(image, slot))
    return clone


@dataclass(frozen=True)
class Asset:
    """One image of a request: the placeholder the state carries, the image, and its multipart
    part name (``asset-0``, ``asset-1``, ... in order of first appearance)."""

    placeholder: str
    image: Image
    part: str


@dataclass(frozen=True)
class LiftedState:
    """A state with its images lifted out: ``state`` is what is sent (placeholders in place of
    images) and ``assets`` the images in part order. No assets: the request is plain JSON."""

    state: Any
    assets: tuple[Asset, ...] = ()

    def wire_assets(self) -> dict[str, dict[str, str]]:
        """The body's ``assets`` member: ``{placeholder: {"type": "image", "part": "asset-N"}}``."""
        return {a.placeholder: {"part": a.part, "type": "image"} for a in self.assets}

    def key_assets(self) -> dict[str, dict[str, str]]:
        """What cache keys and recordings hold for the assets: each image's sha256 under its
        placeholder, never its bytes. Empty when there are none (the key then omits it)."""
        return {a.placeholder: {"sha256": a.image.sha256, "type": "image"} for a in self.assets}


def _where(path: tuple[str | int, ...]) -> str:
    return "state" + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in path)


def _from_data_url(url: str, where: str) -> Image:
    m = _DATA_URL.fullmatch(url)
    if m is None or ";base64" not in m.group(2).lower():
        raise ImageError(
            f"classifier: the image part at {where} is not a base64 data: URL; only inline "
            "images can be lifted (download it and pass Image(path))",
            asset=where,
            limit="format",
        )
    return _declared(Image.from_base64(m.group(3)), m.group(1).strip().lower(), where)


def _declared(image: Image, media_type: str, where: str) -> Image:
    """The image, checked against the media type its part declares."""
    want = _FORMAT_OF_MEDIA_TYPE.get(media_type)
    if want is None:
        raise ImageError(
            f"classifier: the image part at {where} declares {media_type or 'no media type'}; "
            "System One takes image/png and image/jpeg",
            asset=where,
            limit="format",
        )
    try:
        got = image.format
    except ImageError as e:
        raise ImageError(
            f"classifier: the image part at {where}: {e.detail.split(': ', 1)[-1]}",
            asset=where,
            limit=e.limit,
        ) from None
    if got != want:
        raise ImageError(
            f"classifier: the image part at {where} declares {media_type} but its bytes are "
            f"{got.upper()}",
            asset=where,
            limit="format",
        )
    return image


def _part_image(node: Mapping[str, Any], where: str) -> Image | None:
    """The image of an OpenAI-style or Anthropic-style content part, or None when ``node`` is
    not an image part."""
    kind = node.get("type")
    if kind == "image_url" and "image_url" in node:
        ref = node["image_url"]
        url = ref.get("url") if isinstance(ref, Mapping) else ref
        if not isinstance(url, str):
            raise ImageError(
                f"classifier: the image_url part at {where} has no url string",
                asset=where,
                limit="format",
            )
        return _from_data_url(url, where)
    if kind == "image" and isinstance(node.get("source"), Mapping):
        source = node["source"]
        if source.get("type") != "base64":
            raise ImageError(
                f"classifier: the image part at {where} has a {source.get('type')!r} source; "
                "only base64 sources can be lifted (download it and pass Image(path))",
                asset=where,
                limit="format",
            )
        data = source.get("data")
        media_type = source.get("media_type")
        if not isinstance(data, str) or not isinstance(media_type, str):
            raise ImageError(
                f"classifier: the image part at {where} needs string 'data' and 'media_type'",
                asset=where,
                limit="format",
            )
        return _declared(Image.from_base64(data), media_type.strip().lower(), where)
    return None


def _walk(node: Any, path: tuple[str | int, ...], found: dict[str, Image]) -> tuple[Any, bool]:
    """(the node with every image replaced by its placeholder, whether anything changed).
    An unchanged subtree is returned as the same object: a state with no images is not copied."""
    if probe.observer is not None:
        probe.observer("assets.walk", node)
    if isinstance(node, Image):
        return _found(node, _where(path), found), True
    if isinstance(node, Mapping):
        image = _part_image(node, _where(path))
        if image is not None:
            return _found(image, _where(path), found), True
        out: dict[Any, Any] = {}
        changed = False
        for k, v in node.items():
            new, c = _walk(v, (*path, k), found)
            out[k] = new
            changed = changed or c
        return (out, True) if changed else (node, False)
    if isinstance(node, list | tuple):
        items = []
        changed = False
        for i, v in enumerate(node):
            new, c = _walk(v, (*path, i), found)
            items.append(new)
            changed = changed or c
        return (items, True) if changed else (node, False)
    return node, False


def _found(image: Image, where: str, found: dict[str, Image]) -> str:
    placeholder = image.placeholder
    seen = found.get(placeholder)
    if seen is not None and seen is not image and seen.sha256 != image.sha256:
        raise ImageError(
            f"classifier: two different images share the placeholder {placeholder} "
            f"(the second at {where}); give each its own alias",
            asset=placeholder,
            limit="alias",
        )
    found.setdefault(placeholder, image)
    return placeholder


def _first_mentions(found: Mapping[str, Image], texts: tuple[str, ...]) -> Iterator[str]:
    """The placeholders in order of first appearance across ``texts`` (state, then questions)."""
    positions: dict[str, int] = {}
    offset = 0
    for text in texts:
        for placeholder in found:
            if placeholder not in positions:
                at = text.find(placeholder)
                if at >= 0:
                    positions[placeholder] = offset + at
        offset += len(text) + 1
    return iter(sorted(positions, key=positions.__getitem__))


QS = TypeVar("QS", bound=Mapping[str, Question])


def lift_with_questions(
    state: Any, questions: QS, encode: Callable[[QS], bytes] | None = None
) -> LiftedState:
    """:func:`lift_images` for a request over ``questions``: images attached with
    ``with_images`` may be mentioned in the questions alone (e.g. a choice criterion says
    ``<diagram>``), so their canonical text is searched too; it is built only for such a state.
    ``encode`` gives the questions' canonical wire bytes when a caller keeps them already. The
    one place every style and command lifts a state's images."""
    if not isinstance(state, StateWithImages):
        return lift_images(state)
    wire = encode(questions) if encode is not None else canonical_json(questions_to_wire(questions))
    return lift_images(state, wire.decode("utf-8"))


def lift_images(state: Any, questions_text: str = "") -> LiftedState:
    """Lift every image out of ``state`` into assets (seed 004: "content parts in the state are
    lifted into assets").

    Lifted, anywhere in nested objects and arrays: ``Image`` objects; OpenAI-style parts
    ``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``; Anthropic-style
    parts ``{"type": "image", "source": {"type": "base64", "media_type": ..., "data": ...}}``.
    Each is replaced by its placeholder string. A :class:`StateWithImages` adds images that the
    state (or ``questions_text``, e.g. choice criteria) mentions as ``<name>``; an attached image
    mentioned nowhere is an error (the API rejects an asset the state never mentions).

    Assets are numbered ``asset-0``, ``asset-1``, ... in order of first appearance in the state
    as sent (canonical JSON), then in ``questions_text``. An image under two placeholders is
    two assets, as the official SDK sends it. No limits are checked here: ``ImageLimits``
    does that, before any request.
    """
    if probe.observer is not None:
        probe.observer("assets.lift", state)
    if type(state) is str:
        # Text holds no image (only a StateWithImages attaches them): the common state is
        # lifted without the walk's three isinstance checks (issue 32 pack CPU: the plan lifts
        # every state of a batch).
        return LiftedState(state)
    attached: Mapping[str, Image] = {}
    if isinstance(state, StateWithImages):
        attached = state.images
        state = state.state
    found: dict[str, Image] = {}
    sent, changed = _walk(state, (), found)
    if not changed and not attached:
        return LiftedState(state)
    for image in attached.values():
        _found(image, f"<{image.alias}>", found)
    sent_text = sent if isinstance(sent, str) else canonical_json(sent).decode("utf-8")
    ordered = list(_first_mentions(found, (sent_text, questions_text)))
    missing = [p for p in found if p not in ordered]
    if missing:
        raise ImageError(
            f"classifier: image {missing[0]} is attached but neither the state nor the "
            f"questions mention {missing[0]}; the API rejects an asset the state never mentions",
            asset=missing[0],
            limit="mention",
        )
    assets = tuple(
        Asset(placeholder=p, image=found[p], part=f"asset-{i}") for i, p in enumerate(ordered)
    )
    return LiftedState(sent, assets)
