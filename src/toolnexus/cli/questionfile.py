"""The question-file loader as the CLI's commands use it. The loading itself (YAML -> model,
questions, gates, every error at ``path:line:col``) lives below the run in
``toolnexus.questionfile`` so a script never imports ``toolnexus.cli`` (issue 30); the lint's
advisory rules (``lintrun``) call it from here."""

from __future__ import annotations

from ..questionfile.codes import CODES, WARNING_CODES, Finding
from ..questionfile.load import (
    DEFAULT_MODEL,
    MAX_FILE_BYTES,
    Lint,
    QuestionFileError,
    QuestionSet,
    lint_file,
    lint_text,
    load_question_file,
    load_question_set,
    read_text,
    resolve_model,
)

__all__ = [
    "CODES",
    "DEFAULT_MODEL",
    "MAX_FILE_BYTES",
    "WARNING_CODES",
    "Finding",
    "Lint",
    "QuestionFileError",
    "QuestionSet",
    "lint_file",
    "lint_text",
    "load_question_file",
    "load_question_set",
    "read_text",
    "resolve_model",
]
