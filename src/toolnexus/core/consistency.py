"""Whether an answer's numbers agree with each other (issue 33): derived from the answer as
decoded, like ``near_uniform``, and never repaired. Pure.

Each disagreement is a flag name in ``validation.FLAGS``; records carry them in their ``flags``
list, so every format, ``report``'s counts and ``--fail-on`` see them. ``validate_decision``
keeps exactly seed 004's checks: an inconsistent answer is flagged, not invalid.

The wire prints probabilities, scores and confidences to two decimals, so every comparison
allows what that rounding can explain and no more (``ROUNDING``, half a unit in the last place):

- ``choice-not-top``: the picked option's probability is below the largest one. Rounding is
  monotone, so the true most probable option is never printed below another: no tolerance is
  needed and ties are allowed.
- ``score-not-mean``: ``|score - sum(i * p_i)| > ROUNDING * (1 + n(n-1)/2)``. Each printed p_i
  is off by at most ``ROUNDING`` and level i weighs it i times (``sum i = n(n-1)/2``), and the
  printed score is itself off by ``ROUNDING``: 0.01 for 2 levels, 0.035 for 3, 0.23 for 10.
- ``confidence-off-formula`` (choice, n >= 2 options): ``|confidence - clip((max p - 1/n) /
  (1 - 1/n), 0, 1)| > ROUNDING + ROUNDING / (1 - 1/n)``, the formula the API is observed to use
  (system-one-wire.md); max p is off by ``ROUNDING`` and the formula scales that by
  ``1/(1 - 1/n)``. One option has no formula to check. Self-reported answers (a backend that
  says ``calibrated: false``, the llm style) state their own confidence, so only the numbers of
  a calibrated reply are held to the formula; the other two checks apply to every answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .answers import Answer
from .qtypes import CHOICE, SCORE, registry
from .qtypes.choice import ChoiceAnswer
from .qtypes.score import ScoreAnswer

__all__ = [
    "CONSISTENCY_FLAGS",
    "ROUNDING",
    "SCORE_CONFIDENCE_FORMULAS",
    "choice_confidence",
    "consistency_flags",
    "distance_confidence",
    "score_confidence_fits",
    "score_mean_bound",
    "uniform_spread",
]

#: Half a unit in the second decimal: the most a value printed to two decimals is off by.
ROUNDING = 0.005
#: Binary floating point on top of the decimal bound (0.49 - 0.48 is 0.010000000000000009).
_SLACK = 1e-9

#: The flags this module derives, in the order records list them.
CONSISTENCY_FLAGS = ("choice-not-top", "score-not-mean", "confidence-off-formula")


def choice_confidence(max_probability: float, n: int) -> float:
    """The choice confidence the API is observed to report: ``clip((max p - 1/n) / (1 - 1/n),
    0, 1)`` for n >= 2 options; 1.0 for a single option (nothing to rank against)."""
    if n <= 1:
        return 1.0
    return min(1.0, max(0.0, (max_probability - 1.0 / n) / (1.0 - 1.0 / n)))


def score_mean_bound(levels: int) -> float:
    """How far a printed score may lie from ``sum(i * p_i)`` of printed probabilities over
    ``levels`` levels by two-decimal rounding alone."""
    return ROUNDING * (1 + levels * (levels - 1) / 2)


def consistency_flags(answer: Answer, *, calibrated: bool = True) -> tuple[str, ...]:
    """The ``CONSISTENCY_FLAGS`` this answer's own numbers earn (module docstring), in order.
    A noul or raw answer, or one without probabilities, has nothing to compare."""
    # Every record pays this (bench/decode.py): one look-up of the answer's type, its own check.
    qtype = registry.of_answer(answer)
    check = qtype.slots.get(registry.CONSISTENCY) if qtype is not None else None
    return check(answer, calibrated) if check is not None else ()


def _choice_flags(answer: ChoiceAnswer, calibrated: bool) -> tuple[str, ...]:
    """``choice-not-top`` and ``confidence-off-formula`` (module docstring); no flag, no list."""
    probs = answer.probabilities
    n = len(probs)
    if not n:
        return ()
    top = max(probs.values())
    not_top = probs.get(answer.choice, 0.0) < top - _SLACK
    off = False
    if calibrated and n >= 2:
        expected = min(1.0, max(0.0, (top - 1.0 / n) / (1.0 - 1.0 / n)))
        bound = _CHOICE_BOUNDS.get(n) or _choice_bound(n)
        off = abs(answer.confidence - expected) > bound
    if not_top:
        return ("choice-not-top", "confidence-off-formula") if off else ("choice-not-top",)
    return ("confidence-off-formula",) if off else ()


def _score_flags(answer: ScoreAnswer, calibrated: bool) -> tuple[str, ...]:
    """``score-not-mean`` (module docstring)."""
    if answer.levels:
        mean = 0.0
        for i, (_, p) in enumerate(answer.levels):
            mean += i * p
        if abs(answer.score - mean) > score_mean_bound(len(answer.levels)) + _SLACK:
            return ("score-not-mean",)
    return ()


def _choice_bound(n: int) -> float:
    return ROUNDING + ROUNDING / (1.0 - 1.0 / n) + _SLACK


#: The confidence bound by number of options, worked out once.
_CHOICE_BOUNDS = {n: _choice_bound(n) for n in range(2, 256)}


#: The formulas a score's ``confidence`` is known to follow on "compatible" servers (no formula
#: is published for score), as ``report`` names them: the top probability, the choice formula
#: over the levels (what the live captures fit), and jevcompat's distance formula.
SCORE_CONFIDENCE_FORMULAS = ("top-probability", "choice-formula", "distance")


def uniform_spread(n: int) -> float:
    """``U(n) = sum_i |i - (n-1)/2| / n``: the mean distance from the middle level of a uniform
    answer over n levels, which jevcompat's distance formula divides by."""
    return sum(abs(i - (n - 1) / 2) for i in range(n)) / n


