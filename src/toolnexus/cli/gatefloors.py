"""``--thresholds @FILE``'s ``gates:`` section (issue 35 item 4) for ``eval``: per gate of the
question file, the floor ``report --write-thresholds --gates`` chose for it, applied as
``report --gates --floors`` swept it. Read and applied by the library
(``toolnexus.questionfile.thresholds``, ``toolnexus.run.config.apply_gate_floors``; ``batch``
hands the floors to its ``RunConfig``), so a script gets the same gates (issue 30 item 1)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .errors import CliError
from .options import parse_gate_floors

if TYPE_CHECKING:
    from ..policy import Policy

__all__ = ["parse_gate_floors", "with_gate_floors"]


def with_gate_floors(
    gates: Mapping[str, Policy], text: str | None, questions_path: str | os.PathLike[str]
) -> dict[str, Policy]:
    """The question file's ``gates`` with the floors of a ``--thresholds @FILE``'s ``gates:``
    applied; a gate the question file does not define is one line naming both."""
    floors = parse_gate_floors(text)
    if not floors:
        return dict(gates)
    from ..errors import RunError
    from ..run.config import apply_gate_floors

    try:
        return apply_gate_floors(gates, floors, questions_path)
    except RunError as e:
        raise CliError(str(e)) from None
