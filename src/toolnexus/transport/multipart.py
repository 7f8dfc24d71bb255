"""The multipart/form-data body of a System One image request, encoded by httpx's encoder.

As the official SDK (typesafe-sdk 0.7.5) sends it: part ``request`` (no filename,
``application/json``) with the JSON body and its ``assets`` map, then one part per image,
``name="asset-N"; filename="asset-N"`` with the image's content type. The bytes are built once
per evaluate, so every retry resends exactly them.
"""

from __future__ import annotations

from collections.abc import Iterable

import httpx

__all__ = ["encode_multipart"]


def encode_multipart(
    request_json: bytes, parts: Iterable[tuple[str, str, bytes]], boundary: str
) -> tuple[bytes, str]:
    """``(body, content type)`` for the JSON part and each ``(name, content type, bytes)``.

    ``boundary`` is the caller's (32 hex digits, the SDK's uuid4-hex shape). httpx writes the
    same framing the SDK writes: ``--boundary``, Content-Disposition, Content-Type, a blank line,
    the content, CRLF; then ``--boundary--``.
    """
    files: list[tuple[str, tuple[str | None, bytes, str]]] = [
        ("request", (None, request_json, "application/json"))
    ]
    files.extend((name, (name, data, content_type)) for name, content_type, data in parts)
    content_type = f"multipart/form-data; boundary={boundary}"
    request = httpx.Request(
        "POST", "http://multipart.invalid/", files=files, headers={"Content-Type": content_type}
    )
    return request.read(), content_type
