"""The static corpus on disk: record live exchanges, load them back, explain a miss.

One recording is one JSON file::

    {"model":       the model REQUESTED,
     "served_model": the model that answered (the response's "model"),
     "endpoint":    the configured endpoint, ${ENV} references left unexpanded,
     "state":       the state as sent,
     "questions":   the question set in wire form,
     "response":    the response body,
     "recorded_at": UTC ISO-8601 time,
     "assets":      ONLY for a request with images: {placeholder: {"type": "image",
                    "sha256": <hex>}}, each image's digest and never its bytes}

named ``<sha256 of canonical request + canonical state [+ canonical assets]>.json``, where
canonical request is ``canonical_request(model, questions)`` and canonical state is
``canonical_json(state)`` (the state AS SENT: images replaced by their placeholders), the byte
strings concatenated. No headers, no keys and no image bytes are ever written.

Replaying loads every file of a directory into the ``static`` style, which answers by the canonical
question set plus the canonical state (not the model: a recording made against ``jev-latest``
still answers when the host pins ``jev-1.13.0``). Pure apart from file I/O: no httpx, no rich.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..config.options import RecordedDecision
from ..core import (
    QUESTIONS_DIGEST,
    ClassifierError,
    ConfigError,
    DecisionError,
    Question,
    QuestionError,
    StaticMiss,
    canonical_json,
    canonical_request,
    loads,
    normalize_questions,
    parse_decision,
    questions_to_wire,
    redact_url,
    sha256_hex,
)

__all__ = [
    "RECORDING_FIELDS",
    "Recording",
    "load_recordings",
    "read_recording",
    "recording_name",
    "replay_miss_message",
    "wire_recording_name",
    "write_recording",
    "write_wire_recording",
]

#: Every key of a recording file, in the order the docstring describes them.
RECORDING_FIELDS = (
    "model",
    "served_model",
    "endpoint",
    "state",
    "questions",
    "response",
    "recorded_at",
)


def recording_name(
    model: str,
    questions: Mapping[str, Question],
    state: Any,
    assets: Mapping[str, Any] | None = None,
) -> str:
    """The file name of a recording: sha256 of canonical request + canonical state (+ canonical
    assets, when the request had images), ``.json``."""
    tail = canonical_json(dict(assets)) if assets else b""
    return sha256_hex(canonical_request(model, questions) + canonical_json(state) + tail) + ".json"


@dataclass(frozen=True)
class Recording:
    """One recorded exchange, as read from disk. ``questions`` is in wire form."""

    path: Path | None
    model: str
    served_model: str
    endpoint: str
    state: Any
    questions: Mapping[str, Any]
    response: Mapping[str, Any]
    recorded_at: str
    #: ``{placeholder: {"type": "image", "sha256": hex}}`` for a request with images, else None.
    assets: Mapping[str, Any] | None = None

    def askable(self) -> bool:
        """Whether toolnexus could have sent exactly this request's questions: its typed
        questions hold them and send them back as the same JSON. A recording ``serve --record``
        made of a request the wire allows may hold questions they cannot (noul ``criteria:
        null``) or would send otherwise (a one-sided noul, sent two-sided): a replay must never
        answer toolnexus's request with it (issue 33)."""
        try:
            typed = normalize_questions(self.questions)
        except QuestionError:
            return False
        return canonical_json(questions_to_wire(typed)) == canonical_json(self.questions)

    def to_recorded_decision(self) -> RecordedDecision:
        """The entry the ``static`` style answers from (matching images by their sha256)."""
        return RecordedDecision(
            state=self.state, questions=self.questions, response=self.response, assets=self.assets
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "served_model": self.served_model,
            "endpoint": self.endpoint,
            "state": self.state,
            "questions": dict(self.questions),
            "response": dict(self.response),
            "recorded_at": self.recorded_at,
            **({"assets": dict(self.assets)} if self.assets else {}),
        }


def _utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_recording(
    directory: str | os.PathLike[str],
    *,
    model: str,
    endpoint: str,
    state: Any,
    questions: Mapping[str, Question],
    response: Mapping[str, Any],
    recorded_at: str | None = None,
    assets: Mapping[str, Any] | None = None,
) -> Path:
    """Write one exchange into ``directory`` (created when missing) and return its path.

    ``state`` is the state as sent; a request with images passes ``assets``, each placeholder's
    ``{"type": "image", "sha256": hex}`` (``LiftedState.key_assets()``), never the bytes.

    Written atomically (a temporary file in the same directory, then ``os.replace``), so a
    reader never sees half a file and two writers of the same exchange leave one whole file.
    """
    return write_wire_recording(
        directory,
        model=model,
        endpoint=endpoint,
        state=state,
        questions=questions_to_wire(questions),
        response=response,
        recorded_at=recorded_at,
        assets=assets,
    )


def wire_recording_name(
    model: str, questions: Mapping[str, Any], state: Any, assets: Mapping[str, Any] | None = None
) -> str:
    """:func:`recording_name` of a request as received: ``questions`` is its wire JSON, hashed
    as it came (canonical bytes), so a request toolnexus sent gets the same name either way."""
    tail = canonical_json(dict(assets)) if assets else b""
    head = canonical_json({"model": model, "questions": questions})
    return sha256_hex(head + canonical_json(state) + tail) + ".json"


