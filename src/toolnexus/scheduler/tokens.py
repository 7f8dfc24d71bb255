"""One token estimate, two uses: an upper bound for limits and spend caps, a central one. Pure.

The live API bills ``usage.input_tokens`` by a tokenizer it does not publish, so the central
estimate is fitted on what it reported for the six live captures
(``tests/fixtures/recordings-live/``). Bytes alone predict badly: the captures span 0.50 to 1.63
tokens per byte, because a fixed per-request prompt (about 190 tokens) dominates small requests
and JSON punctuation costs little. What tracks the bill is the number of *pieces* of the body's
canonical bytes, as a byte-level BPE's pre-split cuts them (a word with its leading space, up to
three digits, a run of punctuation, a run of whitespace)::

    central = 189 + 2.03 * pieces + wide          (least squares over the six captures)

is within 8.5 % of every capture (the test prints the table). ``wide`` counts the characters of
scripts written without spaces (CJK, kana, Hangul, Thai, Lao, Khmer, Myanmar, Tibetan, Yi,
fullwidth forms) and emoji, one token each: the pre-split makes one piece of a whole sentence
of them, where every tokenizer spends at least about one token per character (issue 32: 100,000
Japanese characters were once estimated at 238 tokens). The captures are ASCII: ``wide`` is 0
there, so the fit is unchanged.

The upper bound must never be under the bill, whatever the text (a pack that passes 64k context
or 32k state-plus-longest-question is refused; a spend cap reserves it, so no run spends past
``--max-tokens`` / ``--max-cost``). It is the larger of two bounds, each covering what the
other cannot::

    by_bytes  = ceil(1.15 * 189) + utf8_bytes(body)
    by_pieces = ceil(1.15 * (189 + 2.03 * sum(max(1, ceil(bytes(piece) / 3)))))
    upper     = max(by_bytes, by_pieces)

``by_bytes``: every token of a byte-level BPE (the tokenizers of this model class: GPT-2,
cl100k, o200k, Llama 3) covers at least one byte, and a SentencePiece tokenizer with byte
fallback spends at most one token per byte of a character it does not know; the body's bytes
are the content the server renders into its prompt (a JSON escape is 2+ bytes for one
character), so its tokens are at most its bytes, in any script: CJK, Cyrillic, Arabic, emoji,
base64, minified JSON, a 16 MiB run of one letter. The fixed prompt is the fitted 189 plus the
15 % margin. ``by_pieces`` covers what bytes do not: a server that re-renders the JSON (an
indent per element) spends a token per tiny piece (``1,``), more than its bytes, and the fit
says a piece costs about 2 tokens; it allows 2.33 tokens per piece of 1 to 3 bytes. On the
captures the upper bound is 1.3x to 2.2x the bill: it costs pack size and some headroom under a
cap, never a refused request or a cap passed.

No capture carries an image. Until one does, an image is charged by its pixel area (the tile
rule vision models commonly publish, ``area / 750``), doubled in the upper bound; that is an
assumption, not a measurement.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = [
    "CONTEXT_TOKENS",
    "LIMIT_SAFE_BYTES",
    "STATE_AND_QUESTION_TOKENS",
    "PrefixTally",
    "Tally",
    "TokenEstimate",
    "central_of",
    "count_pieces",
    "estimate_tokens",
    "limit_violation",
    "request_limit",
    "split_pieces",
    "tally",
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
#: The fixed prompt in the byte bound: the fitted overhead with the margin.
UPPER_OVERHEAD_TOKENS = math.ceil(UPPER_MARGIN * OVERHEAD_TOKENS)

# Characters of scripts written without spaces, and emoji: one central token each (see the
# module docstring). Thai, Lao, Tibetan, Myanmar, Khmer, CJK punctuation, kana and Bopomofo,
# CJK (with its extensions and compatibility ideographs), Yi, Hangul syllables, fullwidth
# forms, emoji.
_WIDE = re.compile(
    "[\u0e00-\u0fff\u1000-\u109f\u1780-\u17ff\u3000-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
    "\U0001f000-\U0001faff\U00020000-\U0003ffff]"
)

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
    """Estimated input tokens of one request. ``upper`` is for limits and spend caps (never
    under the bill, in any script); ``central`` is the best guess (``--dry-run``, the token
    rate). ``upper >= central`` always."""

    central: int
    upper: int


@dataclass(frozen=True)
class Tally:
    """What the estimate counts in a text: pre-split ``pieces``, upper-bound ``units``
    (``ceil(bytes / 3)`` per piece), ``wide`` characters and UTF-8 ``nbytes``. Tallies of two
    texts add up to the tally of their concatenation when the cut falls between pieces (a
    dry run counts the question set once, then each state)."""

    pieces: int = 0
    units: int = 0
    wide: int = 0
    nbytes: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(
            self.pieces + other.pieces,
            self.units + other.units,
            self.wide + other.wide,
            self.nbytes + other.nbytes,
        )

    def __sub__(self, other: Tally) -> Tally:
        return Tally(
            self.pieces - other.pieces,
            self.units - other.units,
            self.wide - other.wide,
            self.nbytes - other.nbytes,
        )

    def estimate(self, image_tokens: int = 0) -> TokenEstimate:
        """The request's estimate (the module docstring's formulas)."""
        central = central_of(self.pieces, image_tokens, self.wide)
        by_pieces = math.ceil(UPPER_MARGIN * (OVERHEAD_TOKENS + TOKENS_PER_PIECE * self.units))
        by_bytes = UPPER_OVERHEAD_TOKENS + self.nbytes
        upper = max(by_pieces, by_bytes) + 2 * image_tokens
        return TokenEstimate(central=central, upper=max(upper, central))


def _image_tokens(images: Iterable[tuple[int, int]]) -> int:
    return sum(math.ceil(w * h / PIXELS_PER_IMAGE_TOKEN) for w, h in images)


def split_pieces(text: str) -> list[str]:
    """``text`` cut into pre-split pieces (the unit of the central estimate)."""
    return _PIECE.findall(text)


def count_pieces(text: str) -> int:
    """How many pre-split pieces ``text`` holds."""
    return len(_PIECE.findall(text))


def central_of(pieces: int, image_tokens: int = 0, wide: int = 0) -> int:
    """The central estimate of a body of ``pieces`` pieces and ``wide`` wide characters: what
    :func:`estimate_tokens` gives as ``central``."""
    return round(OVERHEAD_TOKENS + TOKENS_PER_PIECE * pieces) + wide + image_tokens


def tally(body: bytes | str) -> Tally:
    """What :func:`estimate_tokens` counts in ``body``."""
    if isinstance(body, bytes) and body.isascii():
        # Most bodies are ASCII canonical JSON: no decode, no per-piece encode, no wide char.
        lengths = Counter(map(len, _PIECE_ASCII.findall(body)))
        nbytes, wide = len(body), 0
    else:
        text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
        lengths = Counter(len(p.encode("utf-8")) for p in _PIECE.findall(text))
        nbytes = len(body) if isinstance(body, bytes) else len(text.encode("utf-8", "replace"))
        wide = len(_WIDE.findall(text))
    # A piece is never empty, so each counts at least one unit; pieces of one length together.
    units = sum(n * -(-size // UPPER_BYTES_PER_UNIT) for size, n in lengths.items())
    return Tally(lengths.total(), units, wide, nbytes)


def estimate_tokens(body: bytes | str, images: Iterable[tuple[int, int]] = ()) -> TokenEstimate:
    """The input tokens of a request whose JSON body is ``body`` (its canonical bytes; the
    packer may pass a part, such as a state plus its longest question, and gets that part's
    estimate with the per-request prompt included). ``images`` are the (width, height) of the
    images the request carries; their placeholders are part of ``body``."""
    return tally(body).estimate(_image_tokens(images))


class PrefixTally:
    """Tallies of bodies that share a long prefix (the model and the question set, before the
    state), each prefix tallied once: a pack's body is mostly its derived questions, the same
    for every pack of one size, so the planner and the dry run count only each state's part.

    The prefix's last piece is re-counted with the tail, since a run of punctuation (``":``
    before a state) joins what follows it; every piece before it is cut the same in the prefix
    alone as in the whole body. So the tally is exactly the whole body's (a test holds it)."""

    #: Prefixes kept (one per pack size in use, typically one or two).
    KEEP = 8

    def __init__(self) -> None:
        self._known: dict[bytes, tuple[Tally, bytes]] = {}

    def tally(self, body: bytes, tail: bytes) -> Tally:
        """The tally of ``body``, which ends with ``tail``."""
        if not body.endswith(tail):
            return tally(body)
        prefix = body[: len(body) - len(tail)]
        known = self._known.get(prefix)
        if known is None:
            pieces = split_pieces(prefix.decode("utf-8", errors="replace"))
            last = pieces[-1].encode("utf-8") if pieces else b""
            known = (tally(prefix) - tally(last), last)
            if len(self._known) >= self.KEEP:
                self._known.clear()
            self._known[prefix] = known
        head, last = known
        return head + tally(last + tail)

    def estimate(
        self, body: bytes, tail: bytes, images: Iterable[tuple[int, int]] = ()
    ) -> TokenEstimate:
        """:func:`estimate_tokens` of ``body`` (which ends with ``tail``)."""
        return self.tally(body, tail).estimate(_image_tokens(images))


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


