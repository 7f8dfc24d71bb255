"""Packed answers in the classifier's cache (issue 20): per state, under their own kind.

A packed answer is kept per state under ``decision_cache_key(..., kind=PACKED_CACHE_KIND)``
(the state as sent alone, its images' sha256, the served model, the caller's questions), with
the pack size it was asked in, so seed 004's ``kind:"decision"`` keys stay the unpacked
requests' alone: a packed answer is never served to an unpacked request, or the reverse. Only
a valid answer is stored (the caller checks); a damaged entry is a miss.
"""

from __future__ import annotations

import dataclasses

from ..core import (
    Decision,
    DecisionError,
    LiftedState,
    Question,
    canonical_json,
    decision_cache_key,
    loads,
    parse_decision,
)
from ..styles import SystemOneStyle
from .packing import PACKED_CACHE_KIND

__all__ = ["cached", "store"]


def _key(style: SystemOneStyle, served: str, lifted: LiftedState, qs: dict[str, Question]) -> str:
    assets = lifted.key_assets()
    return decision_cache_key(
        style.endpoint, served, lifted.state, qs, assets, kind=PACKED_CACHE_KIND
    )


# Through the style's own cache methods, so a cache failure is the same CacheError as at pack 1.
def cached(style: SystemOneStyle, lifted: LiftedState, qs: dict[str, Question]) -> Decision | None:
    """The packed answer kept for this state (``cached=True``, its ``packed`` size), or None."""
    if not style.caches:
        return None
    served = style.cache_get(style.model_key)
    if not served:
        return None
    text = style.cache_get(_key(style, served, lifted, qs))
    if text is None:
        return None
    try:
        obj = loads(text)
        decision = parse_decision(obj, qs)
    except (DecisionError, ValueError):
        return None  # a damaged entry is a miss; the live answer overwrites it
    packed = obj.get("packed")
    size = packed if isinstance(packed, int) and not isinstance(packed, bool) else 1
    position = obj.get("position")
    at = position if isinstance(position, int) and not isinstance(position, bool) else 0
    return dataclasses.replace(decision, cached=True, packed=size, position=at)


def store(
    style: SystemOneStyle, lifted: LiftedState, qs: dict[str, Question], decision: Decision
) -> None:
    """Keep a valid packed answer for this state, and the model the endpoint served."""
    if not style.caches:
        return
    style.cache_set(style.model_key, decision.model)
    entry = {**decision.to_wire(), "packed": decision.packed, "position": decision.position}
    style.cache_set(_key(style, decision.model, lifted, qs), canonical_json(entry).decode())
