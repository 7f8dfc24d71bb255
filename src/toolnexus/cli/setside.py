"""One side of a question-set diff (``toolnexus diff``): a question file, or ``REV:path`` read
from git when no file of that name exists, linted strictly into its model and questions. The
comparison of two sides is ``setdiff``'s, which re-exports every name here.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..canonical import canonical_request
from ..questions import Question
from .errors import CliError

__all__ = ["SetSide", "load_side"]


@dataclass(frozen=True)
class SetSide:
    """One side of the diff: where it came from, its file model and questions."""

    source: str
    model: str
    file_model: str | None
    questions: dict[str, Question]

    @property
    def canonical(self) -> bytes:
        return canonical_request(self.model, self.questions)


def _git_show(spec: str) -> str:
    try:
        done = subprocess.run(
            ["git", "show", spec],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except FileNotFoundError:
        raise CliError(f"{spec}: reading REV:path needs git, which is not installed") from None
    except subprocess.TimeoutExpired:
        raise CliError(f"{spec}: git show did not answer within 60 s") from None
    if done.returncode != 0:
        reason = " ".join(done.stderr.decode("utf-8", "replace").split()) or "git show failed"
        raise CliError(f"{spec}: {reason}")
    try:
        return done.stdout.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CliError(f"{spec}: not UTF-8 text") from None


def load_side(spec: str) -> SetSide:
    """A question set from a file, or from git as ``REV:path`` (when no such file exists)."""
    from .questionfile import QuestionFileError, lint_text, read_text, resolve_model

    # A file of that name wins; only then is "REV:path" read from git.
    from_git = ":" in spec and not Path(spec).exists()
    text = _git_show(spec) if from_git else read_text(spec)
    lint = lint_text(text, spec, strict=True)
    errors = lint.errors
    if errors:
        raise QuestionFileError(errors[0].located(), errors[0])
    return SetSide(spec, resolve_model(None, lint.model), lint.model, lint.questions)
