"""``--thresholds @FILE``'s ``gates:`` section (issue 35 item 4) for ``eval``: per gate of the
question file, the floor ``report --write-thresholds --gates`` chose for it, applied as
``report --gates --floors`` swept it. Read and applied by the library
(``toolnexus.questionfile.thresholds``, ``toolnexus.run.config.apply_gate_floors``; ``batch``
hands the floors to its ``RunConfig``), so a script gets the same gates (issue 30 item 1)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import CliError
from .options import parse_gate_floors

if TYPE_CHECKING:
    from ..core import Policy

__all__ = [
    "check_thresholds_file",
    "with_gate_floors",
]


def check_thresholds_file(
    text: str | None, questions: Mapping[str, Any], questions_path: str | os.PathLike[str]
) -> None:
    """``--thresholds @FILE`` against the question file (issue 42 item 3,
    ``questionfile.thresholds.check_fitted_on``): a cut-point for a question the file lacks is
    one line, exit 2; each warning one line on stderr. The inline form has nothing to check."""
    if not text or not text.startswith("@"):
        return
    import sys

    from ..core import RunError, one_line
    from ..questionfile import check_fitted_on

    try:
        warnings = check_fitted_on(text[1:], questions, os.fspath(questions_path))
    except RunError as e:
        raise CliError(str(e)) from None
    for line in warnings:
        sys.stderr.write(f"toolnexus: warning: {one_line(line)}\n")


def with_gate_floors(
    gates: Mapping[str, Policy], text: str | None, questions_path: str | os.PathLike[str]
) -> dict[str, Policy]:
    """The question file's ``gates`` with the floors of a ``--thresholds @FILE``'s ``gates:``
    applied; a gate the question file does not define is one line naming both."""
    floors = parse_gate_floors(text)
    if not floors:
        return dict(gates)
    from ..core import RunError
    from ..run import apply_gate_floors

    try:
        return apply_gate_floors(gates, floors, questions_path)
    except RunError as e:
        raise CliError(str(e)) from None
