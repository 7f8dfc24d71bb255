"""Reading a System One request off the wire: what ``POST /systemone`` receives.

A body arrives as JSON or as ``multipart/form-data`` (the official SDK's image form: a
``request`` part holding the JSON, then ``asset-N`` parts holding image bytes), optionally with
``Content-Encoding: zstd``. :func:`read_request` turns it into a :class:`WireRequest`, checked
by ``rules.py``, or raises :class:`~toolnexus.serve.rules.Reject`: 413 for a body that
decompresses past the size cap, 415 for a content encoding this server cannot decode (zstd
without a codec installed), and the API's 400/422 answers.

Pure apart from the optional zstd codec: no HTTP library here.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core import canonical_json
from .rules import ImageAsset, Reject, check_fields, check_rules, read_images, reject

__all__ = ["WireRequest", "read_request", "swap_placeholders", "zstd_decompressor"]


@dataclass(frozen=True)
class WireRequest:
    """A request the API would accept. ``body`` is the parsed JSON object (``assets`` included);
    ``images`` the attached images in body order."""

    model: str
    state: Any
    questions: Mapping[str, Any]
    body: Mapping[str, Any]
    images: tuple[ImageAsset, ...] = field(default=())

    def state_key(self) -> bytes:
        """The canonical state with every placeholder replaced by ``<sha256:HEX>``: what
        replay and the synthetic model key on (placeholders are random per SDK run)."""
        return self.key_of(self.state)

    def key_of(self, state: Any) -> bytes:
        """``state_key`` for one state of this request (a packed request's ``states[k]``): its
        canonical JSON with this request's image placeholders swapped for their hashes."""
        return swap_placeholders(canonical_json(state), self.image_hashes())

    def questions_key(self) -> bytes:
        """The canonical questions, placeholders swapped for image hashes as in ``state_key``."""
        return swap_placeholders(canonical_json(self.questions), self.image_hashes())

    def image_hashes(self) -> list[tuple[str, str]]:
        """``(placeholder, sha256)`` of each image, in body order."""
        return [(image.placeholder, image.sha256) for image in self.images]


def swap_placeholders(text: bytes, images: Iterable[tuple[str, str]]) -> bytes:
    """``text`` with each ``(placeholder, sha256)`` placeholder replaced by ``<sha256:HEX>``."""
    for placeholder, digest in images:
        text = text.replace(placeholder.encode("utf-8"), f"<sha256:{digest}>".encode())
    return text


# --- decoding ---------------------------------------------------------------------------------


def zstd_decompressor() -> Callable[[bytes, int], bytes] | None:
    """``decompress(data, limit)`` from the stdlib ``compression.zstd`` (Python 3.14+) or its
    backport ``backports.zstd`` (the same API, and the codec the official SDK compresses with),
    or ``None`` when neither is importable. Raises :class:`Reject` (413) past ``limit`` bytes."""
    module: Any = None
    for name in ("compression.zstd", "backports.zstd"):
        try:
            module = importlib.import_module(name)
            break
        except ImportError:
            continue
    if module is None:
        return None

    def decompress(data: bytes, limit: int) -> bytes:
        decompressor = module.ZstdDecompressor()
        try:
            out: bytes = decompressor.decompress(data, max_length=limit + 1)
        except module.ZstdError as e:
            raise reject(400, f"The request body is not valid zstd: {e}.") from None
        if len(out) > limit:
            raise reject(
                413,
                f"The request body decompresses to more than {limit:,} bytes, this server's "
                "limit (--max-body-bytes).",
                "too_large",
            )
        if not decompressor.eof:
            raise reject(400, "The request body is truncated zstd.")
        return out

    return decompress


def _boundary(content_type: str) -> bytes:
    m = re.search(r'boundary="?([^";]+)"?', content_type)
    if m is None:
        raise reject(400, "A multipart/form-data body needs a boundary parameter.")
    return m.group(1).encode("latin-1")


def _parts(body: bytes, boundary: bytes) -> dict[str, bytes]:
    """The parts of a multipart/form-data body by their ``name``, in order."""
    delimiter = b"--" + boundary
    chunks = body.split(delimiter)
    if len(chunks) < 3 or not chunks[-1].startswith(b"--"):
        raise reject(400, "The multipart/form-data body is malformed (no closing boundary).")
    parts: dict[str, bytes] = {}
    for chunk in chunks[1:-1]:
        chunk = chunk.removeprefix(b"\r\n").removesuffix(b"\r\n")
        head, sep, content = chunk.partition(b"\r\n\r\n")
        if not sep:
            raise reject(400, "A multipart part has no header/body separator.")
        m = re.search(rb'(?im)^content-disposition:.*?\bname="([^"]*)"', head)
        if m is None:
            raise reject(400, "A multipart part has no Content-Disposition name.")
        name = m.group(1).decode("utf-8", "replace")
        if name in parts:
            raise reject(400, f"The multipart part {name!r} appears twice.")
        parts[name] = content
    return parts


def read_request(
    raw: bytes,
    *,
    content_type: str,
    content_encoding: str,
    max_body_bytes: int,
    allow_unknown_types: bool = False,
) -> WireRequest:
    """Decode, parse and validate one ``POST /systemone`` body, or raise :class:`Reject`."""
    encoding = content_encoding.strip().lower()
    if encoding in ("zstd",):
        decompress = zstd_decompressor()
        if decompress is None:
            raise reject(
                415,
                "Content-Encoding: zstd is not supported by this server (install backports.zstd, "
                "or run on Python 3.14+).",
                "unsupported_encoding",
            )
        raw = decompress(raw, max_body_bytes)
    elif encoding not in ("", "identity"):
        raise reject(415, f"Unsupported Content-Encoding: {encoding}.", "unsupported_encoding")
    parts: dict[str, bytes] | None = None
    mime = content_type.split(";", 1)[0].strip().lower()
    if mime == "multipart/form-data":
        parts = _parts(raw, _boundary(content_type))
        if "request" not in parts:
            raise reject(400, "A multipart/form-data body needs a 'request' part (the JSON).")
        raw = parts.pop("request")
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise Reject(
            422,
            {
                "detail": [
                    {
                        "type": "json_invalid",
                        "loc": ["body", getattr(e, "pos", 0)],
                        "msg": "JSON decode error",
                        "input": {},
                        "ctx": {"error": str(e).split(":")[0]},
                    }
                ]
            },
        ) from None
    check_fields(body, allow_unknown_types)
    check_rules(body)
    images = read_images(body, parts)
    return WireRequest(
        model=body["model"],
        state=body["state"],
        questions=body["questions"],
        body=body,
        images=images,
    )
