"""One token estimate, two uses: an upper bound for limits, a central estimate for spend. Pure.

The live API bills ``usage.input_tokens`` by a tokenizer it does not publish, so the estimate is
fitted on what it reported for the six live captures (``tests/fixtures/recordings-live/``). Bytes
alone predict badly: the captures span 0.50 to 1.63 tokens per byte, because a fixed per-request
prompt (about 190 tokens) dominates small requests and JSON punctuation costs little. What tracks
the bill is the number of *pieces* of the body's canonical bytes, as a byte-level BPE's pre-split
cuts them (a word with its leading space, up to three digits, a run of punctuation, a run of
whitespace)::

    central = 189 + 2.03 * pieces           (least squares over the six captures)

is within 8.5 % of every capture (the test prints the table). The upper bound must never be
under the bill (a pack that passes 64k context or 32k state-plus-longest-question is refused by
the server), so it counts each piece as one unit per started 3 bytes (a long run a tokenizer has
never seen, base64, a hash or CJK text, costs a token every 2 to 3 bytes, far more than a word
of the same length) and adds a 15 % margin::

    upper = ceil(1.15 * (189 + 2.03 * sum(max(1, ceil(bytes(piece) / 3)))))

which allows at least 0.77 tokens per byte of any text and is 1.3x to 2.2x the bill on the
captures: it costs pack size, never a refused request.

No capture carries an image. Until one does, an image is charged by its pixel area (the tile
rule vision models commonly publish, ``area / 750``), doubled in the upper bound; that is an
assumption, not a measurement.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "CONTEXT_TOKENS",
    "STATE_AND_QUESTION_TOKENS",
    "TokenEstimate",
    "central_of",
    "count_pieces",
    "estimate_tokens",
    "limit_violation",
    "split_pieces",
]

#: The wire's limits (``system-one-wire.md``: "64k tokens per request; state plus the longest
#: question must fit in 32k"), read as 64,000 and 32,000: the stricter of the two readings of
#: "k", so a request under them is under 65,536 and 32,768 too.
CONTEXT_TOKENS = 64_000
STATE_AND_QUESTION_TOKENS = 32_000

#: Fitted on the six live captures (module docstring): the per-request prompt, in tokens...
OVERHEAD_TOKENS = 189.0
#: ...and the tokens one piece of the body costs.
TOKENS_PER_PIECE = 2.03
#: Bytes one upper-bound unit covers; a piece longer than this counts several units.
UPPER_BYTES_PER_UNIT = 3
#: Margin over the fit's largest under-estimate (7.7 %, the smallest capture).
UPPER_MARGIN = 1.15
#: Pixels per image token (assumed: no capture has an image), doubled in the upper bound.
PIXELS_PER_IMAGE_TOKEN = 750

# A byte-level BPE's pre-split: a word with its leading space, one to three digits, a run of
# other symbols (JSON punctuation, non-ASCII text), a run of whitespace.
_PIECE = re.compile(r" ?[A-Za-z]+| ?[0-9]{1,3}| ?[^\sA-Za-z0-9]+|\s+")
# The same pre-split over ASCII bytes, where a piece's length is its byte count: ``\s`` spelled
# out as the ASCII characters the str pattern's ``\s`` matches (``str.isspace``), so both cut
# any ASCII text alike (a test holds it). Every request of a batch is estimated where it is
# sent, and most bodies are ASCII canonical JSON: no decode, no per-piece encode.
_ASCII_SPACE = rb"\t\n\x0b\x0c\r\x1c-\x1f "
_PIECE_ASCII = re.compile(
    rb" ?[A-Za-z]+| ?[0-9]{1,3}| ?[^" + _ASCII_SPACE + rb"A-Za-z0-9]+|[" + _ASCII_SPACE + rb"]+"
)


@dataclass(frozen=True)
class TokenEstimate:
    """Estimated input tokens of one request. ``upper`` is for limits (never under the bill on
    any capture); ``central`` is for spend (the best guess). ``upper >= central`` always."""

    central: int
    upper: int


def _image_tokens(images: Iterable[tuple[int, int]]) -> int:
    return sum(math.ceil(w * h / PIXELS_PER_IMAGE_TOKEN) for w, h in images)


def split_pieces(text: str) -> list[str]:
    """``text`` cut into pre-split pieces (the unit of the central estimate)."""
    return _PIECE.findall(text)


def count_pieces(text: str) -> int:
    """How many pre-split pieces ``text`` holds."""
    return len(_PIECE.findall(text))


def central_of(pieces: int, image_tokens: int = 0) -> int:
    """The central estimate of a body of ``pieces`` pieces: what :func:`estimate_tokens` gives
    as ``central``, for a caller that counts a body's pieces in parts (a dry run counts the
    question set once, then each state)."""
    return round(OVERHEAD_TOKENS + TOKENS_PER_PIECE * pieces) + image_tokens


def estimate_tokens(body: bytes | str, images: Iterable[tuple[int, int]] = ()) -> TokenEstimate:
    """The input tokens of a request whose JSON body is ``body`` (its canonical bytes; the
    packer may pass a part, such as a state plus its longest question, and gets that part's
    estimate with the per-request prompt included). ``images`` are the (width, height) of the
    images the request carries; their placeholders are part of ``body``."""
    if isinstance(body, bytes) and body.isascii():
        lengths = Counter(map(len, _PIECE_ASCII.findall(body)))
    else:
        text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
        lengths = Counter(len(p.encode("utf-8")) for p in _PIECE.findall(text))
    # A piece is never empty, so each counts at least one unit; pieces of one length together.
    units = sum(n * -(-size // UPPER_BYTES_PER_UNIT) for size, n in lengths.items())
    image = _image_tokens(images)
    central = central_of(lengths.total(), image)
    upper = math.ceil(UPPER_MARGIN * (OVERHEAD_TOKENS + TOKENS_PER_PIECE * units)) + 2 * image
    return TokenEstimate(central=central, upper=max(upper, central))


def limit_violation(
    request: TokenEstimate, state_and_longest_question: TokenEstimate
) -> str | None:
    """Which wire limit a request's upper bounds would pass, as a phrase for a message, or None.

    ``request`` is the whole body's estimate; ``state_and_longest_question`` the estimate of the
    state's bytes followed by the longest question's (the 32k rule)."""
    if request.upper > CONTEXT_TOKENS:
        return f"about {request.upper} tokens, over the {CONTEXT_TOKENS}-token context"
    if state_and_longest_question.upper > STATE_AND_QUESTION_TOKENS:
        return (
            f"state plus the longest question about {state_and_longest_question.upper} tokens, "
            f"over {STATE_AND_QUESTION_TOKENS}"
        )
    return None
