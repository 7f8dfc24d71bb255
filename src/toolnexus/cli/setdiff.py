"""What an edit to a question-set file changes, on the wire and in meaning (``toolnexus diff``).

Each difference is a :class:`Change` of a stable ``kind``. The ones that silently break what was
tuned on the old set are ``breaking``:

- ``type_changed``: the question asks something else; nothing recorded for it applies.
- ``levels_reordered`` / ``level_inserted`` / ``level_removed`` / ``levels_replaced``: the rubric
  is renumbered, so recorded levels, labels and thresholds no longer mean the same (a level
  appended at the end keeps the old numbers but changes the score's scale: breaking too);
- ``option_renamed``: an option removed and one added with the same description; old labels and
  recordings name the old id;
- ``criteria_degenerate``: a check-criteria code (TN001-3, TN022, TN023) the old set did not
  have: the model ranks such options at chance.

The rest are changes: ``question_added``/``question_removed``, ``instructions``,
``noul_criteria`` (absent vs empty vs text), ``option_added``/``option_removed``/
``option_redescribed``, ``level_reworded``, ``criteria_fixed``, ``raw_changed``, ``model``.

Caches and recordings: a recording answers by the canonical question set plus the state (not
the model), a cached decision by endpoint, served model, question set and state. So recordings
still apply when the questions' canonical bytes are equal, cached decisions when the model is
equal too.

The two sides (a file, or ``REV:path`` from git) are read by ``load_side``, below.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import (
    CHOICE,
    NOUL,
    SCORE,
    ChoiceQuestion,
    NoulQuestion,
    Question,
    ScoreQuestion,
    canonical_json,
    canonical_request,
    degenerate_criteria,
    level_label,
    question_to_wire,
    questions_sha256,
    registry,
    request_sha256,
)
from ..questionfile import DEGENERATE_CODES
from .errors import CliError

__all__ = [
    "Change",
    "SetSide",
    "diff_sets",
    "load_side",
]

# One side of a question-set diff (``toolnexus diff``): a question file, or ``REV:path`` read
# from git when no file of that name exists, linted strictly into its model and questions.


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
    from ..questionfile import (
        QuestionFileError,
        lint_text,
        read_text,
        resolve_model,
    )

    # A file of that name wins; only then is "REV:path" read from git.
    from_git = ":" in spec and not Path(spec).exists()
    text = _git_show(spec) if from_git else read_text(spec)
    lint = lint_text(text, spec, strict=True)
    errors = lint.errors
    if errors:
        raise QuestionFileError(errors[0].located(), errors[0])
    return SetSide(spec, resolve_model(None, lint.model), lint.model, lint.questions)


@dataclass(frozen=True)
class Change:
    """One difference. ``key`` is the question key (``None`` for the model)."""

    kind: str
    key: str | None
    message: str
    breaking: bool = False
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "breaking": self.breaking,
            "message": self.message,
            **({"detail": dict(self.detail)} if self.detail else {}),
        }


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return json.dumps(text if len(text) <= limit else text[: limit - 1] + "…", ensure_ascii=False)


def _attached(question: Question, slot: str) -> Any:
    """The hook this module attached to the question's type under ``slot`` (bottom of the
    module), or None: ``diff`` dispatches through the registry, not on the type's name."""
    qtype = registry.of_question(question)
    return qtype.slots.get(slot) if qtype is not None else None


def advisory_codes(question: Question) -> dict[str, str]:
    """The check-criteria advisory codes a question carries, with their reason."""
    hook = _attached(question, registry.ADVISORY)
    return hook(question) if hook is not None else {}


def _choice_advisory(question: ChoiceQuestion) -> dict[str, str]:
    codes: dict[str, str] = {}
    reason = degenerate_criteria(question.criteria)
    if reason is not None:
        codes[DEGENERATE_CODES[reason]] = reason
    elif len(question.criteria) >= 2:
        empty = [o for o, d in question.criteria.items() if not str(d).strip()]
        if empty:
            codes["TN023"] = f"option {empty[0]!r} has an empty description"
    return codes


def _score_advisory(question: ScoreQuestion) -> dict[str, str]:
    codes: dict[str, str] = {}
    seen: dict[str, int] = {}
    for i, level in enumerate(question.criteria):
        label = level_label(level)
        if not label.strip():
            codes.setdefault("TN023", f"level {i} is empty")
        elif label in seen:
            codes.setdefault("TN022", f"level {i} repeats level {seen[label]} ({label!r})")
        else:
            seen[label] = i
    return codes


