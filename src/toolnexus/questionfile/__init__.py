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
    from .load import (
        QuestionFileError,
        QuestionSet,
        load_question_file,
        load_question_set,
        read_text,
    )

_WHERE = {
    "QuestionFileError": "load",
    "QuestionSet": "load",
    "load_question_file": "load",
    "load_question_set": "load",
    "read_text": "load",
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
