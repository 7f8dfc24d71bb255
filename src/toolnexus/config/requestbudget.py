"""How far one request's upper-bound token estimate is from the wire's two limits (the whole
request, and its state plus the longest question: the 32k rule): :class:`Budget` and
:func:`budget_of`. ``check-criteria`` (``cli/lintbudget``) and ``batch --dry-run``
(``run.dry``) judge a request by it. Light on purpose: the scheduler's estimator is imported
when a budget is computed, so a lint run that never needs one does not load it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Budget", "budget_of"]


@dataclass(frozen=True)
class Budget:
    """Upper-bound token estimates of one request: the whole body, and the state plus the
    longest question (the 32k rule; without a state, the longest question alone)."""

    request: int
    state_and_question: int
    longest: str

    def over(self) -> str | None:
        """The first limit passed, as a phrase, else None."""
        from ..scheduler import CONTEXT_TOKENS, STATE_AND_QUESTION_TOKENS

        if self.request > CONTEXT_TOKENS:
            return f"about {self.request:,} tokens, over the {CONTEXT_TOKENS:,}-token request limit"
        if self.state_and_question > STATE_AND_QUESTION_TOKENS:
            return (
                f"state plus the longest question ({self.longest!r}) about "
                f"{self.state_and_question:,} tokens, over {STATE_AND_QUESTION_TOKENS:,}"
            )
        return None


def budget_of(
    body: bytes,
    state: bytes,
    wire_questions: Mapping[str, Any],
    sizes: Sequence[tuple[int, int]] = (),
) -> Budget:
    """The budget of a request whose canonical ``body`` carries the canonical ``state`` bytes
    and ``wire_questions`` (the 32k rule counts the state with the longest of them)."""
    from ..core import canonical_json
    from ..scheduler import estimate_tokens

    longest_key, longest = max(
        ((k, canonical_json(v)) for k, v in wire_questions.items()),
        key=lambda kv: len(kv[1]),
        default=("", b""),
    )
    request = estimate_tokens(body, sizes).upper
    if not state and len(wire_questions) == 1:
        # The body is that one question plus its key and the model: its estimate stands for the
        # question's (a few tokens over, so it errs toward reporting) at half the cost.
        return Budget(request, request, longest_key)
    return Budget(request, estimate_tokens(state + longest, sizes).upper, longest_key)
