"""A System One server that misbehaves on purpose, on 127.0.0.1 port 0, for the hostile suite.

    with HostileServer() as server:
        server.answer = lambda req: Reply(200, body=b"bad credential: " + req.key.encode())
        ... POST {server.base_url}/systemone ...

``answer`` turns each request (its body, its headers and the key it carried) into a
:class:`Reply`: any status, any headers, any body bytes, optionally gzip-encoded with a
``Content-Encoding`` the body does not deserve. It is ``toolnexus serve`` itself
(``toolnexus.serve.Server`` in synthetic mode) with ``answer`` as its ``script`` hook: one
fake, not two (issue 11). ``Request`` and ``Reply`` are the server's own
``ScriptedRequest`` and ``ScriptedReply``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from serving import ThreadedServer
from toolnexus.serve import ScriptedReply, ScriptedRequest, ServeOptions

__all__ = [
    "HostileServer",
    "Reply",
    "Request",
    "qfile_fixture",
    "server_fixture",
    "valid_answer",
]

Request = ScriptedRequest
Reply = ScriptedReply


def valid_answer(request: Any) -> dict[str, Any]:
    """A valid answer body for a parsed request: every question answered, one-hot."""
    answers: dict[str, Any] = {}
    for key, q in request["questions"].items():
        if q["type"] == "noul":
            answers[key] = {"type": "noul", "noul": 0.9}
        elif q["type"] == "choice":
            opts = list(q["criteria"])
            probs = {o: float(i == 0) for i, o in enumerate(opts)}
            answers[key] = {
                "type": "choice",
                "choice": opts[0],
                "probabilities": probs,
                "confidence": 0.9,
            }
        elif q["type"] == "score":
            n = len(q["criteria"])
            answers[key] = {
                "type": "score",
                "score": 0.0,
                "legend": {str(i): str(i) for i in range(n)},
                "probabilities": {str(i): float(i == 0) for i in range(n)},
                "confidence": 0.9,
            }
        else:
            answers[key] = {"type": q["type"]}
    return {
        "model": request["model"],
        "answers": answers,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def _default(req: Request) -> Reply:
    return Reply(200, json.dumps(valid_answer(req.json)).encode())


class HostileServer:
    """``answer`` decides every ``POST /v1/systemone`` reply; ``seen`` keeps every such request."""

    def __init__(self, answer: Callable[[Request], Reply] = _default) -> None:
        self.answer = answer
        self.seen: list[Request] = []
        # No cap that a test could trip by accident: the hostile suite sends what it likes.
        self._threaded = ThreadedServer(ServeOptions(synthetic=True, max_body_bytes=1 << 30))
        self._threaded.server.script = self._script

    def _script(self, req: Request) -> Reply | None:
        if req.endpoint != "systemone":
            return None
        self.seen.append(req)
        return self.answer(req)

    @property
    def port(self) -> int:
        return self._threaded.server.port

    @property
    def base_url(self) -> str:
        return f"{self._threaded.url}/v1"

    def __enter__(self) -> HostileServer:
        self._threaded.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._threaded.__exit__(*exc)


def server_fixture(key: str) -> Any:
    """A module's ``server`` fixture: a :class:`HostileServer` with ``key`` as the key in the
    environment, so every request carries it (``server = server_fixture(KEY)``)."""

    @pytest.fixture
    def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[HostileServer]:
        monkeypatch.setenv("TYPESAFE_API_KEY", key)
        with HostileServer() as s:
            yield s

    return server


def qfile_fixture(questions: str) -> Any:
    """A module's ``qfile`` fixture: ``questions`` written to ``q.yaml`` in the test's tmp dir."""

    @pytest.fixture
    def qfile(tmp_path: Path) -> Path:
        p = tmp_path / "q.yaml"
        p.write_text(questions)
        return p

    return qfile
