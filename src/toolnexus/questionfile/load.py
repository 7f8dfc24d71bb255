"""Question-set files: YAML in, ``(model, questions)`` out, every problem at ``path:line:col``.

The format (``question-set.schema.json`` is its machine-readable twin)::

    model: jev-1.13.0               # optional
    questions:
      wants_money_back: {type: noul, instructions: Is the customer asking for money back?}
      department: {type: choice, instructions: Which desk?, criteria: {billing: ..., ...}}
      urgency: {type: score, instructions: How fast?, criteria: [level 0, level 1, level 2]}
      located: {type: box, raw: true, instructions: Where is the cat?}
    gates:                          # optional: named SPEC §8B policies (``gates.py``)
      refund: {rules: [{question: wants_money_back, at_least: 0.5, action: refund}]}

Decisions a user can rely on:
- an unknown ``type`` is an error (``choise`` is a typo, not a new type); a type the library does
  not model yet (Jev 1.14 ``box``) is written with ``raw: true`` and sent as written;
- noul ``criteria`` absent sends no criteria; ``{}`` sends both keys as empty strings (seed 001:
  absent is not empty); ``criteria:`` with nothing after it (null) is an error, because it is
  ambiguous between the two;
- a score level is a string or ``{label, description}``;
- unknown fields anywhere are errors, so ``critera:`` cannot silently drop the criteria.

Shapes come from ``question_from_wire`` and limits from ``check_limits`` (the core's rules and
messages); this module adds the positions and collects every finding for ``check-criteria``.
"""

from __future__ import annotations

import codecs
import errno
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from ..core import (
    DEFAULT_MODEL,
    Located,
    Question,
    QuestionError,
    YamlSyntaxError,
    check_limits,
    read_yaml,
)
from ..core import resolve_model as _resolve_model
from .checker import Checker
from .codes import Finding

if TYPE_CHECKING:
    from ..core import Policy

