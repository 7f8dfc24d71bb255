"""Wire-value readers the question types share: a number, a probability map, a distribution's
checks, a JSON value's kind in an error's words, a question's instructions. Pure.

Decoding never sorts, renormalises or rounds a probability; integers on the wire decode as
floats (gateways write ``0``/``1`` where the direct API writes ``0.0``/``1.0``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..errors import DecisionError, QuestionError

__all__ = [
    "check_instructions",
    "closed_schema",
    "distribution_problem",
    "fixed",
    "got",
    "json_kind",
    "number",
    "number_schema",
    "probabilities",
    "tag_schema",
]

#: validate_decision's tolerance on the sum of a probability map.
SUM_TOLERANCE = 0.02
#: Two-decimal wire values summed in binary floating point overshoot by ~1e-17 (0.5 + 0.52 is
#: 1.0200000000000000178); the spec's bound is on the decimal values, so allow that much.
_FLOAT_SLACK = 1e-9


def check_instructions(kind: str, instructions: Any) -> None:
    """Refuse instructions that are neither text nor structured content parts."""
    # Structured instructions (content parts) are lists or objects; None, numbers and booleans
    # are a mistake that would otherwise reach the wire as null or 5.
    if isinstance(instructions, bool) or not isinstance(instructions, str | list | tuple | Mapping):
        raise QuestionError(
            f"classifier: {kind}Question instructions must be a string (or structured "
            f"content parts), got {type(instructions).__name__}"
        )


def json_kind(value: Any, *, yaml: bool = False) -> str:
    """A JSON value's kind in an error message's words: "null", "a boolean", "an object"...
    ``yaml=True`` says "a list" / "a mapping", the words of a YAML file's author."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list" if yaml else "an array"
    if isinstance(value, dict):
        return "a mapping" if yaml else "an object"
    return type(value).__name__


def got(value: Any) -> str:
    """What a question file's author wrote instead, in their words (a lint message's tail)."""
    hint = "; quote it" if isinstance(value, bool | int | float) else ""
    return f"got {json_kind(value, yaml=True)}{hint}"


def number(value: Any, what: str, key: str) -> float:
    """A finite wire number as a float, or a :class:`DecisionError` naming answer ``key``."""
    # Exact-type fast path first: decoding runs once per answer on a batch's hot path.
    t = type(value)
    if t is float and math.isfinite(value):
        return value  # type: ignore[no-any-return]
    if t is int and -(2**53) <= value <= 2**53:
        return float(value)
    # bool is an int subclass in Python; on the wire true is not a number.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DecisionError(
            f'classifier: answer "{key}": {what} must be a number, got {json_kind(value)}', key
        )
    try:
        f = float(value)
    except OverflowError:  # a host's own int past a double (the JSON reader bounds the wire's)
        raise DecisionError(f'classifier: answer "{key}": {what} is out of range', key) from None
    if not math.isfinite(f):
        raise DecisionError(f'classifier: answer "{key}": {what} is not a finite number', key)
    return f


def probabilities(value: Any, key: str) -> dict[str, float]:
    """A wire probability map, each value a finite number, keys as text."""
    if not isinstance(value, Mapping):
        raise DecisionError(
            f'classifier: answer "{key}": probabilities must be an object, got {json_kind(value)}',
            key,
        )
    out: dict[str, float] = {}
    for k, v in value.items():
        # The label is only built for an error: an f-string per value costs on the hot path.
        if type(v) is float and math.isfinite(v):
            out[str(k)] = v
        else:
            out[str(k)] = number(v, f"probability {k!r}", key)
    return out


def distribution_problem(probs: Mapping[str, float], offered: set[str], noun: str) -> str | None:
    """What is wrong with a probability map over ``offered`` (seed 004's order: a key not
    offered, a value outside 0..1, a non-empty map not summing to 1 ± 0.02), else ``None``."""
    for k in sorted(probs):
        if k not in offered:
            return f"has a probability for {noun} {k!r}, which was not offered"
    for k in sorted(probs):
        if not 0.0 <= probs[k] <= 1.0:
            return f"probability for {k!r} is {probs[k]}, outside 0..1"
    if probs:
        total = math.fsum(probs.values())
        if abs(total - 1.0) > SUM_TOLERANCE + _FLOAT_SLACK:
            return f"probabilities sum to {total:.4g}, not 1 ± {SUM_TOLERANCE}"
    return None


def fixed(value: Any) -> str:
    """A number at two decimals for a table cell, ``-`` for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return f"{value:.2f}"


def number_schema() -> dict[str, Any]:
    """A JSON-schema number for a strict ``response_format``."""
    # No minimum/maximum: several strict-mode endpoints reject them; validate_decision checks
    # the ranges instead.
    return {"type": "number"}


def closed_schema(properties: dict[str, Any]) -> dict[str, Any]:
    """A strict-mode object: every property required, nothing else allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def tag_schema(name: str) -> dict[str, Any]:
    """An answer's ``type`` tag in a strict schema."""
    # enum of one value rather than const: older strict-mode validators do not know const.
    return {"type": "string", "enum": [name]}
