"""The draws a type's synthetic answer is made of (``toolnexus serve --synthetic``): the
generator's interface and the two shapes every distribution-bearing type shares. Pure.

The generator itself (a seeded splitmix64 stream) belongs to ``serve/synthetic.py``; a type's
``synthetic`` hook only draws from it, so the same request always gets the same answer.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["Draws", "cents", "confidence"]


class Draws(Protocol):
    """A deterministic stream of draws, seeded per question and state."""

    def random(self) -> float: ...

    def randrange(self, n: int) -> int: ...

    def randint(self, low: int, high: int) -> int: ...

    def sample(self, n: int, k: int) -> list[int]: ...


def cents(rng: Draws, n: int) -> list[int]:
    """A distribution over ``n`` outcomes in hundredths that sum to exactly 100."""
    if n == 1:
        return [100]
    out = [0] * n
    if n <= 20 and rng.random() < 0.125:
        # near-uniform: 100 spread as evenly as hundredths allow, the remainder on random ones
        base, extra = divmod(100, n)
        for i in range(n):
            out[i] = base
        for i in rng.sample(n, extra):
            out[i] += 1
        return out
    winner = rng.randrange(n)
    top = rng.randint(max(40, 100 // n + 2), 100)
    out[winner] = top
    rest = 100 - top
    others = [i for i in rng.sample(n, min(n, 4)) if i != winner][:3]
    for j, i in enumerate(others):
        share = rest if j == len(others) - 1 else rng.randint(0, rest)
        share = min(share, top - 1)
        out[i] += share
        rest -= share
    out[winner] += rest  # whatever could not go elsewhere stays on the winner
    return out


def confidence(top: float, n: int) -> float:
    """clip((max p - 1/k) / (1 - 1/k), 0, 1) at two decimals, as observed on the live API."""
    if n <= 1:
        return 1.0
    return round(min(1.0, max(0.0, (top - 1 / n) / (1 - 1 / n))), 2)