def distance_confidence(probabilities: Sequence[float], mode: int) -> float:
    """jevcompat's score confidence, ``max(0, 1 - sum_i p_i |i - mode| / U(n))``."""
    n = len(probabilities)
    if n <= 1:
        return 1.0
    spread = math.fsum(p * abs(i - mode) for i, p in enumerate(probabilities))
    return max(0.0, 1.0 - spread / uniform_spread(n))


def score_confidence_fits(
    probabilities: Sequence[float], confidence: float
) -> tuple[bool, bool, bool]:
    """Whether a score's ``confidence`` is, within two-decimal rounding, each formula of
    ``SCORE_CONFIDENCE_FORMULAS`` of its ``probabilities`` (in level order). For the distance
    formula any most probable level may be the mode; each bound is the rounding of the
    confidence plus what the rounding of the probabilities moves the formula by."""
    n = len(probabilities)
    top = max(probabilities)
    if n <= 1:
        fit = abs(confidence - 1.0) <= ROUNDING + _SLACK
        return fit, fit, fit
    by_top = abs(confidence - top) <= 2 * ROUNDING + _SLACK
    choice_bound = ROUNDING + ROUNDING / (1.0 - 1.0 / n) + _SLACK
    by_choice = abs(confidence - choice_confidence(top, n)) <= choice_bound
    spread = uniform_spread(n)
    by_distance = any(
        abs(confidence - distance_confidence(probabilities, m))
        <= ROUNDING + ROUNDING * sum(abs(i - m) for i in range(n)) / spread + _SLACK
        for m, p in enumerate(probabilities)
        if p >= top - _SLACK
    )
    return by_top, by_choice, by_distance


# Each type's check, in its registry entry (the CONSISTENCY slot): ``consistency_flags``
# dispatches on the registry, not on the answer's class.
registry.attach(CHOICE.name, registry.CONSISTENCY, _choice_flags)
registry.attach(SCORE.name, registry.CONSISTENCY, _score_flags)
