"""Image bytes and image limits (seed 004, Jev 1.14 experimental): ``image_format``,
``image_size`` and ``ImageLimits``. Pure: no I/O, no HTTP. ``images.Image`` is built on this
module; it reads only what an image shows of itself (its label, byte count, format, size).

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

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from .errors import ConfigError, ImageError

__all__ = [
    "IMAGE_MAX_BYTES",
    "IMAGE_MAX_SIDE",
    "IMAGE_MIN_SIDE",
    "MEDIA_TYPES",
    "REQUEST_IMAGE_MAX_BYTES",
    "ImageLimits",
    "image_format",
    "image_size",
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
MEDIA_TYPES = {"png": "image/png", "jpeg": "image/jpeg"}


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


class _Checked(Protocol):
    """What ``ImageLimits.check`` reads of an image (``images.Image``). Typed by shape, so this
    module imports neither ``images`` nor ``assets``, which import it."""

    @property
    def label(self) -> str: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def format(self) -> str: ...
    @property
    def size(self) -> tuple[int, int] | None: ...


class _HasImage(Protocol):
    """What ``ImageLimits.check_request`` reads of an asset (``assets.Asset``): its image."""

    @property
    def image(self) -> _Checked: ...


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

    def check(self, image: _Checked) -> None:
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

    def check_request(self, assets: tuple[_HasImage, ...]) -> None:
        """Over the assets of one request (``LiftedState.assets``): every per-image limit, then
        the total (an image sent under two placeholders counts twice: it is sent twice)."""
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
