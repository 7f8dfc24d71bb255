"""Images (seed 004, Jev 1.14 experimental): ``Image``, ``image_size``, the limits.

Pure: no HTTP, no terminal. The one I/O is reading an ``Image`` made from a path, lazily and once.
Lifting image content parts out of a state into assets is ``assets.py``, built on this module.

System One takes PNG and JPEG, sent beside the JSON body as multipart parts; the state refers to
each image by a placeholder string. The official SDK makes its placeholders random, so the same
state never makes the same request twice; here they are DETERMINISTIC: ``<alias>`` when the caller
names the image, else ``<image:`` + the first 32 hex digits of the bytes' sha256 + ``>`` (the
SDK's shape, derived instead of drawn). The same state and images therefore always make the same
request, recording and cache key, and a key is always about the bytes, never a random name.

The format sniffing and the limits (``image_format``, ``image_size``, ``ImageLimits``, with the
table of defaults and why) are ``imagelimits.py``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from pathlib import Path
from typing import Any

from .errors import ImageError
from .imagelimits import (
    MEDIA_TYPES,
    image_format,
    image_size,
)

__all__ = [
    "Image",
]

# An alias becomes the placeholder "<alias>": plain characters only, so it reads the same in
# JSON, in a recording and in a terminal, and never needs escaping.
_ALIAS = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]{0,63}")


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
        return MEDIA_TYPES[self.format]

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
