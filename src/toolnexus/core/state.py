"""What a state may be, checked before anything is sent (shared by ``classifier`` and ``batch``).

Imports only ``errors`` and the pure ``images`` module, so both callers import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import observe as probe
from .assets import StateWithImages
from .errors import InvalidState
from .images import Image
from .jsonlimits import value_problem

__all__ = ["check_state"]


def check_state(state: Any) -> None:
    """A state is a string, an object or an array (the wire rejects anything else with 422),
    or an ``Image`` (sent as its placeholder string), or a ``with_images(...)`` of those."""
    if type(state) is str and state.isascii():
        # ASCII text holds no lone surrogate, the one thing the walk below could find in a
        # string: a batch's common state is checked without it (issue 32 pack CPU).
        return
    if isinstance(state, StateWithImages):
        state = state.state
    if isinstance(state, Image):
        return
    if isinstance(state, bool) or not isinstance(state, str | Mapping | list | tuple):
        kind = "null" if state is None else type(state).__name__
        raise InvalidState(
            f"classifier: a state must be a string, an object or an array, got {kind}"
        )
    # One walk holds a host's value to the limits the CLI holds text to (README: nesting,
    # numbers, NaN) and to what JSON can carry (issue 17: no "not canonical JSON" later).
    if probe.observer is not None:
        probe.observer("state.walk", state)
    problem = value_problem(state, opaque=(Image,))
    if problem is not None:
        raise InvalidState(f"classifier: {problem}")
