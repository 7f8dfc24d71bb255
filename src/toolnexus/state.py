"""What a state may be, checked before anything is sent (shared by ``classifier`` and ``batch``).

Imports only ``errors`` and the pure ``images`` module, so both callers import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .assets import StateWithImages
from .errors import InvalidState
from .images import Image
from .jsonlimits import MAX_DEPTH

__all__ = ["check_state"]


def check_state(state: Any) -> None:
    """A state is a string, an object or an array (the wire rejects anything else with 422),
    or an ``Image`` (sent as its placeholder string), or a ``with_images(...)`` of those."""
    if isinstance(state, StateWithImages):
        state = state.state
    if isinstance(state, Image):
        return
    if isinstance(state, bool) or not isinstance(state, str | Mapping | list | tuple):
        kind = "null" if state is None else type(state).__name__
        raise InvalidState(
            f"classifier: a state must be a string, an object or an array, got {kind}"
        )
    if not isinstance(state, str) and _too_deep(state):
        raise InvalidState(
            f"classifier: a state must not nest more than {MAX_DEPTH} levels of objects/arrays"
        )


def _too_deep(state: Any) -> bool:
    """True when containers nest past MAX_DEPTH; iterative, so a 100,000-deep list is an
    answer, not a RecursionError (issue 9). Strings and numbers cost nothing."""
    stack: list[tuple[Any, int]] = [(state, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(value, Mapping):
            stack.extend(
                (v, depth + 1) for v in value.values() if isinstance(v, Mapping | list | tuple)
            )
        elif isinstance(value, list | tuple):
            stack.extend((v, depth + 1) for v in value if isinstance(v, Mapping | list | tuple))
    return False