#: Tokens by which the upper bound of a state followed by one question may pass the upper bound
#: of the whole body holding them both (pieces meet differently at the joins: a few tokens).
JOIN_SLACK = 64
#: Body bytes at or under which no request without images can pass either limit: the upper
#: bound is at most ``ceil(1.15 * (189 + 2.03 * bytes))`` (a piece is at least one byte, so
#: ``units <= bytes``), and ``bytes + 218`` is smaller; at this size that is under
#: ``STATE_AND_QUESTION_TOKENS - JOIN_SLACK`` (a test holds it with worst-case text). A batch
#: checks the limits of a request only above it, so a run of ordinary states estimates nothing.
LIMIT_SAFE_BYTES = math.floor(
    ((STATE_AND_QUESTION_TOKENS - JOIN_SLACK - 1) / UPPER_MARGIN - OVERHEAD_TOKENS)
    / TOKENS_PER_PIECE
)


def request_limit(
    body: bytes,
    state_and_longest_question: Callable[[], bytes],
    images: Iterable[tuple[int, int]] = (),
) -> tuple[TokenEstimate, str | None]:
    """The estimate of a request whose canonical body is ``body``, and which wire limit its
    upper bounds pass (:func:`limit_violation`'s phrase) or None. The 32k rule's text (the
    state's bytes, then the longest question's) is built and estimated only when the whole
    body's bound does not already settle it: that text is part of the body."""
    sizes = list(images)
    estimate = estimate_tokens(body, sizes)
    if estimate.upper + JOIN_SLACK <= STATE_AND_QUESTION_TOKENS:
        return estimate, None
    return estimate, limit_violation(estimate, estimate_tokens(state_and_longest_question(), sizes))
