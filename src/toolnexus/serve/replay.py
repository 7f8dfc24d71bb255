"""The ``--replay DIR`` answer source: recordings as ``--record`` writes them, matched on the
canonical request, the canonical state and the image hashes.

Questions are keyed as received, by their canonical JSON (issue 33): a replay answers only the
request that was recorded, never one the typed question round trip would fold into it (a noul
``{"true": X}`` is not ``{"true": X, "false": ""}``). toolnexus sends and records its questions
in its wire form (``questions_to_wire``), so its own recordings match its requests, and a
request the official SDK sends with the same JSON matches them too. Every image placeholder,
in the state and in the questions, is replaced by the sha256 of its image before keying: the
SDK draws a random placeholder per run, so a key on the placeholder text would never match
twice (wire reference, "Images").

A request is first matched with its model; failing that, on the questions, state and images
alone, as toolnexus's own ``--replay`` does (a recording made against ``jev-latest`` still
answers a host that pins ``jev-1.13.0``). A miss is a 409 whose body names the question-set
digest (``canonical.questions_sha256``, what batch records carry), a preview of the state,
and how to record the exchange.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import QUESTIONS_DIGEST, canonical_json, sha256_hex
from ..styles import Recording, load_recordings
from .rules import Reject
from .wire import WireRequest, swap_placeholders

__all__ = [
    "QUESTION_SET_DIGEST",
    "ReplayIndex",
    "miss_body",
    "question_key",
    "question_set_sha256",
    "state_preview",
]


def question_key(questions: Mapping[str, Any]) -> bytes:
    """The canonical bytes of a question set as received (its wire JSON, never re-typed)."""
    return canonical_json(questions)


def _keys(
    model: str, questions: Mapping[str, Any], state: Any, images: Iterable[tuple[str, str]]
) -> tuple[str, str]:
    pairs = list(images)
    q = swap_placeholders(question_key(questions), pairs)
    s = swap_placeholders(canonical_json(state), pairs)
    loose = sha256_hex(b"q" + q + b"\x00s" + s)
    return sha256_hex(model.encode("utf-8") + b"\x00" + loose.encode()), loose


def state_preview(state: Any, width: int = 60) -> str:
    """A short one-line excerpt of a state, to name it without dumping a whole ticket."""
    text = state if isinstance(state, str) else canonical_json(state).decode("utf-8")
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


#: How a message names the digest it prints: the records' ``questions_sha256``.
QUESTION_SET_DIGEST = f"{QUESTIONS_DIGEST} (questions_sha256)"


def question_set_sha256(questions: Mapping[str, Any]) -> str:
    """The question-set digest over the wire object as it came: for a request toolnexus sent,
    the ``questions_sha256`` that batch records carry (``canonical.questions_sha256`` hashes
    the same canonical bytes)."""
    return sha256_hex(canonical_json(questions))


def miss_body(request: WireRequest, directory: str) -> dict[str, Any]:
    """The 409 body of a replay miss (the SDK reads ``detail.message``)."""
    digest = question_set_sha256(request.questions)
    preview = state_preview(request.state)
    message = (
        f"replay miss: no recording in {directory} for state {preview!r} with "
        f"{QUESTION_SET_DIGEST} {digest[:12]}; record it once with `toolnexus serve --proxy URL "
        f"--record {directory}` (or `toolnexus eval/batch --record {directory}`) and serve again"
    )
    return {
        "detail": {"error_type": "replay_miss", "message": message},
        "questions_sha256": digest,
        "state_preview": preview,
        "images_sha256": [image.sha256 for image in request.images],
        "replay_dir": directory,
    }


def _recorded_images(recording: Recording) -> list[tuple[str, str]]:
    assets = recording.assets or {}
    return [(str(placeholder), spec["sha256"]) for placeholder, spec in assets.items()]


@dataclass
class ReplayIndex:
    """Recorded response bodies by request key. Build with :meth:`load` or :meth:`of`."""

    directory: str
    exact: dict[str, Mapping[str, Any]]
    loose: dict[str, Mapping[str, Any]]

    @classmethod
    def of(cls, recordings: Iterable[Recording], directory: str = "<memory>") -> ReplayIndex:
        exact: dict[str, Mapping[str, Any]] = {}
        loose: dict[str, Mapping[str, Any]] = {}
        for r in recordings:
            full, partial = _keys(r.model, r.questions, r.state, _recorded_images(r))
            exact.setdefault(full, r.response)
            loose.setdefault(partial, r.response)
        return cls(directory, exact, loose)

    @classmethod
    def load(cls, directory: str | Path) -> ReplayIndex:
        """Every recording of ``directory``; a ``ConfigError`` naming the directory or file when
        it is missing, empty, or holds a broken recording."""
        return cls.of(load_recordings(directory), str(directory))

    def __len__(self) -> int:
        return len(self.loose)

    def find(self, request: WireRequest) -> Mapping[str, Any] | None:
        full, partial = _keys(
            request.model, request.questions, request.state, request.image_hashes()
        )
        return self.exact.get(full) or self.loose.get(partial)

    def miss(self, request: WireRequest) -> Reject:
        """The 409 for a request no recording answers, naming what is missing."""
        return Reject(409, miss_body(request, self.directory), "replay_miss")

    def answer(self, request: WireRequest) -> Mapping[str, Any]:
        """The recorded body, or a :class:`Reject` 409 naming what is missing."""
        hit = self.find(request)
        if hit is None:
            raise self.miss(request)
        return hit