def _is_subsequence(small: Sequence[str], big: Sequence[str]) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


def _extra(small: Sequence[str], big: Sequence[str]) -> list[tuple[int, str]]:
    """``(index, label)`` of the levels of ``big`` that are not the subsequence ``small``."""
    out = []
    j = 0
    for i, label in enumerate(big):
        if j < len(small) and small[j] == label:
            j += 1
        else:
            out.append((i, label))
    return out


def _score_changes(key: str, old: ScoreQuestion, new: ScoreQuestion) -> list[Change]:
    a = [level_label(x) for x in old.criteria]
    b = [level_label(x) for x in new.criteria]
    why = "recorded levels, labels and thresholds no longer mean the same"
    detail = {"before": a, "after": b}
    if a == b:
        return [
            Change(
                "level_reworded",
                key,
                f"level {i} ({a[i]!r}) re-described",
                detail={"level": i},
            )
            for i, (x, y) in enumerate(zip(old.criteria, new.criteria, strict=True))
            if canonical_json(x) != canonical_json(y)
        ]
    if sorted(a) == sorted(b):
        moves = ", ".join(
            f"{label!r} {a.index(label)}→{b.index(label)}"
            for label in a
            if a.index(label) != b.index(label)
        )
        return [Change("levels_reordered", key, f"levels reordered ({moves}): {why}", True, detail)]
    if _is_subsequence(a, b):
        out = []
        for k, (i, label) in enumerate(_extra(a, b)):
            if i - k == len(a):  # every old level comes before it
                msg = (
                    f"level {label!r} appended as {i}: old levels keep their numbers, but the "
                    "score's scale (and score thresholds) change"
                )
            else:
                msg = f"level {label!r} inserted at {i}: the levels after it are renumbered; {why}"
            out.append(Change("level_inserted", key, msg, True, {"level": i, "label": label}))
        return out
    if _is_subsequence(b, a):
        return [
            Change(
                "level_removed",
                key,
                f"level {i} ({label!r}) removed: the levels after it are renumbered; {why}",
                True,
                {"level": i, "label": label},
            )
            for i, label in _extra(b, a)
        ]
    if len(a) == len(b):
        return [
            Change(
                "level_reworded",
                key,
                f"level {i} reworded: {x!r} → {y!r}",
                detail={"level": i, "before": x, "after": y},
            )
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            if x != y
        ]
    return [Change("levels_replaced", key, f"levels {a} → {b}: {why}", True, detail)]


def _choice_changes(key: str, old: ChoiceQuestion, new: ChoiceQuestion) -> list[Change]:
    a = {str(k): v for k, v in old.criteria.items()}
    b = {str(k): v for k, v in new.criteria.items()}
    removed = [k for k in a if k not in b]
    added = [k for k in b if k not in a]
    out: list[Change] = []
    for r in list(removed):
        same = [n for n in added if b[n] == a[r] and str(a[r]).strip()]
        if len(same) == 1:
            n = same[0]
            removed.remove(r)
            added.remove(n)
            out.append(
                Change(
                    "option_renamed",
                    key,
                    f"option {r!r} renamed to {n!r}: old labels and recordings name {r!r}",
                    True,
                    {"before": r, "after": n},
                )
            )
    for r in removed:
        out.append(
            Change(
                "option_removed",
                key,
                f"option {r!r} removed (labels naming it no longer match)",
                detail={"option": r},
            )
        )
    for n in added:
        out.append(Change("option_added", key, f"option {n!r} added", detail={"option": n}))
    for k in a:
        if k in b and canonical_json(a[k]) != canonical_json(b[k]):
            out.append(
                Change(
                    "option_redescribed",
                    key,
                    f"option {k!r} re-described: {_short(a[k])} → {_short(b[k])}",
                    detail={"option": k},
                )
            )
    return out


def _noul_changes(key: str, old: NoulQuestion, new: NoulQuestion) -> list[Change]:
    def shown(q: NoulQuestion) -> str:
        if q.criteria is None:
            return "absent"
        if not q.criteria.true and not q.criteria.false:
            return "empty (two empty strings)"
        return "written"

    a, b = old.criteria, new.criteria
    if (a is None) != (b is None) or (a is not None and b is not None and a != b):
        if a is not None and b is not None and shown(old) == shown(new) == "written":
            sides = [s for s in ("true", "false") if getattr(a, s) != getattr(b, s)]
            msg = "criteria " + ", ".join(
                f"{s!r} re-described: {_short(getattr(a, s))} → {_short(getattr(b, s))}"
                for s in sides
            )
        else:
            msg = f"criteria {shown(old)} → {shown(new)}"
        return [Change("noul_criteria", key, msg)]
    return []


