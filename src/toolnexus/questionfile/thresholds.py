"""A thresholds file (``report --write-thresholds`` writes one; ``--thresholds @FILE`` reads it):
band cut-points at the top level, per question key under ``questions:``, and per gate of the
question file the floor ``report --write-thresholds --gates`` chose for it (issue 35 item 4)::

    yes: 0.8
    questions:
      addresses_task: {yes: 0.75, no: 0.25}
    gates:
      merge: {floor: 0.75}
    questions_sha256: 5c1e...            # the question set it was fitted on (issue 42 item 3)
    wording:
      addresses_task: "Does the change address the task?"

``questions_sha256`` and ``wording`` say what the cut-points were fitted on (as ``jev-eval``'s
``thresholds.json`` v1 records the exact wording of each question): ``eval``/``batch
--thresholds @FILE`` refuse a cut-point for a question the question file lacks, and warn in one
line, with both digests, when the file was fitted on another question set, and per key when a
question's wording changed (:func:`check_fitted_on`). A file written before them still loads,
with one line saying it cannot be checked.

Read here, below the run, so ``toolnexus batch --thresholds @FILE``, ``eval`` and a script's
``RunConfig.from_question_file(..., thresholds=FILE)`` read one file one way (issue 30 item 1).
Every problem is one line naming the file (and its line for a gate), a ``RunError`` (exit 2 in
the CLI)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import RunError

if TYPE_CHECKING:
    from ..core import Located

__all__ = [
    "FITTED_ON",
    "THRESHOLD_NAMES",
    "GateFloor",
    "check_fitted_on",
    "checked_cut_points",
    "gate_floor",
    "read_gate_floors",
    "read_thresholds",
    "thresholds_doc",
    "wording_of",
]

#: The band cut-points a thresholds mapping may name.
THRESHOLD_NAMES = ("yes", "no", "min_confidence")
#: The top-level keys that say what a thresholds file was fitted on (issue 42 item 3): the
#: question-set digest and, per question key, its exact wording (:func:`wording_of`).
FITTED_ON = ("questions_sha256", "wording")
#: The top-level keys that are not cut-points.
_SECTIONS = ("questions", "gates", *FITTED_ON)


@dataclass(frozen=True)
class GateFloor:
    """One gate's floor: ``hundredths`` (50..100) and ``where`` it was given, the start of a
    message about it (``--thresholds @t.yaml:3`` for a file's line; ``gate_floors`` for a
    script's value)."""

    hundredths: int
    where: str = "gate_floors"


def gate_floor(value: object, where: str, name: str) -> GateFloor:
    """``value`` (a floor like 0.75, or a :class:`GateFloor`) checked: 0.50..1.00 in hundredths."""
    if isinstance(value, GateFloor):
        return value
    hundredths = -1
    if isinstance(value, int | float) and not isinstance(value, bool):
        hundredths = round(value * 100)
        if abs(value * 100 - hundredths) > 1e-6:
            hundredths = -1  # not in hundredths
    if not 50 <= hundredths <= 100:
        raise RunError(f"{where}: gate {name!r}: floor must be in 0.50..1.00 in hundredths, "
                       f"got {value!r}")  # fmt: skip
    return GateFloor(hundredths, where)


def thresholds_doc(path: str) -> tuple[dict[str, Any], Located]:
    """A thresholds YAML file as a mapping, with its positions; a file that cannot be read is
    one line ``--thresholds @PATH[:LINE]: ...``."""
    from ..core import YamlSyntaxError, read_yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        raise RunError(f"--thresholds @{path}: cannot read: {why}") from None
    try:
        doc = read_yaml(text)
    except YamlSyntaxError as e:
        p = e.problem
        raise RunError(f"--thresholds @{path}:{p.line}: {p.message}") from None
    if doc.problems:
        p = doc.problems[0]
        raise RunError(f"--thresholds @{path}:{p.line}: {p.message}")
    obj = doc.value if doc.value is not None else {}
    if not isinstance(obj, dict):
        raise RunError(f"--thresholds @{path}: expected a mapping (yes, no, min_confidence, "
                       "questions, gates)")  # fmt: skip
    return obj, doc


def read_gate_floors(path: str | Path) -> dict[str, GateFloor]:
    """Per gate name, the floor a thresholds file's ``gates: {NAME: {floor: F}}`` gives it
    (empty when it has no ``gates:``), each naming the file's line."""
    path = str(path)
    obj, doc = thresholds_doc(path)
    gates = obj.get("gates") or {}
    if not isinstance(gates, dict):
        raise RunError(f"--thresholds @{path}: gates must map gate names to {{floor: F}}")
    out = {}
    for name, value in gates.items():
        where = f"--thresholds @{path}:{doc.key_at(('gates', name))[0]}"
        if not isinstance(value, dict) or set(value) != {"floor"}:
            raise RunError(f"{where}: gate {name!r}: expected {{floor: F}}, got {value!r}")
        out[str(name)] = gate_floor(value["floor"], where, str(name))
    return out


def read_thresholds(path: str | Path) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """The top-level cut-points of a thresholds file and, per question key, its
    ``questions:`` cut-points over the top-level ones, each checked."""
    path = str(path)
    obj, _ = thresholds_doc(path)
    questions = obj.get("questions") or {}
    if not isinstance(questions, dict):
        raise RunError(f"--thresholds @{path}: questions must map question keys to cut-points")
    where = f"--thresholds @{path}"
    rest = {k: v for k, v in obj.items() if k not in _SECTIONS}
    top = checked_cut_points(_cut_points(rest, where), where)
    per_key = {str(k): _cut_points(v, f"{where}: question {k!r}") for k, v in questions.items()}
    return top, {k: checked_cut_points({**top, **v}, f"{where}: question {k!r}")
                 for k, v in per_key.items()}  # fmt: skip


def checked_cut_points(values: dict[str, float], where: str) -> dict[str, float]:
    """Each value within 0..1 and, with the defaults merged, ``no`` not above ``yes``."""
    for name, value in values.items():
        if not 0.0 <= value <= 1.0:
            raise RunError(f"{where}: {name} must be within 0..1, got {value}")
    from ..core import DEFAULT_THRESHOLDS, swapped_cut_points

    swapped = swapped_cut_points({**DEFAULT_THRESHOLDS, **values})
    if swapped is not None:
        raise RunError(f"{where}: {swapped}")
    return values


def _cut_points(obj: Any, where: str) -> dict[str, float]:
    if not isinstance(obj, dict):
        raise RunError(f"{where}: expected a mapping of {', '.join(THRESHOLD_NAMES)}")
    out = {}
    for name, value in obj.items():
        if name not in THRESHOLD_NAMES:
            raise RunError(f"{where}: unknown name {name!r} (use {', '.join(THRESHOLD_NAMES)})")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RunError(f"{where}: {name} must be a number, got {value!r}")
        out[name] = float(value)
    return out


def wording_of(question: Any) -> str:
    """A question's exact wording as a thresholds file records it: its instructions, or the
    canonical JSON of structured instructions (content parts)."""
    instructions = getattr(question, "instructions", None)
    if isinstance(instructions, str):
        return instructions
    from ..core import canonical_json

    return canonical_json(instructions).decode("utf-8")


def check_fitted_on(
    path: str | Path, questions: Mapping[str, Any], questions_path: str | Path
) -> list[str]:
    """A thresholds file against the question file it is used with (issue 42 item 3): a
    ``questions:`` cut-point for a key ``questions`` lacks is refused (a ``RunError`` naming the
    file's line, as a floor for an unknown gate is); the warnings, one line each: the file
    fitted on another question set (both digests), each key whose wording changed since, or a
    file written before it recorded them (it cannot be checked)."""
    from ..core import questions_sha256

    path = str(path)
    obj, doc = thresholds_doc(path)
    where = f"--thresholds @{path}"
    per_key = obj.get("questions") or {}
    for key in per_key if isinstance(per_key, dict) else ():
        if str(key) not in questions:
            line = doc.key_at(("questions", key))[0]
            raise RunError(
                f"{where}:{line}: question {str(key)!r} is not a question of {questions_path} "
                f"(its questions: {', '.join(questions) or 'none'}); these cut-points were "
                "fitted on another question set: fit them again with report --write-thresholds"
            )
    fitted = obj.get("questions_sha256")
    if fitted is None:
        return [
            f"{where}: records no question set it was fitted on (written before thresholds "
            f"files did, or from a run of several): cannot be checked against {questions_path} "
            "(write it again with report --write-thresholds)"
        ]
    out = []
    digest = questions_sha256(questions)
    if fitted != digest:
        out.append(
            f"{where}: fitted on question set {fitted}, but {questions_path} is {digest}: the "
            "cut-points may not fit these questions"
        )
    wording = obj.get("wording")
    if not isinstance(wording, dict):
        return out
    for key, was in wording.items():
        q = questions.get(str(key))
        if q is not None and wording_of(q) != was:
            shown = str(was) if len(str(was)) <= 60 else str(was)[:57] + "..."
            out.append(
                f"{where}: question {str(key)!r}: its wording changed since the cut-points were "
                f"fitted (then: {shown!r}); fit them again with report --write-thresholds"
            )
    return out
