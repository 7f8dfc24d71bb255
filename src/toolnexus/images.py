"""Images (seed 004, Jev 1.14 experimental): ``Image``, ``image_size``, the limits, and lifting
image content parts out of a state into assets.

Pure: no HTTP, no terminal. The one I/O is reading an ``Image`` made from a path, lazily and once.

System One takes PNG and JPEG, sent beside the JSON body as multipart parts; the state refers to
each image by a placeholder string. The official SDK makes its placeholders random, so the same
state never makes the same request twice; here they are DETERMINISTIC: ``<alias>`` when the caller
names the image, else ``<image:`` + the first 32 hex digits of the bytes' sha256 + ``>`` (the
SDK's shape, derived instead of drawn). The same state and images therefore always make the same
request, recording and cache key, and a key is always about the bytes, never a random name.

Limits (checked before any request; every error names the asset and the limit):

===========================  ===========  ====================================================
limit                        default      source
===========================  ===========  ====================================================
``image_max_bytes``          16 MiB       seed 004, decoded bytes per image
``request_image_max_bytes``  32 MiB       seed 004, decoded bytes of all images of one request
``image_min_side``           16 px        PROPOSED default (no public source gives one)
``image_max_side``           8000 px      PROPOSED default (no public source gives one)
===========================  ===========  ====================================================

Why those two sides. Minimum 16 px: vision encoders cut an image into patches of 14-16 px, so an
image with a side under 16 px is at most one patch across and carries no spatial structure for
the model to read; such files are in practice tracking pixels, spacers and broken thumbnails.
Maximum 8000 px: the largest side a major vision API accepts (Anthropic's Messages API rejects
an image over 8000 px on a side), and 8000 x 8000 = 64 Mpx stays under the 89.5 Mpx at which
Pillow starts treating an image as a decompression bomb: a 16 MiB PNG of one flat colour can
declare far more pixels than any server will decode. Both are proposals, owner to confirm, and
``ImageLimits`` on a classifier overrides them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .canonical import canonical_json
from .errors import ConfigError, ImageError

__all__ = [
    "IMAGE_MAX_BYTES",
    "IMAGE_MAX_SIDE",
    "IMAGE_MIN_SIDE",
    "REQUEST_IMAGE_MAX_BYTES",
    "Asset",
    "Image",
    "ImageLimits",
    "LiftedState",
    "StateWithImages",
    "image_format",
    "image_size",
    "lift_images",
    "with_images",
]

#: Per image, DECODED bytes (seed 004 ``image-max-bytes``).
IMAGE_MAX_BYTES = 16 * 1024 * 1024
#: All images of one request, DECODED bytes (seed 004 ``request-image-max-bytes``).
REQUEST_IMAGE_MAX_BYTES = 32 * 1024 * 1024
#: The shortest side an image may have, in pixels. A PROPOSED default: see the module docstring.
IMAGE_MIN_SIDE = 16
#: The longest side an image may have, in pixels. A PROPOSED default: see the module docstring.
IMAGE_MAX_SIDE = 8000

_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_JPEG_MAGIC = b"\xff\xd8\xff"
_MEDIA_TYPES = {"png": "image/png", "jpeg": "image/jpeg"}
_FORMAT_OF_MEDIA_TYPE = {"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg"}
# An alias becomes the placeholder "<alias>": plain characters only, so it reads the same in
# JSON, in a recording and in a terminal, and never needs escaping.
_ALIAS = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,63}")
_DATA_URL = re.compile(r"data:([^;,]*)((?:;[^;,]*)*),(.*)", re.DOTALL)


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):g} MiB" if n % (1024 * 1024) == 0 else f"{n:,} bytes"


# --- format and size -------------------------------------------------------------------------


def image_format(data: bytes | bytearray | memoryview) -> str | None:
    """``"png"`` or ``"jpeg"`` from the magic bytes (PNG ``89 50 4E 47 0D 0A 1A 0A``, JPEG
    ``FF D8 FF``), or ``None`` for anything else."""
    head = bytes(data[:8])
    if head.startswith(_PNG_MAGIC):
        return "png"
    if head.startswith(_JPEG_MAGIC):
        return "jpeg"
    return None


# JPEG markers C0..CF are frames (SOF0..SOF15) except these three, which share the range:
# DHT (Huffman tables), JPG (reserved extension) and DAC (arithmetic conditioning).
_NOT_FRAMES = frozenset({0xC4, 0xC8, 0xCC})
# Markers with no length field: TEM, RST0..RST7, and SOI.
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8), 0xD8})


def image_size(format: str, data: bytes | bytearray | memoryview) -> tuple[int, int] | None:
    """``(width, height)`` read from the PNG IHDR or the first JPEG SOF marker of the decoded
    bytes, or ``None`` when the bytes are not a readable header of ``format`` (``"png"`` |
    ``"jpeg"``). Pure Python; only the header is read, never the pixels.

    JPEG: segments are walked from SOI, skipping every marker that is not a frame (APPn such as
    EXIF and JFIF, DQT, DHT, DAC, JPG, DRI, COM, ...) by its length, until the first SOFn
    (baseline SOF0, progressive SOF2, lossless, arithmetic: any of them). A scan (SOS) or the end
    (EOI) before any frame, a truncated segment, or a frame declaring height 0 (the height then
    comes later in a DNL segment, which this does not chase) is ``None``.
    """
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    if format == "png":
        # Signature, then the first chunk, which the PNG spec requires to be IHDR of length 13.
        if (
            len(view) < 24
            or bytes(view[:8]) != _PNG_MAGIC
            or bytes(view[8:16]) != (b"\x00\x00\x00\rIHDR")
        ):
            return None
        width, height = struct.unpack(">II", bytes(view[16:24]))
        return (width, height) if width and height else None
    if format == "jpeg":
        return _jpeg_size(bytes(view[:2]), view)
    return None


def _jpeg_size(soi: bytes, data: bytes | memoryview) -> tuple[int, int] | None:
    if soi != b"\xff\xd8":
        return None
    i, n = 2, len(data)
    while i < n:
        if data[i] != 0xFF:
            return None  # garbage between segments: not a readable header
        while i < n and data[i] == 0xFF:  # any number of fill bytes may precede a marker
            i += 1
        if i >= n:
            return None
        marker = data[i]
        i += 1
        if marker in _STANDALONE:
            continue
        if marker in (0xD9, 0xDA):  # EOI or SOS before any frame
            return None
        if i + 2 > n:
            return None
        length = (data[i] << 8) | data[i + 1]
        if length < 2:
            return None
        if 0xC0 <= marker <= 0xCF and marker not in _NOT_FRAMES:
            # SOFn: length(2) precision(1) height(2) width(2) ...
            if i + 7 > n or length < 7:
                return None
            height = (data[i + 3] << 8) | data[i + 4]
            width = (data[i + 5] << 8) | data[i + 6]
            return (width, height) if width and height else None
        i += length
    return None


# --- the limits ------------------------------------------------------------------------------

_LIMIT_NAMES = ("image_max_bytes", "request_image_max_bytes", "image_min_side", "image_max_side")


@dataclass(frozen=True)
class ImageLimits:
    """The image limits one classifier enforces before any request. The defaults are seed 004's
    byte limits and this library's PROPOSED side limits (see the module docstring); a classifier
    takes ``image_limits=ImageLimits(image_max_side=4096)`` to tighten or widen them."""

    image_max_bytes: int = IMAGE_MAX_BYTES
    request_image_max_bytes: int = REQUEST_IMAGE_MAX_BYTES
    image_min_side: int = IMAGE_MIN_SIDE
    image_max_side: int = IMAGE_MAX_SIDE

    def __post_init__(self) -> None:
        for name in _LIMIT_NAMES:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(
                    f"classifier: image limit {name} must be a whole number >= 1, got {value!r}"
                )
        if self.image_min_side > self.image_max_side:
            raise ConfigError(
                f"classifier: image_min_side ({self.image_min_side}) is above image_max_side "
                f"({self.image_max_side})"
            )

    @classmethod
    def of(cls, value: ImageLimits | Mapping[str, int] | None) -> ImageLimits:
        """The ``image_limits=`` option as limits: ``None`` (the defaults), an ``ImageLimits``,
        or a mapping of some of its fields, e.g. ``{"image_max_side": 4096}``."""
        if value is None:
            return cls()
        if isinstance(value, ImageLimits):
            return value
        if isinstance(value, Mapping):
            names = _LIMIT_NAMES
            unknown = sorted(str(k) for k in value if k not in names)
            if unknown:
                raise ConfigError(
                    f"classifier: unknown image limit {unknown[0]!r}; use any of {', '.join(names)}"
                )
            return cls(**dict(value))
        raise ConfigError(
            "classifier: image_limits must be an ImageLimits or a mapping of limits, got "
            f"{type(value).__name__}"
        )

    def check(self, image: Image) -> None:
        """Raise ImageError when ``image`` breaks a per-image limit: its byte size (checked from
        the file's size before reading it), its format, its readable size, its sides."""
        label = image.label
        nbytes = image.nbytes
        if nbytes > self.image_max_bytes:
            raise ImageError(
                f"classifier: {label} is {nbytes:,} bytes, over the image_max_bytes limit of "
                f"{_mib(self.image_max_bytes)} ({self.image_max_bytes:,} bytes) per image; "
                "shrink or recompress it",
                asset=label,
                limit="image_max_bytes",
            )
        size = image.size
        if size is None:
            raise ImageError(
                f"classifier: {label} is not a readable {image.format.upper()}: no width and "
                "height in its header (truncated or damaged file?)",
                asset=label,
                limit="image_size",
            )
        width, height = size
        if min(width, height) < self.image_min_side:
            raise ImageError(
                f"classifier: {label} is {width}x{height} px, under the image_min_side limit of "
                f"{self.image_min_side} px",
                asset=label,
                limit="image_min_side",
            )
        if max(width, height) > self.image_max_side:
            raise ImageError(
                f"classifier: {label} is {width}x{height} px, over the image_max_side limit of "
                f"{self.image_max_side} px; scale it down",
                asset=label,
                limit="image_max_side",
            )

    def check_request(self, assets: tuple[Asset, ...]) -> None:
        """Every per-image limit, then the total over one request (an image sent under two
        placeholders counts twice: it is sent twice)."""
        total = 0
        for asset in assets:
            self.check(asset.image)
            total += asset.image.nbytes
            if total > self.request_image_max_bytes:
                raise ImageError(
                    f"classifier: the images of this request add up to {total:,} bytes at "
                    f"{asset.image.label}, over the request_image_max_bytes limit of "
                    f"{_mib(self.request_image_max_bytes)} ({self.request_image_max_bytes:,} "
                    "bytes); send fewer or smaller images per state",
                    asset=asset.image.label,
                    limit="request_image_max_bytes",
                )


# --- Image -----------------------------------------------------------------------------------


class Image:
    """An image for a state: from bytes (any buffer), a path, or base64 text
    (``Image.from_base64``). The bytes are read lazily, on first use, and exactly once; the
    format comes from the magic bytes and must be PNG or JPEG.

    ``alias`` names the image in the state: an image with ``alias="before"`` is sent as the
    placeholder ``<before>``; without one the placeholder is derived from the bytes.
    """

    __slots__ = ("_b64", "_data", "_format", "_path", "_sha256", "_size", "_source", "alias")

    def __init__(
        self,
        source: bytes | bytearray | memoryview | str | os.PathLike[str],
        *,
        alias: str | None = None,
    ) -> None:
        if alias is not None and (not isinstance(alias, str) or not _ALIAS.fullmatch(alias)):
            raise ImageError(
                f"classifier: image alias {alias!r} must be 1-64 letters, digits or _ . : - "
                "(it becomes the placeholder <alias>)",
                asset=repr(alias),
                limit="alias",
            )
        self.alias = alias
        self._path: Path | None = None
        self._source: Any = None
        self._b64: str | None = None
        if isinstance(source, str | os.PathLike):
            self._path = Path(source)
        else:
            try:
                memoryview(source)
            except TypeError:
                raise ImageError(
                    "classifier: an Image takes bytes (any buffer), a path, or base64 text via "
                    f"Image.from_base64, got {type(source).__name__}",
                    asset=alias or "",
                    limit="format",
                ) from None
            self._source = source
        self._data: bytes | None = None
        self._format: str | None = None
        self._sha256: str | None = None
        self._size: tuple[int, int] | bool | None = False  # False: not read yet

    @classmethod
    def from_base64(cls, text: str, *, alias: str | None = None) -> Image:
        """An image from base64 text (standard alphabet; whitespace and line breaks are
        ignored), decoded lazily and once."""
        if not isinstance(text, str):
            raise ImageError(
                f"classifier: Image.from_base64 takes text, got {type(text).__name__}",
                asset=alias or "",
                limit="format",
            )
        image = cls(b"", alias=alias)
        image._source = None
        image._b64 = text
        return image

    # --- naming --------------------------------------------------------------------------

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def label(self) -> str:
        """How errors name this image: its alias, its path, or its placeholder."""
        if self.alias is not None:
            return f"image <{self.alias}>"
        if self._path is not None:
            return f"image '{self._path}'"
        if self._b64 is not None and self._data is None:
            return "image (base64)"
        return f"image {self.placeholder}"

    @property
    def placeholder(self) -> str:
        """The string the state carries in this image's place: ``<alias>``, or
        ``<image:`` + 32 hex digits of the bytes' sha256 + ``>``."""
        if self.alias is not None:
            return f"<{self.alias}>"
        return f"<image:{self.sha256[:32]}>"

    def __repr__(self) -> str:
        where = (
            f"path={str(self._path)!r}"
            if self._path is not None
            else (f"{len(self._data):,} bytes" if self._data is not None else "unread")
        )
        alias = f", alias={self.alias!r}" if self.alias is not None else ""
        return f"Image({where}{alias})"

    # --- the bytes -----------------------------------------------------------------------

    @property
    def nbytes(self) -> int:
        """The decoded size in bytes. For a path, the file's size, read WITHOUT reading the
        file, so an oversized file is refused before it is loaded."""
        if self._data is not None:
            return len(self._data)
        if self._path is not None:
            try:
                return self._path.stat().st_size
            except OSError as e:
                raise self._read_error(e) from None
        if self._b64 is not None:
            compact = "".join(self._b64.split())
            return len(compact) * 3 // 4 - compact[-2:].count("=")
        return memoryview(self._source).nbytes

    def _read_error(self, e: OSError) -> ImageError:
        reason = e.strerror or type(e).__name__
        return ImageError(
            f"classifier: {self.label}: cannot read it: {reason}",
            asset=self.label,
            limit="read",
        )

    @property
    def data(self) -> bytes:
        """The image bytes, read (or decoded) on first use and kept."""
        if self._data is None:
            if self._path is not None:
                try:
                    self._data = self._path.read_bytes()
                except OSError as e:
                    raise self._read_error(e) from None
            elif self._b64 is not None:
                try:
                    self._data = base64.b64decode("".join(self._b64.split()), validate=True)
                except (binascii.Error, ValueError):
                    raise ImageError(
                        f"classifier: {self.label} is not valid base64",
                        asset=self.label,
                        limit="format",
                    ) from None
            else:
                self._data = bytes(memoryview(self._source).cast("B"))
                self._source = None
            if not self._data:
                raise ImageError(
                    f"classifier: {self.label} is empty", asset=self.label, limit="format"
                )
        return self._data

    @property
    def format(self) -> str:
        """``"png"`` or ``"jpeg"``, from the magic bytes; anything else is an ImageError."""
        if self._format is None:
            found = image_format(self.data)
            if found is None:
                head = self.data[:4].hex(" ")
                raise ImageError(
                    f"classifier: {self.label} is neither PNG nor JPEG (it starts {head}); "
                    "System One takes PNG and JPEG",
                    asset=self.label,
                    limit="format",
                )
            self._format = found
        return self._format

    @property
    def media_type(self) -> str:
        """``image/png`` or ``image/jpeg``: the content type of its multipart part."""
        return _MEDIA_TYPES[self.format]

    @property
    def sha256(self) -> str:
        """The lower-case hex sha256 of the bytes: what cache keys and recordings match on."""
        if self._sha256 is None:
            self._sha256 = hashlib.sha256(self.data).hexdigest()
        return self._sha256

    @property
    def size(self) -> tuple[int, int] | None:
        """``(width, height)`` from the header, or ``None`` when unreadable."""
        if self._size is False:
            self._size = image_size(self.format, self.data)
        assert self._size is not True
        return self._size

    def data_url(self) -> str:
        """``data:<media type>;base64,<bytes>``: how a chat endpoint takes an image."""
        return f"data:{self.media_type};base64,{base64.b64encode(self.data).decode('ascii')}"


# --- lifting ---------------------------------------------------------------------------------


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
