"""Scripted replies: a test decides, request by request, exactly what the server answers.

``Server(options).script`` (or ``ServeOptions(script=...)``, ``serve(script=...)``) is a callable
that receives each API request as a :class:`ScriptedRequest` and returns a
:class:`ScriptedReply` (any status, any headers, any body bytes, optionally gzip-compressed, or
labelled with a ``Content-Encoding`` the body does not deserve) or ``None`` to let the normal
answer source (replay, synthetic, proxy) answer. This is how a client's behaviour is drilled
against an API that misbehaves in ways no :class:`~toolnexus.serve.Fault` names::

    def script(req: ScriptedRequest) -> ScriptedReply | None:
        if req.endpoint == "systemone" and "poison" in req.json["state"]:
            return ScriptedReply(200, b'{"model": "jev-latest", "answers": {}}')
        return None

Pure: no HTTP library here.
"""

from __future__ import annotations

import gzip as _gzip
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Script", "ScriptedReply", "ScriptedRequest"]


@dataclass(frozen=True)
class ScriptedRequest:
    """One API request as the server received it.

    ``body`` is the request body after ``Content-Encoding: zstd`` is decoded (the bytes as sent
    when there is no encoding, or one this server cannot decode); ``headers`` is the request's
    headers, looked up case-insensitively; ``endpoint`` is ``"systemone"`` or ``"models"``."""

    body: bytes
    headers: Mapping[str, str]
    endpoint: str = "systemone"
    #: seconds since the server started, on its clock: a script can time a storm of its own
    elapsed: float = 0.0

    @property
    def json(self) -> Any:
        """``body`` parsed as JSON (raises ``ValueError`` when it is not JSON)."""
        return json.loads(self.body)

    @property
    def key(self) -> str:
        """The bearer credential the client sent (``""`` when none)."""
        return self.headers.get("Authorization", "").removeprefix("Bearer ")


@dataclass
class ScriptedReply:
    """What the server sends back for a scripted request.

    ``headers`` are sent as given; ``Content-Type`` defaults to ``application/json`` and
    ``x-typesafe-request-id`` to the server's own id unless the reply sets them. With ``gzip``
    the body is sent gzip-compressed with ``Content-Encoding: gzip``; a ``Content-Encoding`` in
    ``headers`` without ``gzip`` is sent as is, over a body it does not describe."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    gzip: bool = False

    def wire(self) -> tuple[bytes, dict[str, str]]:
        """The body bytes and headers as sent (before the defaults the server adds)."""
        headers = dict(self.headers)
        if not self.gzip:
            return self.body, headers
        headers = {k: v for k, v in headers.items() if k.lower() != "content-encoding"}
        headers["Content-Encoding"] = "gzip"
        return _gzip.compress(self.body), headers


#: The ``script`` hook: a reply for a request, or ``None`` for the normal answer.
Script = Callable[[ScriptedRequest], ScriptedReply | None]
