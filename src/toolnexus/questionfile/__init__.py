"""``toolnexus.questionfile``: a question-set file (YAML) loaded as the library's values, every
problem one line at ``path:line:col``. ``batch``, ``eval``, the MCP server and a script load a
file the same way; ``check-criteria`` (``cli/lintrun``) runs its advisory rules on top.

::

    from toolnexus.questionfile import load_question_file

    (model, questions), gates = load_question_file("questions/support-triage.yaml")

The modules::

    load      load_question_file / load_question_set, read_text, lint_text / lint_file (the
              structural findings), QuestionFileError, QuestionSet, Lint
    checker   Checker: every structural rule, located at the YAML node it is about
    gates     the ``gates:`` section (named SPEC §8B policies)
    thresholds  a thresholds file (``--thresholds @FILE``): cut-points and the gates' floors
    codes     Finding and the stable TN codes; rules: every rule's text, written once

Names are imported on first use (PEP 562): ``check-criteria --help`` lists the codes from
``codes`` and must not load YAML or the question model to do it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .checker import DEGENERATE_CODES as DEGENERATE_CODES
    from .codes import CODES as CODES
    from .codes import Finding as Finding
    from .load import Lint as Lint
    from .load import (
        QuestionFileError,
        QuestionSet,
        load_question_file,
        load_question_set,
        read_text,
    )
    from .load import lint_file as lint_file
    from .load import lint_text as lint_text
    from .load import resolve_model as resolve_model
    from .rules import LEVELS as LEVELS
    from .rules import RULES as RULES
    from .rules import RULES_URL as RULES_URL
    from .rules import Rule as Rule
    from .rules import Severity as Severity
    from .thresholds import THRESHOLD_NAMES as THRESHOLD_NAMES
    from .thresholds import GateFloor as GateFloor
    from .thresholds import check_fitted_on as check_fitted_on
    from .thresholds import checked_cut_points as checked_cut_points
    from .thresholds import gate_floor as gate_floor
    from .thresholds import read_gate_floors as read_gate_floors
    from .thresholds import read_thresholds as read_thresholds
    from .thresholds import wording_of as wording_of

_WHERE = {
    "CODES": "codes",
    "DEGENERATE_CODES": "checker",
    "Finding": "codes",
    "GateFloor": "thresholds",
    "LEVELS": "rules",
    "Lint": "load",
    "QuestionFileError": "load",
    "QuestionSet": "load",
    "RULES": "rules",
    "RULES_URL": "rules",
    "Rule": "rules",
    "Severity": "rules",
    "THRESHOLD_NAMES": "thresholds",
    "check_fitted_on": "thresholds",
    "checked_cut_points": "thresholds",
    "gate_floor": "thresholds",
    "lint_file": "load",
    "lint_text": "load",
    "load_question_file": "load",
    "load_question_set": "load",
    "read_gate_floors": "thresholds",
    "read_text": "load",
    "read_thresholds": "thresholds",
    "resolve_model": "load",
    "wording_of": "thresholds",
}

__all__ = [
    "QuestionFileError",
    "QuestionSet",
    "load_question_file",
    "load_question_set",
    "read_text",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'toolnexus.questionfile' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
