"""Which states go together in one request (issue 20): packs that respect the wire's limits by
construction. Pure: no I/O, no HTTP.

A pack is a run of consecutive state indices. :func:`plan_packs` makes each one as large as
asked (``pack=N``) or as large as fits up to :data:`~toolnexus.evaluate.packing.PACK_CAP`
(``pack="auto"``), and SHRINKS it rather than fail whenever the packed request would pass a
limit (:func:`pack_violation`):

- the scheduler's UPPER token estimate (``scheduler.tokens``) of the whole request against the
  64k context, and of the packed state followed by its longest question against the 32k rule;
- the images of the packed state (after :func:`~toolnexus.evaluate.packing.pack_lifted` merged them)
  against the request's image budget (``ImageLimits.request_image_max_bytes``, 32 MiB).

The upper estimate never under-counts a capture, so a planned pack is never refused for its
size; the price is a smaller pack than the server would take. A state that cannot be lifted
(a bad image) is planned alone: asked alone, it fails exactly as it does at pack 1.

Estimated once (issue 32 item 5): :func:`plan_requests` keeps, for each pack it checked, the
estimate of the body it checked and a digest of those bytes (:class:`Planned`); the send
(``packed.evaluate_pack``) reuses that estimate for the same bytes, admits the request with it
and hands it to the transport, instead of estimating the body again (it was 5 regex passes
over every packed body: a sixth of a packed run's client CPU). A body without images of at most
``LIMIT_SAFE_BYTES`` cannot pass a limit: it is not estimated at all, and the transport
estimates it only if the run's scheduler asks (a token rate, a budget), as at pack 1.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ..config import (  # the one rule for pack=
    PackSize,
    check_pack,
)
from ..core import (
    ClassifierError,
    ConfigError,
    ImageLimits,
    LiftedState,
    Question,
    canonical_json,
    lift_with_questions,
    questions_to_wire,
)
from ..core import observe as probe
from ..scheduler import (
    LIMIT_SAFE_BYTES,
    STATE_AND_QUESTION_TOKENS,
    PrefixTally,
    TokenEstimate,
    estimate_tokens,
    limit_violation,
)
from .packing import PACK_CAP, pack_lifted, pack_questions, pack_state

__all__ = [
    "Planned",
    "pack_check",
    "pack_violation",
    "plan_packs",
    "plan_requests",
]


def _image_sizes(lifted: LiftedState) -> list[tuple[int, int]]:
    return [size for a in lifted.assets if (size := a.image.size) is not None]


#: Tokens by which the upper bound of a state followed by one question may pass the upper bound
#: of the whole body holding them both: the two differ only where pieces meet at the joins
#: (a handful of pieces, a few tokens each).
_JOIN_SLACK = 64


def pack_check(
    packed: LiftedState,
    wire_questions: Mapping[str, Any],
    body: bytes,
    limits: ImageLimits | None = None,
    estimate: TokenEstimate | None = None,
) -> tuple[str | None, TokenEstimate]:
    """:func:`pack_violation`'s phrase (or None) and the whole body's estimate, made here
    unless ``estimate`` (of exactly ``body``) is given.

    The 32k rule's estimate (the state followed by its longest question) is made only when the
    whole body's upper bound does not already settle it: that text is part of the body, so its
    bound is at most the body's plus :data:`_JOIN_SLACK`."""
    sizes = _image_sizes(packed)
    if estimate is None:
        estimate = estimate_tokens(body, sizes)
    budget = (limits or ImageLimits()).request_image_max_bytes
    image_bytes = sum(a.image.nbytes for a in packed.assets)
    if image_bytes > budget:
        return f"images of {image_bytes:,} bytes, over the {budget:,}-byte request budget", estimate
    if estimate.upper + _JOIN_SLACK <= STATE_AND_QUESTION_TOKENS:
        return None, estimate  # under 32k as a whole: under both rules
    longest = max((canonical_json(q) for q in wire_questions.values()), key=len, default=b"")
    state_and_question = canonical_json(packed.state) + longest
    return limit_violation(estimate, estimate_tokens(state_and_question, sizes)), estimate


def pack_violation(
    packed: LiftedState,
    wire_questions: Mapping[str, Any],
    body: bytes,
    limits: ImageLimits | None = None,
) -> str | None:
    """Which limit a packed request would pass, as a phrase for a message, or None.

    ``packed`` is the packed state with its merged assets, ``wire_questions`` the derived
    questions in wire form, ``body`` the request's JSON bytes (for an image request, its
    ``request`` part)."""
    return pack_check(packed, wire_questions, body, limits)[0]


