"""Question-set files: YAML in, ``(model, questions)`` out, every problem at ``path:line:col``.

The format (``question-set.schema.json`` is its machine-readable twin)::

    model: jev-1.13.0               # optional
    questions:
      wants_money_back: {type: noul, instructions: Is the customer asking for money back?}
      department: {type: choice, instructions: Which desk?, criteria: {billing: ..., ...}}
      urgency: {type: score, instructions: How fast?, criteria: [level 0, level 1, level 2]}
      located: {type: box, raw: true, instructions: Where is the cat?}

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

import difflib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import QuestionError
from ..questions import (
    ChoiceQuestion,
    Question,
    ScoreQuestion,
    check_limits,
    degenerate_criteria,
    level_label,
    question_from_wire,
)
from .app import EXIT_USAGE, CliError
from .lintcodes import CODES, WARNING_CODES
from .yamlread import Located, NodePath, YamlSyntaxError, read_yaml

__all__ = [
    "CODES",
    "DEFAULT_MODEL",
    "WARNING_CODES",
    "Finding",
    "Lint",
    "QuestionFileError",
    "QuestionSet",
    "lint_file",
    "lint_text",
    "load_question_set",
    "read_text",
    "resolve_model",
]

#: The model when neither ``--model``, ``TOOLNEXUS_MODEL`` nor the file names one (seed 004).
DEFAULT_MODEL = "jev-latest"

# The core's degenerate-criteria reasons, one code per seed rule (a test pins the mapping).
_DEGENERATE_CODES = {
    "every option description is empty": "TN001",
    "every option description equals its own option id": "TN002",
    "every option description is identical": "TN003",
}
_MODELLED_TYPES = ("noul", "choice", "score")
_QUESTION_FIELDS = ("type", "instructions", "criteria", "raw")
_TOP_FIELDS = ("model", "questions")
_SCHEMA_MODELINE = "question-set.schema.json"


@dataclass(frozen=True, order=True)
class Finding:
    """One problem in one file, at a 1-based line and column."""

    path: str
    line: int
    col: int
    code: str
    message: str

    @property
    def is_error(self) -> bool:
        """False for advisory codes (``WARNING_CODES``): the file still loads."""
        return self.code not in WARNING_CODES

    def located(self) -> str:
        """``path:line:col: message``, the shape editors and terminals jump to."""
        return f"{self.path}:{self.line}:{self.col}: {self.message}"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "code": self.code,
            "message": self.message,
        }


class QuestionFileError(CliError):
    """A question file that cannot be used: unreadable, or with an error finding.

    The message is one line, ``path:line:col: message`` (or ``path: message`` when the file
    cannot be read at all); the CLI boundary prints it and exits 2.
    """

    def __init__(self, message: str, finding: Finding | None = None) -> None:
        super().__init__(message, EXIT_USAGE)
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

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.is_error]


def resolve_model(flag: str | None, file_model: str | None) -> str:
    """The model to request: ``--model`` > ``TOOLNEXUS_MODEL`` > the file's ``model`` >
    ``jev-latest`` (issue 4: flag > env > question file > default)."""
    for candidate in (flag, os.environ.get("TOOLNEXUS_MODEL"), file_model):
        if candidate:
            return candidate
    return DEFAULT_MODEL


def _bare(error: QuestionError) -> str:
    text = str(error)
    return text.removeprefix("classifier: ")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "a mapping"


def _got(value: Any) -> str:
    hint = "; quote it" if isinstance(value, bool | int | float) else ""
    return f"got {_kind(value)}{hint}"


def _suggest(word: str, choices: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


class _Checker:
    def __init__(self, path: str, doc: Located) -> None:
        self.path = path
        self.doc = doc
        self.findings: list[Finding] = [
            Finding(path, p.line, p.col, p.code, p.message) for p in doc.problems
        ]

    def add(self, where: tuple[int, int], code: str, message: str) -> None:
        self.findings.append(Finding(self.path, where[0], where[1], code, message))

    def unknown_fields(
        self, obj: Mapping[str, Any], path: NodePath, allowed: tuple[str, ...], what: str
    ) -> None:
        for name in obj:
            if name not in allowed:
                expected = ", ".join(allowed)
                self.add(
                    self.doc.key_at((*path, name)),
                    "TN020",
                    f"{what}unknown field {name!r} (expected {expected})" + _suggest(name, allowed),
                )

    def top(self, strict: bool) -> tuple[bool, str | None, dict[str, Question]]:
        data = self.doc.value
        declared = strict
        if self.doc.documents > 1:
            if declared:
                self.add(
                    self.doc.second_document or (1, 1),
                    "TN020",
                    "a question set is a single YAML document; this starts a second one",
                )
            return declared, None, {}
        if not isinstance(data, dict) or not isinstance(data.get("questions"), dict):
            if declared:
                got = "" if isinstance(data, dict) else f", got {_kind(data)}"
                where = self.doc.at(("questions",)) if isinstance(data, dict) else self.doc.at(())
                self.add(
                    where, "TN020", f"not a question set: no top-level 'questions' mapping{got}"
                )
            return declared, None, {}
        self.unknown_fields(data, (), _TOP_FIELDS, "")
        model = data.get("model")
        if "model" in data and (not isinstance(model, str) or not model.strip()):
            self.add(self.doc.at(("model",)), "TN020", "model must be a non-empty string")
            model = None
        questions: dict[str, Question] = {}
        raw_questions: dict[str, Any] = data["questions"]
        if not raw_questions:
            self.add(self.doc.at(("questions",)), "TN012", "no questions: write at least one")
        for key, obj in raw_questions.items():
            q = self.question(key, obj, ("questions", key))
            if q is not None:
                questions[key] = q
        return True, model if isinstance(model, str) else None, questions

    def question(self, key: str, obj: Any, path: NodePath) -> Question | None:
        where = f"question {key!r}: "
        before = len([f for f in self.findings if f.is_error])
        if key == "":
            self.add(self.doc.key_at(path), "TN012", "a question key cannot be empty")
        if not isinstance(obj, dict):
            self.add(
                self.doc.at(path),
                "TN020",
                f"{where}must be a mapping of type, instructions, criteria, got {_kind(obj)}",
            )
            return None
        self.unknown_fields(obj, path, _QUESTION_FIELDS, where)
        raw: bool | None = obj.get("raw", False)
        if not isinstance(raw, bool):
            self.add(self.doc.at((*path, "raw")), "TN020", f"{where}raw must be true or false")
            raw = None  # unknown intent: judge the type neither as raw nor as modelled
        qtype = self.qtype(obj, path, where, raw)
        self.instructions(obj, path, where)
        if qtype == "noul":
            self.noul_criteria(obj, path, where)
        elif qtype == "choice":
            self.choice_criteria(obj, path, where)
        elif qtype == "score":
            self.score_criteria(obj, path, where)
        if qtype is None or len([f for f in self.findings if f.is_error]) > before:
            return None
        try:
            question = question_from_wire(obj, key)
        except QuestionError as e:  # a core rule this module does not pre-check
            self.add(self.doc.at(path), "TN020", _bare(e))
            return None
        self.limits(key, question, path)
        return question

    def qtype(
        self, obj: dict[str, Any], path: NodePath, where: str, raw: bool | None
    ) -> str | None:
        if "type" not in obj:
            self.add(self.doc.key_at(path), "TN024", f"{where}missing type (noul, choice or score)")
            return None
        qtype = obj["type"]
        at = self.doc.at((*path, "type"))
        if not isinstance(qtype, str) or not qtype.strip():
            self.add(at, "TN024", f"{where}type must be noul, choice or score, got {_kind(qtype)}")
            return None
        if raw and qtype in _MODELLED_TYPES:
            self.add(
                self.doc.at((*path, "raw")),
                "TN020",
                f"{where}raw: true is for types the library does not model; {qtype!r} is "
                "modelled, drop raw",
            )
            return None
        if raw is False and qtype not in _MODELLED_TYPES:
            self.add(
                at,
                "TN024",
                f"{where}unknown type {qtype!r} (expected noul, choice or score"
                f"{_suggest(qtype, _MODELLED_TYPES)}); for a type the library does not "
                "model, add raw: true",
            )
            return None
        return qtype

    def instructions(self, obj: dict[str, Any], path: NodePath, where: str) -> None:
        if "instructions" not in obj:
            self.add(self.doc.key_at(path), "TN025", f"{where}missing instructions")
            return
        value = obj["instructions"]
        at = self.doc.at((*path, "instructions"))
        if isinstance(value, str | dict) and not (
            value.strip() if isinstance(value, str) else value
        ):
            self.add(at, "TN025", f"{where}empty instructions")
        elif not isinstance(value, str | dict):
            self.add(
                at,
                "TN020",
                f"{where}instructions must be a string or a mapping, {_got(value)}",
            )

    def noul_criteria(self, obj: dict[str, Any], path: NodePath, where: str) -> None:
        if "criteria" not in obj:
            return
        criteria = obj["criteria"]
        cpath = (*path, "criteria")
        if criteria is None:
            self.add(
                self.doc.at(cpath),
                "TN020",
                f"{where}noul criteria is null: omit it for no criteria, or write {{}} for two "
                "empty strings",
            )
            return
        if not isinstance(criteria, dict):
            self.add(
                self.doc.at(cpath),
                "TN020",
                f"{where}noul criteria must be a mapping with true and false, "
                f"got {_kind(criteria)}",
            )
            return
        self.unknown_fields(criteria, cpath, ("true", "false"), f"{where}noul criteria: ")
        for side in ("true", "false"):
            if side in criteria and not isinstance(criteria[side], str):
                self.add(
                    self.doc.at((*cpath, side)),
                    "TN020",
                    f"{where}noul criteria {side!r} must be a string, {_got(criteria[side])}",
                )

    def choice_criteria(self, obj: dict[str, Any], path: NodePath, where: str) -> None:
        cpath = (*path, "criteria")
        criteria = obj.get("criteria")
        if not isinstance(criteria, dict):
            got = "missing" if "criteria" not in obj else f"got {_kind(criteria)}"
            at = self.doc.key_at(path) if "criteria" not in obj else self.doc.at(cpath)
            self.add(
                at,
                "TN020",
                f"{where}a choice needs criteria: a mapping of option id to what picking it "
                f"means ({got})",
            )
            return
        for option, text in criteria.items():
            if not isinstance(text, str):
                self.add(
                    self.doc.at((*cpath, option)),
                    "TN020",
                    f"{where}option {option!r} description must be a string, {_got(text)}",
                )

    def score_criteria(self, obj: dict[str, Any], path: NodePath, where: str) -> None:
        cpath = (*path, "criteria")
        criteria = obj.get("criteria")
        if not isinstance(criteria, list):
            got = "missing" if "criteria" not in obj else f"got {_kind(criteria)}"
            at = self.doc.key_at(path) if "criteria" not in obj else self.doc.at(cpath)
            self.add(
                at, "TN020", f"{where}a score needs criteria: an ordered list of levels ({got})"
            )
            return
        for i, level in enumerate(criteria):
            lpath = (*cpath, i)
            if isinstance(level, dict):
                self.unknown_fields(level, lpath, ("label", "description"), f"{where}level {i}: ")
                label = level.get("label")
                if not isinstance(label, str) or not label.strip():
                    self.add(
                        self.doc.at((*lpath, "label")) if "label" in level else self.doc.at(lpath),
                        "TN020",
                        f"{where}level {i} needs a non-empty string label",
                    )
            elif not isinstance(level, str):
                self.add(
                    self.doc.at(lpath),
                    "TN020",
                    f"{where}level {i} must be a string or {{label, description}}, "
                    f"got {_kind(level)}",
                )

    def limits(self, key: str, question: Question, path: NodePath) -> None:
        """Limits and the advisory checks, on a question that already has the right shape."""
        where = f"question {key!r}: "
        cpath = (*path, "criteria")
        if key:
            try:
                check_limits({key: question})
            except QuestionError as e:
                code = "TN010" if isinstance(question, ChoiceQuestion) else "TN011"
                self.add(self.doc.at(cpath), code, _bare(e))
        if isinstance(question, ChoiceQuestion):
            criteria = question.criteria
            reason = degenerate_criteria(criteria)
            if reason is not None:
                self.add(self.doc.at(cpath), _DEGENERATE_CODES[reason], f"{where}{reason}")
            elif len(criteria) >= 2:
                for option, text in criteria.items():
                    if not str(text).strip():
                        self.add(
                            self.doc.at((*cpath, option)),
                            "TN023",
                            f"{where}option {option!r} has an empty description",
                        )
        elif isinstance(question, ScoreQuestion):
            seen: dict[str, int] = {}
            for i, level in enumerate(question.criteria):
                label = level_label(level)
                if not label.strip():
                    self.add(self.doc.at((*cpath, i)), "TN023", f"{where}level {i} is empty")
                elif label in seen:
                    self.add(
                        self.doc.at((*cpath, i)),
                        "TN022",
                        f"{where}level {i} repeats level {seen[label]} ({label!r})",
                    )
                else:
                    seen[label] = i


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
    checker = _Checker(path, doc)
    is_set, model, questions = checker.top(strict or _declares_schema(text))
    if not is_set:
        return Lint(path, [], question_set=False)
    return Lint(path, sorted(set(checker.findings)), True, model, questions)


def read_text(path: str | Path) -> str:
    """The UTF-8 text of ``path`` (``-`` is stdin). Unreadable -> :class:`QuestionFileError`;
    bytes that are not UTF-8 -> one, located at the first bad byte."""
    shown = str(path)
    try:
        data = sys.stdin.buffer.read() if shown == "-" else Path(path).read_bytes()
    except OSError as e:
        reason = e.strerror or type(e).__name__
        raise QuestionFileError(f"{shown}: cannot read: {reason}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        before = data[: e.start]
        line = before.count(b"\n") + 1
        col = len(before) - (before.rfind(b"\n") + 1) + 1
        finding = Finding(shown, line, col, "TN900", "not UTF-8 text")
        raise QuestionFileError(finding.located(), finding) from None


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
    lint = lint_file(path, strict=True)
    errors = lint.errors
    if errors:
        raise QuestionFileError(errors[0].located(), errors[0])
    # Should be unreachable after the per-question checks; kept so the core's rules stay the
    # final word on what is sent.
    try:
        check_limits(lint.questions)
    except QuestionError as e:
        finding = Finding(lint.path, 1, 1, "TN020", _bare(e))
        raise QuestionFileError(finding.located(), finding) from None
    return QuestionSet(lint.model, lint.questions)