def write_wire_recording(
    directory: str | os.PathLike[str],
    *,
    model: str,
    endpoint: str,
    state: Any,
    questions: Mapping[str, Any],
    response: Mapping[str, Any],
    recorded_at: str | None = None,
    assets: Mapping[str, Any] | None = None,
) -> Path:
    """:func:`write_recording` for a request as received (``serve --proxy --record``): the
    questions are its wire JSON, written exactly as they came, never through the typed question
    round trip, which is narrower than the wire (issue 33: a noul ``{"true": X}`` is not
    ``{"true": X, "false": ""}``, and ``criteria: null`` has no typed form)."""
    served = response.get("model")
    record = Recording(
        path=None,
        model=model,
        served_model=served if isinstance(served, str) else "",
        # Recordings are meant to be committed: a key in the URL never reaches one (issue 17).
        endpoint=redact_url(endpoint),
        state=state,
        questions=dict(questions),
        response=response,
        recorded_at=recorded_at or _utc_now(),
        assets=dict(assets) if assets else None,
    )
    folder = Path(directory)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / wire_recording_name(model, questions, state, assets)
        text = json.dumps(record.to_json(), indent=2, sort_keys=False, ensure_ascii=False)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".recording-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text + "\n")
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        raise ConfigError(
            f"classifier: cannot write a recording into {folder}: {e.strerror or e}"
        ) from None
    return target


def _field(obj: Mapping[str, Any], name: str, kind: type | tuple[type, ...], path: Path) -> Any:
    if name not in obj:
        raise ConfigError(f"classifier: recording {path}: missing {name!r}")
    value = obj[name]
    if not isinstance(value, kind):
        raise ConfigError(f"classifier: recording {path}: {name!r} has the wrong type")
    return value


def read_recording(path: str | os.PathLike[str]) -> Recording:
    """One recording file, checked: every field present, the questions well formed, and the
    response decodable against them, so a bad file fails when loaded, naming its path."""
    p = Path(path)
    try:
        # Bounded (depth, number length): a recording is a file anyone may hand us.
        obj = loads(p.read_bytes())
    except OSError as e:
        raise ConfigError(f"classifier: recording {p}: cannot read: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ConfigError(f"classifier: recording {p}: not JSON: {e}") from None
    if not isinstance(obj, Mapping):
        raise ConfigError(f"classifier: recording {p}: must be a JSON object")
    questions = _field(obj, "questions", Mapping, p)
    response = _field(obj, "response", Mapping, p)
    if "state" not in obj:
        raise ConfigError(f"classifier: recording {p}: missing 'state'")
    try:
        try:
            qs: Mapping[str, Question] | None = normalize_questions(questions)
        except QuestionError:
            # A request the wire allows and the typed questions cannot hold (serve --record:
            # noul criteria null or structured, a noul without instructions): the response is
            # still checked, against no question.
            qs = None
        parse_decision(response, qs)
    except (DecisionError, ClassifierError) as e:
        raise ConfigError(f"classifier: recording {p}: {e.detail}") from None
    assets = obj.get("assets")
    if assets is not None and not _image_digests(assets):
        raise ConfigError(
            f"classifier: recording {p}: 'assets' must map placeholders to "
            '{"type": "image", "sha256": <64 hex digits>}'
        )
    return Recording(
        path=p,
        model=_field(obj, "model", str, p),
        served_model=str(obj.get("served_model") or response.get("model") or ""),
        endpoint=str(obj.get("endpoint") or ""),
        state=obj["state"],
        questions=questions,
        response=response,
        recorded_at=str(obj.get("recorded_at") or ""),
        assets=assets,
    )


def _image_digests(assets: Any) -> bool:
    """Whether ``assets`` is a non-empty map of placeholder -> {"type": "image", "sha256"}."""
    if not isinstance(assets, Mapping) or not assets:
        return False
    for spec in assets.values():
        if not isinstance(spec, Mapping) or spec.get("type") != "image":
            return False
        digest = spec.get("sha256")
        if not isinstance(digest, str) or len(digest) != 64 or not set(digest) <= _HEX:
            return False
    return True


_HEX = frozenset("0123456789abcdef")


def load_recordings(directory: str | os.PathLike[str]) -> list[Recording]:
    """Every ``*.json`` recording in ``directory``, in file-name order. A directory that does
    not exist, or holds no recording, is an error: replaying from it could only miss."""
    folder = Path(directory)
    if not folder.is_dir():
        raise ConfigError(f"classifier: replay directory {folder} does not exist")
    files = sorted(f for f in folder.glob("*.json") if f.is_file())
    if not files:
        raise ConfigError(f"classifier: replay directory {folder} holds no recordings (*.json)")
    return [read_recording(f) for f in files]


def replay_miss_message(miss: StaticMiss, directory: str | os.PathLike[str]) -> str:
    """The one line for a replay miss: the state, the question-set digest, and how to fix it."""
    return (
        f"no recording in {directory} for state {miss.state_preview!r} with {QUESTIONS_DIGEST} "
        f"{miss.questions_sha256[:12]}; run it once live with --record {directory} "
        "to add one"
    )