def body_digest(body: bytes) -> bytes:
    """What :class:`Planned` keeps of a body: enough to know the send builds the same bytes."""
    return hashlib.blake2b(body, digest_size=16).digest()


@dataclass(frozen=True)
class Planned:
    """One planned request: the positions of its states and, for a pack the planner checked,
    the digest of the body it checked, that body's estimate, and its states as lifted (one
    per index, in order: the send reuses a lift without images instead of lifting again)."""

    indices: list[int]
    digest: bytes | None = None
    estimate: TokenEstimate | None = None
    lifted: tuple[LiftedState, ...] | None = None

    def estimate_of(self, body: bytes) -> TokenEstimate | None:
        """The planned estimate when ``body`` is the body the plan checked, else None."""
        if self.digest is None or self.estimate is None:
            return None
        return self.estimate if body_digest(body) == self.digest else None


def packed_body(model: str, packed: LiftedState, wire_questions: Mapping[str, Any]) -> bytes:
    """The JSON bytes of a packed request without ``request_params``: what the limits are
    checked on before a classifier builds the request itself."""
    body: dict[str, Any] = {"model": model, "questions": wire_questions, "state": packed.state}
    if packed.assets:
        body["assets"] = packed.wire_assets()
    return canonical_json(body)


def _body_head(model: str, wire_questions: Mapping[str, Any]) -> bytes:
    """What :func:`packed_body` writes before the state of a pack without images: the same
    bytes, since ``model`` < ``questions`` < ``state`` is the canonical key order."""
    return (
        b'{"model":' + canonical_json(model) + b',"questions":' + canonical_json(wire_questions)
    ) + b',"state":'


#: The types of a pack of text alone.
_TEXT = {str}
#: A state the planner has not lifted yet (None means it cannot be lifted).
_NOT_LIFTED = object()
#: Question sets kept by :func:`_shared` (a run uses one, a few runs at once a few).
_KEEP = 8
#: Per (question set, pack size, model): the derived questions' wire form and the packed
#: body's head. Kept across plans: a stream (``batch.evaluate_stream``, so ``toolnexus batch``)
#: plans each pack's worth of states apart, and re-deriving them, and tallying the head again,
#: was two thirds of the CLI's planning (issue 32, a profile at pack 20). Keyed by the set's
#: identity, which is held here so its id cannot be reused; questions are frozen.
_SHARED: dict[tuple[int, int, str], tuple[Mapping[str, Question], dict[str, Any], bytes]] = {}
#: One tally of each head for every plan: a pure function of the bytes.
_TALLIES = PrefixTally()


def _shared(
    questions: Mapping[str, Question], count: int, model: str
) -> tuple[dict[str, Any], bytes]:
    key = (id(questions), count, model)
    hit = _SHARED.get(key)
    if hit is None or hit[0] is not questions:
        if len(_SHARED) >= _KEEP:
            _SHARED.clear()
        wire = questions_to_wire(pack_questions(questions, count))
        hit = (questions, wire, _body_head(model, wire))
        _SHARED[key] = hit
    return hit[1], hit[2]