__all__ = [
    "MAX_FILE_BYTES",
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


_SCHEMA_MODELINE = "question-set.schema.json"


class QuestionFileError(QuestionError):
    """A question file that cannot be used: unreadable, or with an error finding.

    The message is one line, ``path:line:col: message`` (or ``path: message`` when the file
    cannot be read at all), with no ``classifier: `` prefix: it was the CLI's line before the
    loader moved out of ``cli/`` (issue 30), and the CLI's one boundary prints it as it was,
    exit 2. ``finding`` is the finding it stands for, when there is one.
    """

    _prefixed = False
    #: The exit code the CLI gives it (usage or input error), as when it was a ``CliError``.
    code: ClassVar[int] = 2

    def __init__(self, message: str, finding: Finding | None = None) -> None:
        super().__init__(message)
        self.finding = finding


class QuestionSet(NamedTuple):
    """A loaded question file: its optional default ``model`` and its questions, by key."""

    model: str | None
    questions: dict[str, Question]


@dataclass
class Lint:
    """Everything found in one file. ``question_set`` is False for a YAML file that is not a
    question set (no top-level ``questions`` mapping); ``check-criteria`` skips those."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    question_set: bool = True
    model: str | None = None
    questions: dict[str, Question] = field(default_factory=dict)
    #: The document as read (positions, plain-scalar ends) and its text, for the rules that
    #: need more than the questions (``lintrun``); None when the file could not be read as YAML.
    doc: Located | None = None
    text: str = ""
    #: The file's ``gates:`` (named §8B policies; never sent, never in the digest).
    gates: dict[str, Policy] = field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.is_error]


def resolve_model(flag: str | None, file_model: str | None) -> str:
    """The model to request: ``--model`` > ``TOOLNEXUS_MODEL`` > the file's ``model`` >
    ``jev-latest`` (issue 4), by the one rule in ``toolnexus.core.defaults``."""
    return _resolve_model(flag, file_model) or DEFAULT_MODEL


def _declares_schema(text: str) -> bool:
    """True when a ``# yaml-language-server: $schema=...question-set.schema.json`` line says the
    file IS a question set, so it is checked even without a ``questions`` mapping."""
    for line in text.splitlines()[:20]:
        stripped = line.strip()
        if stripped.startswith("#") and "$schema=" in stripped and _SCHEMA_MODELINE in stripped:
            return True
    return False


def lint_text(text: str, path: str, *, strict: bool = False) -> Lint:
    """Every finding in the question-set ``text`` (shown as ``path``), sorted by position."""
    try:
        doc = read_yaml(text)
    except YamlSyntaxError as e:
        p = e.problem
        return Lint(path, [Finding(path, p.line, p.col, p.code, p.message)])
    checker = Checker(path, doc)
    is_set, model, questions = checker.top(strict or _declares_schema(text))
    if not is_set:
        return Lint(path, [], question_set=False)
    gates: dict[str, Policy] = {}
    if isinstance(doc.value, dict) and "gates" in doc.value:
        # Only a file with gates pays for the judge layer's import (a third of the lint's
        # start-up otherwise: check-criteria's budget is 3x ``import yaml``).
        from .gates import check_gates

        gates = check_gates(checker, doc.value, questions)
    return Lint(path, sorted(set(checker.findings)), True, model, questions, doc, text, gates)


#: The most bytes a question file may hold: far past any set the wire can take (a request is
#: at most 64,000 tokens), and small enough that ``/dev/zero`` or a stray dump is refused with a
#: line instead of filling memory.
MAX_FILE_BYTES = 64 << 20


def _unreadable(shown: str, e: OSError) -> QuestionFileError:
    reason = e.strerror or type(e).__name__
    if e.errno == errno.ELOOP:
        reason += " (a symlink loop): point the link at a file, or remove it"
    return QuestionFileError(f"{shown}: cannot read: {reason}")


def _not_utf8(shown: str, data: bytes, e: UnicodeDecodeError) -> QuestionFileError:
    before = data[: e.start]
    line = before.count(b"\n") + 1
    col = len(before) - (before.rfind(b"\n") + 1) + 1
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        how = "it is UTF-16; save it as UTF-8 (iconv -f utf-16 -t utf-8)"
    else:
        how = "save it as UTF-8 (from Windows-1252: iconv -f cp1252 -t utf-8)"
    finding = Finding(shown, line, col, "TN900", f"not UTF-8 text: {how}")
    return QuestionFileError(finding.located(), finding)


def read_text(path: str | Path) -> str:
    """The UTF-8 text of ``path`` (``-`` is stdin). Unreadable or over :data:`MAX_FILE_BYTES`
    -> :class:`QuestionFileError`; bytes that are not UTF-8 -> one, located at the first bad
    byte, with the finding."""
    shown = str(path)
    if shown == "-" and sys.stdin is None:  # fd 0 closed: there is no stdin to read
        raise QuestionFileError("-: cannot read: stdin is closed")
    try:
        if shown == "-":
            data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        else:
            with open(path, "rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise _unreadable(shown, e) from None
    if len(data) > MAX_FILE_BYTES:
        raise QuestionFileError(
            f"{shown}: cannot read: over {MAX_FILE_BYTES >> 20} MiB, more than a question file "
            "may hold (a request is at most 64,000 tokens): split the question set"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise _not_utf8(shown, data, e) from None


def lint_file(path: str | Path, *, strict: bool = False) -> Lint:
    """:func:`lint_text` on a file. Unreadable -> :class:`QuestionFileError`; not UTF-8 -> a
    TN900 finding."""
    shown = "<stdin>" if str(path) == "-" else str(path)
    try:
        text = read_text(path)
    except QuestionFileError as e:
        if e.finding is None:
            raise
        return Lint(shown, [e.finding])
    return lint_text(text, shown, strict=strict)


def load_question_set(path: str | Path) -> QuestionSet:
    """Load a question file for ``eval``, ``batch`` and ``canonical``.

    The first error (by position) raises :class:`QuestionFileError` with its one-line
    ``path:line:col: message``; advisory findings (degenerate criteria, ...) do not stop it.
    """
    return load_question_file(path)[0]


def load_question_file(path: str | Path) -> tuple[QuestionSet, dict[str, Policy]]:
    """:func:`load_question_set` and the file's ``gates:`` (named policies, in file order)."""
    lint = lint_file(path, strict=True)
    errors = lint.errors
    if errors:
        raise QuestionFileError(errors[0].located(), errors[0])
    # Should be unreachable after the per-question checks; kept so the core's rules stay the
    # final word on what is sent.
    try:
        check_limits(lint.questions)
    except QuestionError as e:
        finding = Finding(lint.path, 1, 1, "TN020", e.detail)
        raise QuestionFileError(finding.located(), finding) from None
    return QuestionSet(lint.model, lint.questions), lint.gates
