"""The checks behind question-set files: every rule, located at the YAML node it is about.

``questionfile`` reads and reports; this module decides. Shapes are pre-checked here so each
problem points at its own node (``question_from_wire`` would stop at the first, unlocated);
then the core builds the question and ``check_limits`` / ``degenerate_criteria`` judge it, so
their rules and wording stay the only copy.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Mapping
from typing import Any

from ..core import (
    CHOICE,
    SCORE,
    ChoiceQuestion,
    LintPath,
    Located,
    NodePath,
    Question,
    QuestionError,
    ScoreQuestion,
    check_limits,
    degenerate_criteria,
    json_kind,
    level_label,
    question_from_wire,
    registry,
)
from ..core import got as _got
from .codes import Finding

# The core's degenerate-criteria reasons, one code per seed rule (a test pins the mapping).
#: What ``str.splitlines`` breaks a line at: a CSV cell, a table row or a terminal line ends there.
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
#: The bidirectional formatting characters ("Trojan Source", CVE-2021-42574): text shown
#: reordered is not the text that is matched.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def text_problem(text: str) -> tuple[str, str] | None:
    """``(code, words)`` when a question key, option id or level label would be shown wrongly
    (a CSV writes it raw, a table or terminal breaks or reorders it), else None. One problem per
    text: a newline first, then whitespace only, then a control or bidirectional character."""
    if any(c in _LINE_BREAKS for c in text):
        return "TN028", "contains a newline"
    if text and not text.strip():
        return "TN027", "is whitespace only"
    for c in text:
        if c in _BIDI:
            return "TN026", f"holds a bidirectional character (U+{ord(c):04X})"
        if unicodedata.category(c) == "Cc":
            return "TN026", f"holds a control character (U+{ord(c):04X})"
    return None


DEGENERATE_CODES = {
    "every option description is empty": "TN001",
    "every option description equals its own option id": "TN002",
    "every option description is identical": "TN003",
}
#: The types messages list (seed 001's closed set, from the registry's BUILT_IN); whether a
#: type is modelled is the registry's answer (qtypes/).
_MODELLED_TYPES = tuple(n for n in registry.BUILT_IN if n != registry.RAW_NAME)
_QUESTION_FIELDS = ("type", "instructions", "criteria", "raw")
_TOP_FIELDS = ("model", "questions", "gates")


def edit_distance(a: str, b: str) -> int:
    """The optimal-string-alignment distance: insertions, deletions, substitutions and swaps
    of two neighbours (``qeustions``) each count one."""
    rows = [list(range(len(b) + 1))]
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            row.append(min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (ca != cb)))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


#: How far a top-level key may be from a question set's own keys and still read as a typo of
#: one (issue 43 item 5: ``question:`` is checked, not skipped).
TYPO_DISTANCE = 2


def _misspelled_top(data: Mapping[Any, Any]) -> list[tuple[str, str]]:
    """``(key, meant)`` for each top-level key of a file without ``questions`` that reads as a
    typo of ``questions``, ``gates`` or ``model`` (at most :data:`TYPO_DISTANCE` edits). Five
    letters are close to many words (``mode``, ``notes``, ``games``), and the pre-commit hook
    names every staged YAML file: a near key counts only when its value has that section's
    shape (a mapping of questions, each a mapping; a mapping of gates with ``rules``; a ``jev-``
    model name)."""
    out: list[tuple[str, str]] = []
    for key, value in data.items():
        if not isinstance(key, str) or key in _TOP_FIELDS:
            continue
        low = key.strip().lower()
        for meant in _TOP_FIELDS:
            # lengths apart by more than the distance cannot be within it (a long key is cheap)
            if (
                abs(len(low) - len(meant)) > TYPO_DISTANCE
                or edit_distance(low, meant) > TYPO_DISTANCE
            ):
                continue
            if meant == "questions" and not (
                isinstance(value, dict)
                and value
                and all(isinstance(q, dict) for q in value.values())
            ):
                continue  # `question: What is X?` in an FAQ file is no question set
            if meant == "gates" and not (
                isinstance(value, dict)
                and value
                and all(isinstance(g, dict) and "rules" in g for g in value.values())
            ):
                continue
            if meant == "model" and not (isinstance(value, str) and value.startswith("jev-")):
                continue
            out.append((key, meant))
            break
    return out


def _kind(value: Any) -> str:
    return json_kind(value, yaml=True)


def _suggest(word: str, choices: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


class Checker:
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
        # Issue 31 item 4: a top-level `questions` key of ANY value makes a question set, so
        # `questions: []` or an emptied `questions:` fails the hook exactly as it fails `eval`.
        if not isinstance(data, dict) or "questions" not in data:
            near = _misspelled_top(data) if isinstance(data, dict) else []
            for key, meant in near:
                self.add(
                    self.doc.key_at((key,)),
                    "TN020",
                    f"not a question set: unknown top-level key {key!r}; did you mean {meant!r}?",
                )
            if declared and not near:  # the typo's line says it (and eval shows it first)
                got = "" if isinstance(data, dict) else f", got {_kind(data)}"
                self.add(
                    self.doc.at(()),
                    "TN020",
                    f"not a question set: no top-level 'questions' mapping{got}",
                )
            return declared or bool(near), None, {}
        raw_questions = data["questions"]
        if not isinstance(raw_questions, dict):
            where = self.doc.at(("questions",))
            if raw_questions is None or raw_questions == []:
                self.add(where, "TN012", "no questions: write at least one")
            else:
                self.add(
                    where,
                    "TN020",
                    "'questions' must be a mapping of question key to question, "
                    f"got {_kind(raw_questions)}",
                )
            self.unknown_fields(data, (), _TOP_FIELDS, "")
            return True, None, {}
        self.unknown_fields(data, (), _TOP_FIELDS, "")
        model = data.get("model")
        if "model" in data and (not isinstance(model, str) or not model.strip()):
            self.add(self.doc.at(("model",)), "TN020", "model must be a non-empty string")
            model = None
        questions: dict[str, Question] = {}
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
        # A key is a CSV column, a table row and a --fail-on name: shown as option ids are.
        problem = text_problem(key)
        if problem is not None:
            self.add(self.doc.key_at(path), problem[0], f"question key {key!r} {problem[1]}")
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
        # Each type's criteria checks are its lint hook (qtypes/), at positions in this file.
        found = registry.find(qtype) if qtype is not None else None
        if found is not None and found.is_modelled and found.lint is not None:
            found.lint(obj, _QuestionSink(self, path), where)
        if qtype is None or len([f for f in self.findings if f.is_error]) > before:
            return None
        try:
            question = question_from_wire(obj, key)
        except QuestionError as e:  # a core rule this module does not pre-check
            self.add(self.doc.at(path), "TN020", e.detail)
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
            self.add(
                at,
                "TN024",
                f"{where}type must be noul, choice or score, got {_kind(qtype)}",
            )
            return None
        if raw and registry.modelled(qtype):
            self.add(
                self.doc.at((*path, "raw")),
                "TN020",
                f"{where}raw: true is for types the library does not model; {qtype!r} is "
                "modelled, drop raw",
            )
            return None
        if raw is False and not registry.modelled(qtype):
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

    def limits(self, key: str, question: Question, path: NodePath) -> None:
        """Limits and the advisory checks, on a question that already has the right shape."""
        where = f"question {key!r}: "
        cpath = (*path, "criteria")
        if key:
            try:
                check_limits({key: question})
            except QuestionError as e:
                qtype = registry.of_question(question)
                code = qtype.limits_code if qtype is not None else "TN011"
                self.add(self.doc.at(cpath), code, e.detail)
        found = registry.of_question(question)
        advise = found.slots.get(registry.CRITERIA) if found is not None else None
        if advise is not None:
            advise(self, question, cpath, where)

    def choice(self, question: ChoiceQuestion, cpath: NodePath, where: str) -> None:
        """check-criteria's advisory findings on a choice's options."""
        criteria = question.criteria
        for option in criteria:
            problem = text_problem(option)
            if problem is not None:
                code, words = problem
                self.add(self.doc.at((*cpath, option)), code, f"{where}option {option!r} {words}")
        reason = degenerate_criteria(criteria)
        if reason is not None:
            self.add(self.doc.at(cpath), DEGENERATE_CODES[reason], f"{where}{reason}")
        elif len(criteria) >= 2:
            for option, text in criteria.items():
                if text is None or not str(text).strip():
                    self.add(
                        self.doc.at((*cpath, option)),
                        "TN023",
                        f"{where}option {option!r} has an empty description",
                    )

    def score(self, question: ScoreQuestion, cpath: NodePath, where: str) -> None:
        """check-criteria's advisory findings on a score's levels."""
        seen: dict[str, int] = {}
        for i, level in enumerate(question.criteria):
            label = level_label(level)
            problem = text_problem(label)
            if problem is not None:
                code, words = problem
                self.add(self.doc.at((*cpath, i)), code, f"{where}level {i} {label!r} {words}")
            elif not label.strip():
                self.add(self.doc.at((*cpath, i)), "TN023", f"{where}level {i} is empty")
            elif label in seen:
                self.add(
                    self.doc.at((*cpath, i)),
                    "TN022",
                    f"{where}level {i} repeats level {seen[label]} ({label!r})",
                )
            else:
                seen[label] = i


class _QuestionSink:
    """A type's lint findings (paths relative to its question) at their place in the file."""

    def __init__(self, checker: Checker, path: NodePath) -> None:
        self.checker, self.path = checker, path

    def add(self, path: LintPath, code: str, message: str, *, at_key: bool = False) -> None:
        full = (*self.path, *path)
        doc = self.checker.doc
        self.checker.add(doc.key_at(full) if at_key else doc.at(full), code, message)

    def unknown_fields(
        self, obj: Mapping[str, Any], path: LintPath, allowed: tuple[str, ...], what: str
    ) -> None:
        self.checker.unknown_fields(obj, (*self.path, *path), allowed, what)


# Each built-in type's advisory checks, in its registry entry (the CRITERIA slot): ``limits``
# dispatches on the registry, not on the type's name or class.
registry.attach(CHOICE.name, registry.CRITERIA, Checker.choice)
registry.attach(SCORE.name, registry.CRITERIA, Checker.score)