class _Planner:
    """The lifted states and derived questions of one :func:`plan_packs` call, built once."""

    def __init__(
        self,
        states: Sequence[Any],
        questions: Mapping[str, Question],
        model: str,
        limits: ImageLimits,
    ) -> None:
        self.states = states
        self.questions = questions
        self.model = model
        self.limits = limits
        #: each state's lift, by position (``_NOT_LIFTED`` until a pack asks; None: it cannot
        #: be lifted). A list, not a dict: one index per state of every pack tried.
        self._lifted: list[object] = [_NOT_LIFTED] * len(states)
        #: (start, count) of each pack that fits: its body's digest and estimate (both None
        #: for a body under ``LIMIT_SAFE_BYTES``: not estimated)
        self.checked: dict[tuple[int, int], tuple[bytes | None, TokenEstimate | None]] = {}
        #: the lifted states of the last pack that fit, under its (start, count): what
        #: ``plan_requests`` hands the send, without looking each state up again
        self.fitted: tuple[tuple[int, int], list[LiftedState] | None] | None = None

    def lifted(self, index: int) -> LiftedState | None:
        if probe.observer is not None:
            probe.observer("plan.lift", index)
        got = self._lifted[index]
        if got is _NOT_LIFTED:
            try:
                got = lift_with_questions(self.states[index], self.questions)
            except ClassifierError:
                got = None  # planned alone; its own evaluate reports why
            self._lifted[index] = got
        return cast("LiftedState | None", got)  # _NOT_LIFTED was replaced above

    def wire(self, count: int) -> dict[str, Any]:
        return _shared(self.questions, count, self.model)[0]

    def fits(self, start: int, count: int) -> bool:
        if probe.observer is not None:
            probe.observer("plan.fit", count)
        if count == 1:
            return True
        texts = self.states[start : start + count]
        parts: list[LiftedState] | None = None
        if set(map(type, texts)) == _TEXT:  # in C: no Python step per state
            # Text holds no image (``assets.lift_images``): its pack is the texts themselves,
            # without a LiftedState per state kept in the plan until the run ends (issue 32
            # pack CPU: one more object per state for the collector to walk).
            packed = LiftedState(pack_state(list(texts)))
        else:
            lift = self.lifted
            parts = []
            for i in range(start, start + count):
                part = lift(i)
                if part is None:
                    return False
                parts.append(part)
            packed = pack_lifted(parts)
        wire = self.wire(count)
        if packed.assets:
            body = packed_body(self.model, packed, wire)
            over, estimate = pack_check(packed, wire, body, self.limits)
        else:
            # The derived questions are the same for every pack of ``count``: their bytes and
            # their tally are made once, and each pack counts only its states.
            head = _shared(self.questions, count, self.model)[1]
            tail = canonical_json(packed.state) + b"}"
            if len(head) + len(tail) <= LIMIT_SAFE_BYTES:
                # No body this small can pass a limit (``LIMIT_SAFE_BYTES``): nothing to check,
                # and nothing estimated; the send leaves the estimate to the run's scheduler,
                # which makes it only if a member asks (a token rate, a budget), as at pack 1.
                self.checked[(start, count)] = (None, None)
                self.fitted = ((start, count), parts)
                return True
            body = head + tail
            estimate = _TALLIES.estimate(body, tail)
            over, estimate = pack_check(packed, wire, body, self.limits, estimate)
        if over is None:
            self.checked[(start, count)] = (body_digest(body), estimate)
            self.fitted = ((start, count), parts)
        return over is None

    def largest(self, start: int, most: int) -> int:
        """The largest count <= ``most`` whose pack from ``start`` fits (adding a state never
        makes a pack fit, so a binary search finds it); the full size is tried first."""
        if self.fits(start, most):
            return most
        low, high = 1, most - 1
        while low < high:
            mid = (low + high + 1) // 2
            if self.fits(start, mid):
                low = mid
            else:
                high = mid - 1
        return low


def plan_packs(
    states: Sequence[Any],
    questions: Mapping[str, Question],
    pack: PackSize,
    *,
    cap: int = PACK_CAP,
    model: str = "jev-latest",
    image_limits: ImageLimits | None = None,
) -> list[list[int]]:
    """Consecutive state indices grouped into packs, in order, every index exactly once.

    ``pack=1`` gives singletons (nothing is estimated: today's requests). ``pack=N`` makes
    packs of N, each shrunk to what fits the limits (module docstring); ``pack="auto"`` makes
    them as large as fits, up to ``cap``. ``questions`` is the prepared question set; ``model``
    the model the requests name (its few bytes count toward the estimate)."""
    planned = plan_requests(
        states, questions, pack, cap=cap, model=model, image_limits=image_limits
    )
    return [p.indices for p in planned]


def plan_requests(
    states: Sequence[Any],
    questions: Mapping[str, Question],
    pack: PackSize,
    *,
    cap: int = PACK_CAP,
    model: str = "jev-latest",
    image_limits: ImageLimits | None = None,
) -> list[Planned]:
    """:func:`plan_packs`, each pack of several states with the estimate of the body checked."""
    size = check_pack(pack)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ConfigError(f"classifier: the pack cap takes a whole number >= 1, got {cap!r}")
    most = cap if isinstance(size, str) else size
    if most == 1:
        return [Planned([i]) for i in range(len(states))]
    planner = _Planner(states, questions, model, image_limits or ImageLimits())
    packs: list[Planned] = []
    start = 0
    while start < len(states):
        count = planner.largest(start, min(most, len(states) - start))
        checked = planner.checked.get((start, count))
        indices = list(range(start, start + count))
        if checked:
            # The chosen size is the last that fit (``largest`` tries smaller sizes only after
            # a miss, and ends on the one it returns), so its lifts are at hand.
            fitted = planner.fitted
            assert fitted is not None and fitted[0] == (start, count)
            lifts = fitted[1]
            packs.append(Planned(indices, *checked, lifted=None if lifts is None else tuple(lifts)))
        else:
            packs.append(Planned(indices))
        start += count
    # The plan is made once per batch: the checked bodies' estimates are kept only for the
    # packs chosen, never for every size a binary search tried.
    return packs
