"""The ``--synthetic`` answer source: deterministic, valid System One answers for any request.

Same request, same answer: every number is drawn from a generator seeded with the server's
``seed``, the question (never its caller key: keys are addressing, not content) and the state
with each image placeholder replaced by the image's sha256, so the official SDK's random
placeholders and toolnexus's derived ones get the same answers for the same images.

Each type's module (``qtypes/``) draws its answer (its ``synthetic`` hook) from the stream
this module seeds. Shapes follow the live wire (``../shared/reference/system-one-wire.md``):
- noul: a probability at two decimals, no confidence;
- choice: probabilities at two decimals summing to exactly 1.00, the choice is the most likely
  option, confidence = clip((max p - 1/k) / (1 - 1/k), 0, 1) as observed on the live API; about
  one answer in eight is near-uniform, as real encodings sometimes are;
- score: probabilities per level summing to 1.00, ``score`` the probability-weighted mean level,
  a ``legend`` echoing the rubric, a confidence by the same formula;
- box (Jev 1.14): edges as fractions with top < bottom and left < right, a confidence;
- any other type (toolnexus's raw questions): :data:`PLACEHOLDER_FIELD` set to
  :data:`PLACEHOLDER`, so a test of the raw path gets an answer of its own type. The real API
  answers such a question 422; ``--synthetic`` answers it so the raw path can be tested.

Every answer passes ``validate_decision`` against its question. Pure: no I/O.

Packed requests (issue 20, ``toolnexus.evaluate.packing``): a request whose state is
``{"states": [...]}`` and whose questions are all derived keys addressed to those states is
answered per derived
question from the ONE state it addresses, exactly as that state alone would be (the seed input
is the question as asked alone and that state's own key), so a packed run and an unpacked run of
the same states get the same answers. Its usage is the whole request's (:func:`input_tokens`:
one overhead for the pack), so packing visibly saves tokens.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any

from ..core import canonical_json, registry
from ..evaluate import STATES_KEY, unpack_questions_wire

__all__ = [
    "SERVED_MODELS",
    "input_tokens",
    "served_model",
    "synthesize",
]

#: What the server says answered, for the aliases (as the live API answers, more specific).
SERVED_MODELS: Mapping[str, str] = {
    "jev-latest": "jev-1.13.0",
    "jev-preview": "jev-1.14.0",
    "typesafe/jev-1.13": "typesafe/jev-1.13-20260917",
}


def served_model(model: str) -> str:
    """The model the synthetic server reports for a requested ``model``."""
    return SERVED_MODELS.get(model, model)


class _Stream:
    """A splitmix64 stream from a 64-bit seed: a few integer operations per draw, where seeding
    ``random.Random`` per question cost more than the rest of an answer (measured)."""

    __slots__ = ("_x",)
    _MASK = (1 << 64) - 1

    def __init__(self, seed: int) -> None:
        self._x = seed

    def _next(self) -> int:
        self._x = x = (self._x + 0x9E3779B97F4A7C15) & self._MASK
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & self._MASK
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & self._MASK
        return x ^ (x >> 31)

    def random(self) -> float:
        return self._next() / 2.0**64

    def randrange(self, n: int) -> int:
        return self._next() % n

    def randint(self, low: int, high: int) -> int:
        return low + self._next() % (high - low + 1)

    def sample(self, n: int, k: int) -> list[int]:
        """``k`` distinct integers below ``n``, in draw order."""
        picked: list[int] = []
        while len(picked) < k:
            i = self._next() % n
            if i not in picked:
                picked.append(i)
        return picked


#: Canonical bytes per question, by the question's repr: a batch asks the same questions of
#: every state, and encoding them was the largest cost of an answer. Bounded.
_QUESTION_BYTES: dict[str, bytes] = {}


def _question_bytes(question: Any) -> bytes:
    key = repr(question)
    found = _QUESTION_BYTES.get(key)
    if found is None:
        found = canonical_json(question)
        if len(_QUESTION_BYTES) >= 4096:
            _QUESTION_BYTES.clear()
        _QUESTION_BYTES[key] = found
    return found


def _rng(seed: int, question: Any, state_key: bytes) -> _Stream:
    head = str(seed).encode() + b"\x00" + _question_bytes(question) + b"\x00"
    digest = hashlib.sha256(head + state_key).digest()
    return _Stream(int.from_bytes(digest[:8], "big"))


def _answer(question: Mapping[str, Any], rng: _Stream) -> dict[str, Any]:
    # Each type draws its own answer (qtypes/); raw answers box and the placeholder.
    return registry.of(question.get("type")).synthetic(question, rng)


def _output_tokens(question: Mapping[str, Any]) -> int:
    criteria = question.get("criteria")
    return 4 + (len(criteria) if isinstance(criteria, Mapping | list) else 0)


#: The fixed part of every request's ``usage.input_tokens``, and what each image adds.
INPUT_TOKEN_OVERHEAD = 96
IMAGE_INPUT_TOKENS = 258


def input_tokens(state_key: bytes, questions: Mapping[str, Any], images: int = 0) -> int:
    """The synthetic model's ``usage.input_tokens`` for a request, and what ``--token-limit``
    charges it: ``96 + (S + sum(K + Q + 4) + W) // 4 + 258 * images``, where ``S`` is the byte
    length of the canonical JSON of the state (an image placeholder counted as its image's
    64-digit sha256), and for each question ``K`` its key's length in characters and ``Q`` the
    byte length of its canonical JSON (the 4 stands for the quotes, colon and comma around it).
    So about one token per 4 bytes of state and questions, plus a fixed overhead per request.

    ``W`` makes a character of three or four UTF-8 bytes (CJK, kana, Hangul, Thai, Indic,
    emoji) cost one whole token, as real tokenizers charge at least about that (issue 32): one
    more byte for each three-byte character, so its 3 + 1 bytes make 4. Cyrillic, Greek,
    Arabic or Hebrew (two bytes a character) stay at half a token a character."""
    size = len(state_key) + sum(len(_question_bytes(q)) + len(k) + 4 for k, q in questions.items())
    wide = _three_byte_characters(state_key)
    wide += sum(_three_byte_characters(_question_bytes(q)) for q in questions.values())
    return INPUT_TOKEN_OVERHEAD + (size + wide) // 4 + IMAGE_INPUT_TOKENS * images


_THREE_BYTE_LEAD = re.compile(rb"[\xe0-\xef]")


def _three_byte_characters(data: bytes) -> int:
    """How many characters of ``data`` (UTF-8) take three bytes (their lead byte says so)."""
    return 0 if data.isascii() else len(_THREE_BYTE_LEAD.findall(data))


def _packed_answers(
    state: Any, questions: Mapping[str, Any], seed: int, key_of: Callable[[Any], bytes]
) -> dict[str, Any] | None:
    """The answers of a packed request, each from the state its derived key addresses, or None
    when the request is not a pack (then it is answered as one state, like any other)."""
    if not isinstance(state, Mapping) or set(state) != {STATES_KEY}:
        return None
    states = state[STATES_KEY]
    if not isinstance(states, list) or not states:
        return None
    asked = unpack_questions_wire(questions, len(states))
    if asked is None:
        return None
    keys: dict[int, bytes] = {}
    answers: dict[str, Any] = {}
    for derived, index, alone in asked:
        if index not in keys:
            keys[index] = key_of(states[index])
        answers[derived] = _answer(alone, _rng(seed, alone, keys[index]))
    return answers


def synthesize(
    request: Mapping[str, Any],
    *,
    seed: int = 0,
    state_key: bytes | None = None,
    images: int = 0,
    key_of: Callable[[Any], bytes] = canonical_json,
) -> dict[str, Any]:
    """A valid System One response body for ``request`` (``{model, questions, state}``).

    ``state_key`` is what identifies the state (default: its canonical JSON); the server passes
    the state with placeholders replaced by image hashes. ``images`` counts attached images for
    ``usage.input_tokens`` (:func:`input_tokens`). ``key_of`` is the same identity for one
    state of a packed request (the server's swaps that state's placeholders for hashes).
    """
    if state_key is None:
        state_key = canonical_json(request.get("state"))
    questions: Mapping[str, Any] = request["questions"]
    answers = _packed_answers(request.get("state"), questions, seed, key_of)
    if answers is None:
        answers = {key: _answer(q, _rng(seed, q, state_key)) for key, q in questions.items()}
    model = request.get("model")
    return {
        "model": served_model(model) if isinstance(model, str) else "jev-1.13.0",
        "answers": answers,
        "usage": {
            "input_tokens": input_tokens(state_key, questions, images),
            "output_tokens": sum(_output_tokens(q) for q in questions.values()),
        },
    }