def _question_changes(key: str, old: Question, new: Question) -> list[Change]:
    if old.type != new.type:
        return [
            Change(
                "type_changed",
                key,
                f"type {old.type} → {new.type}: recorded answers, labels and thresholds for it "
                "no longer apply",
                True,
                {"before": old.type, "after": new.type},
            )
        ]
    out: list[Change] = []
    if canonical_json(old.instructions) != canonical_json(new.instructions):
        out.append(
            Change(
                "instructions",
                key,
                f"instructions {_short(old.instructions)} → {_short(new.instructions)}",
            )
        )
    changes = _attached(old, registry.DIFF)  # old.type == new.type: one type's diff
    if changes is not None and registry.of_question(new) is registry.of_question(old):
        out += changes(key, old, new)
    elif canonical_json(question_to_wire(old)) != canonical_json(question_to_wire(new)) and not out:
        out.append(
            Change("raw_changed", key, "criteria changed (a type the library does not model)")
        )
    before, after = advisory_codes(old), advisory_codes(new)
    for code, reason in after.items():
        if code not in before:
            out.append(
                Change(
                    "criteria_degenerate",
                    key,
                    f"{code} {reason}: check-criteria flags it; answers become unreliable",
                    True,
                    {"code": code},
                )
            )
    for code in before:
        if code not in after:
            out.append(
                Change("criteria_fixed", key, f"{code} no longer applies", detail={"code": code})
            )
    return out


# Each built-in type's part of ``toolnexus diff``, in its type's registry entry (the DIFF and
# ADVISORY slots, ``qtypes/registry.py``): the code above dispatches on the registry.
registry.attach(NOUL.name, registry.DIFF, _noul_changes)


registry.attach(CHOICE.name, registry.DIFF, _choice_changes)


registry.attach(SCORE.name, registry.DIFF, _score_changes)


registry.attach(CHOICE.name, registry.ADVISORY, _choice_advisory)


registry.attach(SCORE.name, registry.ADVISORY, _score_advisory)


def diff_sets(old: SetSide, new: SetSide) -> dict[str, Any]:
    """The diff as a JSON-ready object (``toolnexus diff --format json``)."""
    changes: list[Change] = []
    if old.model != new.model:
        changes.append(
            Change(
                "model",
                None,
                f"model {old.model} → {new.model}: cached decisions were made by the old model",
                detail={"before": old.model, "after": new.model},
            )
        )
    for key, q in old.questions.items():
        if key not in new.questions:
            changes.append(
                Change(
                    "question_removed", key, f"question removed ({q.type})", detail={"type": q.type}
                )
            )
    for key, q in new.questions.items():
        if key not in old.questions:
            changes.append(
                Change("question_added", key, f"question added ({q.type})", detail={"type": q.type})
            )
            codes = advisory_codes(q)
            for code, reason in codes.items():
                changes.append(
                    Change(
                        "criteria_degenerate",
                        key,
                        f"{code} {reason}: check-criteria flags it; answers become unreliable",
                        True,
                        {"code": code},
                    )
                )
    for key, q in old.questions.items():
        if key in new.questions:
            changes += _question_changes(key, q, new.questions[key])
    before, after = _digests(old), _digests(new)
    same_questions = before["questions_sha256"] == after["questions_sha256"]
    return {
        "old": {"source": old.source, "model": old.model, **before},
        "new": {"source": new.source, "model": new.model, **after},
        "equal": old.canonical == new.canonical,
        "changes": [c.to_json() for c in changes],
        "breaking": sum(1 for c in changes if c.breaking),
        "still_apply": {
            "recordings": same_questions,
            "cached_decisions": same_questions and old.model == new.model,
        },
    }


def _digests(side: SetSide) -> dict[str, str]:
    """Both named digests of a side: ``sha256`` the request digest (``canonical --sha256``),
    ``questions_sha256`` the question-set digest (what batch records carry)."""
    return {
        "sha256": request_sha256(side.model, side.questions),
        "questions_sha256": questions_sha256(side.questions),
    }
