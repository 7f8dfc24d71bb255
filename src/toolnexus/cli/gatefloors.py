"""``--thresholds @FILE``'s ``gates:`` section (issue 35 item 4): per gate of the question
file, the floor ``report --write-thresholds --gates`` chose for it, applied by ``eval`` and
``batch`` as ``report --gates --floors`` swept it (``report.sweep.at_floor``: the gate's
cut-points set by the floor, in its own inclusive or exclusive sense)::

    gates:
      merge: {floor: 0.75}

A gate the question file does not define, or a floor not in hundredths from 0.50 to 1.00, is
one line naming the file's line and the gate."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .errors import CliError
from .options import thresholds_doc

if TYPE_CHECKING:
    from ..policy import Policy

__all__ = ["parse_gate_floors", "with_gate_floors"]


def parse_gate_floors(text: str | None) -> dict[str, tuple[int, int]]:
    """Per gate name, the floor (in hundredths) and line of a ``--thresholds @FILE``'s
    ``gates: {NAME: {floor: F}}`` (``report --write-thresholds --gates`` writes it); empty
    for the inline form."""
    if not text or not text.startswith("@"):
        return {}
    path = text[1:]
    obj, doc = thresholds_doc(path)
    gates = obj.get("gates") or {}
    if not isinstance(gates, dict):
        raise CliError(f"--thresholds @{path}: gates must map gate names to {{floor: F}}")
    out = {}
    for name, value in gates.items():
        line = doc.key_at(("gates", name))[0]
        where = f"--thresholds @{path}:{line}: gate {name!r}"
        if not isinstance(value, dict) or set(value) != {"floor"}:
            raise CliError(f"{where}: expected {{floor: F}}, got {value!r}")
        floor = value["floor"]
        number = isinstance(floor, int | float) and not isinstance(floor, bool)
        hundredths = round(floor * 100) if number else -1
        if not 50 <= hundredths <= 100 or abs(floor * 100 - hundredths) > 1e-6:
            raise CliError(f"{where}: floor must be in 0.50..1.00 in hundredths, got {floor!r}")
        out[str(name)] = (hundredths, line)
    return out


def with_gate_floors(
    gates: Mapping[str, Policy], text: str | None, questions_path: str | os.PathLike[str]
) -> dict[str, Policy]:
    """The question file's ``gates`` with the floors of a ``--thresholds @FILE``'s ``gates:``
    applied (each cut-point set by its floor, in the policy's own sense, as ``report --gates
    --floors`` swept it); a gate the question file does not define is one line naming both."""
    floors = parse_gate_floors(text)
    if not floors:
        return dict(gates)
    from ..report.sweep import at_floor

    for name, (_, line) in floors.items():
        if name not in gates:
            have = f"its gates: {', '.join(gates)}" if gates else "it has no gates: section"
            raise CliError(
                f"--thresholds {text}:{line}: gate {name!r} is not a gate of {questions_path} "
                f"({have}); write the floors again with report --gates {questions_path}"
            )
    return {n: at_floor(p, floors[n][0]) if n in floors else p for n, p in gates.items()}
