"""Which states go together in one request (issue 20): packs that respect the wire's limits by
construction. Pure: no I/O, no HTTP.

A pack is a run of consecutive state indices. :func:`plan_packs` makes each one as large as
asked (``pack=N``) or as large as fits up to :data:`~toolnexus.packing.PACK_CAP`
(``pack="auto"``), and SHRINKS it rather than fail whenever the packed request would pass a
limit (:func:`pack_violation`):

- the scheduler's UPPER token estimate (``scheduler.tokens``) of the whole request against the
  64k context, and of the packed state followed by its longest question against the 32k rule;
- the images of the packed state (after :func:`~toolnexus.packing.pack_lifted` merged them)
  against the request's image budget (``ImageLimits.request_image_max_bytes``, 32 MiB).

The upper estimate never under-counts a capture, so a planned pack is never refused for its
size; the price is a smaller pack than the server would take. A state that cannot be lifted
(a bad image) is planned alone: asked alone, it fails exactly as it does at pack 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

from .assets import LiftedState, lift_with_questions
from .canonical import canonical_json
from .errors import ClassifierError, ConfigError
from .images import ImageLimits
from .packing import PACK_CAP, pack_lifted, pack_questions
from .questions import Question, questions_to_wire
from .scheduler.tokens import estimate_tokens, limit_violation

__all__ = ["PACK_AUTO", "PackSize", "check_pack", "pack_violation", "plan_packs"]

#: ``pack="auto"``: the largest pack under the limits, up to ``PACK_CAP``.
PACK_AUTO: Literal["auto"] = "auto"
#: What ``pack=`` takes.
PackSize: TypeAlias = int | Literal["auto"]


def check_pack(pack: object) -> PackSize:
    """``pack`` as given when it is a whole number >= 1 or ``"auto"``; a ConfigError else."""
    if pack == PACK_AUTO:
        return PACK_AUTO
    if isinstance(pack, bool) or not isinstance(pack, int) or pack < 1:
        raise ConfigError(f"classifier: pack takes a whole number >= 1 or 'auto', got {pack!r}")
    return pack


def _image_sizes(lifted: LiftedState) -> list[tuple[int, int]]:
    return [size for a in lifted.assets if (size := a.image.size) is not None]


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
    budget = (limits or ImageLimits()).request_image_max_bytes
    image_bytes = sum(a.image.nbytes for a in packed.assets)
    if image_bytes > budget:
        return f"images of {image_bytes:,} bytes, over the {budget:,}-byte request budget"
    sizes = _image_sizes(packed)
    longest = max((canonical_json(q) for q in wire_questions.values()), key=len, default=b"")
    state_and_question = canonical_json(packed.state) + longest
    return limit_violation(estimate_tokens(body, sizes), estimate_tokens(state_and_question, sizes))


def packed_body(model: str, packed: LiftedState, wire_questions: Mapping[str, Any]) -> bytes:
    """The JSON bytes of a packed request without ``request_params``: what the limits are
    checked on before a classifier builds the request itself."""
    body: dict[str, Any] = {"model": model, "questions": wire_questions, "state": packed.state}
    if packed.assets:
        body["assets"] = packed.wire_assets()
    return canonical_json(body)


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
        self._lifted: dict[int, LiftedState | None] = {}
        self._wire: dict[int, dict[str, Any]] = {}

    def lifted(self, index: int) -> LiftedState | None:
        if index not in self._lifted:
            try:
                self._lifted[index] = lift_with_questions(self.states[index], self.questions)
            except ClassifierError:
                self._lifted[index] = None  # planned alone; its own evaluate reports why
        return self._lifted[index]

    def wire(self, count: int) -> dict[str, Any]:
        if count not in self._wire:
            self._wire[count] = questions_to_wire(pack_questions(self.questions, count))
        return self._wire[count]

    def fits(self, start: int, count: int) -> bool:
        if count == 1:
            return True
        parts = [self.lifted(i) for i in range(start, start + count)]
        if any(p is None for p in parts):
            return False
        packed = pack_lifted([p for p in parts if p is not None])
        wire = self.wire(count)
        body = packed_body(self.model, packed, wire)
        return pack_violation(packed, wire, body, self.limits) is None

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
    size = check_pack(pack)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ConfigError(f"classifier: the pack cap takes a whole number >= 1, got {cap!r}")
    most = cap if isinstance(size, str) else size
    if most == 1:
        return [[i] for i in range(len(states))]
    planner = _Planner(states, questions, model, image_limits or ImageLimits())
    packs: list[list[int]] = []
    start = 0
    while start < len(states):
        count = planner.largest(start, min(most, len(states) - start))
        packs.append(list(range(start, start + count)))
        start += count
    return packs
