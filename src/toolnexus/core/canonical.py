"""Canonical JSON bytes, sha256, the two named digests, and the seed 004 cache keys. Pure: no I/O.

The byte-identity claim (seed 001): object keys sorted recursively in ASCII (code-point) order,
arrays NEVER reordered, compact separators, and ``< > & ' "`` plus non-ASCII transmitted raw.
Python's ``json`` with ``sort_keys`` compares ``str`` by code point, which is the same order as
UTF-8 bytes, so the stdlib C encoder already is that encoder; there is no second one to drift.

Two digests name a question set, and there is no third (issue 16):

- the *request digest*, :func:`request_sha256`: sha256 of ``canonical_request(model, questions)``,
  the bytes ``toolnexus canonical`` prints (so ``canonical --sha256`` equals ``canonical |
  sha256sum``) and the conformance fixtures' ``canonicalSha256``; it changes with the model;
- the *question-set digest*, :func:`questions_sha256`: sha256 of the canonical ``questions``
  object alone, what every batch record carries as ``questions_sha256`` (``--resume`` compares
  it) and what a replay miss names; ``canonical --questions-sha256`` prints it.

Every message that shows one names it with :data:`REQUEST_DIGEST` or :data:`QUESTIONS_DIGEST`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from .errors import ConfigError
from .questions import Question, questions_to_wire

__all__ = [
    "QUESTIONS_DIGEST",
    "REQUEST_DIGEST",
    "canonical_json",
    "canonical_request",
    "decision_cache_key",
    "model_cache_key",
    "questions_sha256",
    "request_sha256",
    "sha256_hex",
]

#: How messages name :func:`request_sha256`'s value.
REQUEST_DIGEST = "request digest"
#: How messages name :func:`questions_sha256`'s value (the records' ``questions_sha256``).
QUESTIONS_DIGEST = "question-set digest"

_ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_json(value: Any) -> bytes:
    """The canonical UTF-8 bytes of a JSON value. NaN and infinities are not JSON: an error."""
    try:
        return _ENCODER.encode(value).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise ConfigError(f"classifier: value is not canonical JSON: {e}") from None
    except RecursionError:
        # A host's own object nested past the interpreter's stack (issue 9: no RecursionError
        # escapes the public API); the CLI's readers refuse such states long before this.
        raise ConfigError("classifier: value is not canonical JSON: nested too deeply") from None


def canonical_request(model: str, questions: Mapping[str, Question]) -> bytes:
    """The bytes the byte-identity claim covers: ``{"model", "questions"}``.

    ``state`` is deliberately NOT here: it is transmitted verbatim and is outside the claim,
    because numbers do not canonicalise across languages.
    """
    return canonical_json({"model": model, "questions": questions_to_wire(questions)})


def sha256_hex(data: str | bytes) -> str:
    """SHA-256 of the UTF-8 bytes of ``data``, lower-case hex."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def request_sha256(model: str, questions: Mapping[str, Question]) -> str:
    """The request digest: sha256 of :func:`canonical_request` (model + questions)."""
    return sha256_hex(canonical_request(model, questions))


def questions_sha256(questions: Mapping[str, Question]) -> str:
    """The question-set digest: sha256 of the canonical ``questions`` object, no model. Batch
    records carry it as ``questions_sha256``; its value must never change."""
    return sha256_hex(canonical_json(questions_to_wire(questions)))


def decision_cache_key(
    endpoint: str,
    served_model: str,
    state: Any,
    questions: Mapping[str, Question],
    assets: Mapping[str, Any] | None = None,
    *,
    kind: str = "decision",
) -> str:
    """Seed 004 decisionKey =
    ``sha256hex(canon({assets?, endpoint, kind:"decision", model:<served>, questions, state}))``.

    ``endpoint`` is the configured base URL with ``${ENV}`` unexpanded; ``state`` is the state AS
    SENT; an empty or ``None`` ``assets`` omits the member. ``kind`` is ``"decision"`` for an
    answer asked alone; a packed answer is kept under ``packing.PACKED_CACHE_KIND`` (issue 20),
    so neither is ever served for the other.
    """
    body: dict[str, Any] = {
        "endpoint": endpoint,
        "kind": kind,
        "model": served_model,
        "questions": questions_to_wire(questions),
        "state": state,
    }
    if assets:
        body["assets"] = dict(assets)
    return sha256_hex(canonical_json(body))


def model_cache_key(endpoint: str, model: str) -> str:
    """Seed 004 modelKey = ``sha256hex(canon({endpoint, kind:"model", model}))``. Its value is
    the model the endpoint SERVED for this requested model last time."""
    return sha256_hex(canonical_json({"endpoint": endpoint, "kind": "model", "model": model}))
