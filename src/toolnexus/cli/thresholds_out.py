"""``report --target-precision P --write-thresholds FILE``: the ``--thresholds @FILE`` that
``eval``/``batch`` read, per noul question a consistent ``yes``/``no`` pair and per choice or
score question a ``min_confidence`` floor (issue 35 item 4), each floor chosen on bootstrap
resamples and measured out of bag (``calibration.oob``'s rule, ``report.floors``): what is
written is that out-of-bag choice, never the report's in-sample search. A floor whose
out-of-bag estimate misses the target is refused with the numbers on stderr and not written.
The bootstrap runs only here, when a target is asked.

With ``--target-accuracy A`` (or ``--target-risk R``, accuracy ``1 - R``) every labelled
question gets the floor of the largest coverage reaching it instead (``report.selectfloors``);
with ``--gates`` every gate with an outcome column gets a ``gates: {NAME: {floor: F}}`` entry
(for ``--target-precision``, the target read as accuracy, as for choice and score)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..core import one_line, registry
from .errors import CliError

if TYPE_CHECKING:
    from ..calibration import SelectiveGuard
    from ..core import Policy, Question
    from ..report import GuardedFloor, GuardedPair, Labels, Report

__all__ = ["thresholds_yaml", "write_thresholds"]


def _pair_lines(
    report: Report, guards: Mapping[str, GuardedPair]
) -> tuple[list[str], list[str], float | None]:
    lines, missing = [], []
    target = None
    for key, q in report.questions.items():
        pair = getattr(q.metrics, "thresholds", None)
        if pair is None:
            continue
        target = pair.target_precision
        guard = guards.get(key)
        if guard is None:
            missing.append(f"question {key!r}: no pair written: {pair.reason}")
            continue
        yes, no = guard.yes.floor, guard.no.floor
        if not guard.accepted or yes is None or no is None:
            sides = [
                f"{side} {g.text()}" + (f", in-sample {inside:.3g}" if inside is not None else "")
                for side, g, inside in (
                    ("yes:", guard.yes, guard.yes_in_sample),
                    ("no:", guard.no, guard.no_in_sample),
                )
                if not g.accepted
            ]
            missing.append(
                f"question {key!r}: pair refused, not written: the target precision "
                f"{pair.target_precision:g} is missed out of bag ({'; '.join(sides)})"
            )
            continue
        no_cut = round(1.0 - no, 10)  # the no side was chosen on 1 - p
        if no_cut > yes:
            missing.append(
                f"question {key!r}: pair refused, not written: out of bag, no <= {no_cut:g} is "
                f"above yes >= {yes:g}"
            )
            continue
        lines += [f"  {json.dumps(key)}:", f"    yes: {yes!r}", f"    no: {no_cut!r}"]
        lines += [f"    # yes {guard.yes.text()}", f"    # no {guard.no.text()}"]
    return lines, missing, target


def _floor_lines(floors: Mapping[str, GuardedFloor]) -> tuple[list[str], list[str]]:
    lines, missing = [], []
    for key, f in floors.items():
        if f.floor is None:
            missing.append(
                f"question {key!r}: no min_confidence written: accuracy {f.target:g} is not "
                f"reached ({f.guard.text()})"
            )
        elif not f.guard.accepted:
            missing.append(
                f"question {key!r}: min_confidence {f.floor:g} refused, not written: the target "
                f"accuracy {f.target:g} is missed out of bag ({f.guard.text()}, in-sample "
                f"{f.accuracy or 0.0:.3g})"
            )
        else:
            lines += [
                f"  {json.dumps(key)}:",
                f"    min_confidence: {f.floor!r}",
                f"    # {f.guard.text().replace('precision', 'accuracy', 1)}",
            ]
    return lines, missing


def thresholds_yaml(
    report: Report,
    guards: Mapping[str, GuardedPair] | None = None,
    floors: Mapping[str, GuardedFloor] | None = None,
    gates: bool = False,
    asked: float | None = None,
) -> tuple[str, list[str]]:
    """The file's text, and one line per question left out (no cut-point reaches the target,
    or the out-of-bag guard refused it). ``gates``: a gates: section follows (its header line
    here); ``asked``: the target, when no question says it."""
    lines, missing, target = _pair_lines(report, guards or {})
    more, refused = _floor_lines(floors or {})
    lines += more
    missing += refused
    if target is None and floors:
        target = next(iter(floors.values())).target
    if target is None:
        target = asked if asked is not None else 0.0
    per_gate = (
        "# Per gate: the floor of the largest coverage with the target read as accuracy (its "
        "cut-points set by f), chosen on 200 bootstrap resamples (seed 0) by the same rule."
    )
    head = [
        f"# toolnexus report --target-precision {target:g}: per noul question a yes/no pair, "
        "per choice or score question a min_confidence, each chosen on bootstrap resamples",
        "# (the median of the resamples' lowest floors reaching the target, stepped up at most to "
        "their 0.75 quantile until it holds out of bag), written only when it holds.",
        *([per_gate] if gates else []),
        "# For this model and way of asking only (seed 000). Use: --thresholds @THIS_FILE",
        "questions:" if lines else "questions: {}",
    ]
    return "\n".join(head + lines) + "\n", missing


#: How ``--write-thresholds``' target was given: its flag and what it bounds.
TARGET_FLAGS = {"precision": "--target-precision", "accuracy": "--target-accuracy",
                "risk": "--target-risk"}  # fmt: skip


def _missed(kind: str, target: float) -> str:
    if kind == "risk":
        return f"the maximum risk {target:g} is exceeded out of bag"
    return f"the target accuracy {target:g} is missed out of bag"


def _guard_lines(
    what: str, name: str, guard: SelectiveGuard, kind: str, target: float, written: list[str]
) -> tuple[list[str], str | None]:
    """The lines of one floor written (``written``: its values' lines), or the line saying
    why it is not."""
    risk = kind == "risk"
    if guard.floor is None:
        return [], f"{what} {name!r}: no floor written: {guard.text(risk)}"
    if not guard.accepted:
        return [], (
            f"{what} {name!r}: floor {guard.floor:g} refused, not written: {_missed(kind, target)}"
            f" ({guard.text(risk)}; {guard.in_sample_text(risk)})"
        )
    comment = f"    # {guard.text(risk)}; {guard.in_sample_text(risk)}"
    return [f"  {json.dumps(name)}:", *written, comment], None


def _tuned(qtype: str) -> dict[str, float]:
    """The thresholds a tuned floor of a question of ``qtype`` writes (its type's
    ``floor_thresholds``, ``qtypes/``); empty for a type nobody tunes."""
    written = registry.of(qtype).floor_thresholds
    return written(0) if written is not None else {}


def _selective_lines(
    floors: Mapping[str, tuple[str, SelectiveGuard]], kind: str, target: float
) -> tuple[list[str], list[str]]:
    lines, missing = [], []
    for key, (qtype, g) in floors.items():
        f = round((g.floor or 0.0) * 100)
        written = registry.of(qtype).floor_thresholds
        assert written is not None  # question_floors was given only the tuned types
        values = [f"    {name}: {value!r}" for name, value in written(f).items()]
        got, why = _guard_lines("question", key, g, kind, target, values)
        lines += got
        missing += [why] if why else []
    return lines, missing


def _gate_lines(
    floors: Mapping[str, SelectiveGuard | None], kind: str, target: float
) -> tuple[list[str], list[str]]:
    lines, missing = [], []
    for name, g in floors.items():
        if g is None:
            missing.append(
                f"gate {name!r}: no floor written: the labels have no column {name!r} (the "
                "outcome each record should get)"
            )
            continue
        got, why = _guard_lines("gate", name, g, kind, target, [f"    floor: {g.floor!r}"])
        lines += got
        missing += [why] if why else []
    return lines, missing


def _selective_head(kind: str, target: float, gates: bool) -> list[str]:
    said = f"{target:g}"
    goal = f"risk at most {said}" if kind == "risk" else f"accuracy at least {said}"
    return [
        f"# toolnexus report {TARGET_FLAGS[kind]} {said}: per labelled question"
        + (" and per gate" if gates else "")
        + f" the floor of the largest coverage with {goal} (noul: yes = f, no = 1 - f; choice, "
        "score: min_confidence = f" + ("; a gate: its cut-points set by f" if gates else "") + ")",
        "# chosen on 200 bootstrap resamples (seed 0): the median of the resamples' choices, "
        "stepped up at most to their 0.75 quantile until it holds out of bag (min n 5); "
        "written only when it holds.",
        "# For this model and way of asking only (seed 000). Use: --thresholds @THIS_FILE",
    ]


def write_thresholds(
    path: str,
    report: Report,
    run: str,
    labels: list[str],
    id_field: str,
    target: float,
    *,
    kind: str = "precision",
    gates: tuple[Mapping[str, Policy], Mapping[str, Question]] | None = None,
    gate_grid: tuple[int, ...] = (),
    fitted_on: tuple[str, Mapping[str, Question]] | None = None,
) -> None:
    """Guard, then write ``path``; a warning line on stderr per question or gate left out.
    ``kind``: which flag gave ``target`` (:data:`TARGET_FLAGS`); ``gates``: ``--gates``' policies
    and questions, floored over ``gate_grid`` (hundredths); ``fitted_on``: the question file
    the run answered (its path and questions), whose wording the file records."""
    from ..report import read_all_labels

    accuracy = 1.0 - target if kind == "risk" else target
    read = read_all_labels(labels, id_field)
    gate_text: list[str] = []
    gate_missing: list[str] = []
    if gates is not None:
        from ..report import gate_floors

        found = gate_floors(run, gates[0], gates[1], read, gate_grid, accuracy)
        gate_text, gate_missing = _gate_lines(found, kind, target)
    if kind == "precision":
        text, missing = _precision_text(report, run, read, target, gates is not None)
    else:
        from ..report import question_floors

        types = {k: q.type for k, q in report.questions.items()
                 if _tuned(q.type) and q.labelled}  # fmt: skip
        lines, missing = _selective_lines(question_floors(run, read, types, accuracy), kind, target)
        head = _selective_head(kind, target, gates is not None)
        text = "\n".join([*head, "questions:" if lines else "questions: {}", *lines]) + "\n"
    if gate_text:
        text += "\n".join(["gates:", *gate_text]) + "\n"
    missing += gate_missing
    text += _fitted_on_text(report, fitted_on)
    from ..records import whole_file

    with whole_file(path) as f:  # whole or not at all (issue 42 item 2)
        f.write(text)
    for line in missing:
        sys.stderr.write(f"toolnexus: warning: {path}: {one_line(line)}\n")


def _fitted_on_text(report: Report, fitted_on: tuple[str, Mapping[str, Question]] | None) -> str:
    """What the cut-points were fitted on (issue 42 item 3, as ``jev-eval``'s thresholds.json
    v1): the run's question-set digest and, from the question file the run answered, each
    question's exact wording. A question file that is not the run's is refused: its wording
    would be recorded for answers to other questions."""
    from ..core import questions_sha256
    from ..questionfile import wording_of

    if len(report.questions_sha256) != 1:
        return ""  # no digest (records from before it) or several: nothing one can record
    (digest,) = report.questions_sha256
    lines = [f"questions_sha256: {json.dumps(digest)}"]
    if fitted_on is not None:
        where, questions = fitted_on
        theirs = questions_sha256(questions)
        if theirs != digest:
            raise CliError(
                f"{where}: question-set digest {theirs} is not the run's ({digest}): give the "
                "question file the run answered, whose wording the thresholds file records"
            )
        lines.append("wording:")
        lines += [f"  {json.dumps(k)}: {json.dumps(wording_of(q), ensure_ascii=False)}"
                  for k, q in questions.items()]  # fmt: skip
    return "\n".join(lines) + "\n"


def _precision_text(
    report: Report, run: str, read: Labels, target: float, gates: bool
) -> tuple[str, list[str]]:
    """The file for ``--target-precision``: noul pairs and choice or score floors."""
    from ..report import confidence_floors, guard_pairs

    pairs, floors = {}, {}
    for key, q in report.questions.items():
        pair = getattr(q.metrics, "thresholds", None)
        if pair is not None and pair.yes is not None and pair.no is not None:
            pairs[key] = pair.target_precision
    floors = {k: target for k, q in report.questions.items()
              if registry.floored_by_confidence(q.type) and q.labelled}  # fmt: skip
    guards = guard_pairs(run, read, pairs) if pairs else {}
    found = confidence_floors(run, read, floors) if floors else {}
    return thresholds_yaml(report, guards, found, gates, target)
