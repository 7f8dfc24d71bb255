"""``--write-thresholds``' floors for accuracy at a coverage or a maximum risk (issue 35 item 4:
"gate floors, for a target (... accuracy at a coverage, a maximum risk)"), each chosen out of
bag by ``calibration.oobselect``'s rule over a grid of floors. Read again from the run only
when a target asks for them.

- A gate, at each floor of ``--floors`` (``sweep.at_floor``: its cut-points set by the floor in
  its own inclusive or exclusive sense), against the labels column named after it: a record it
  escalates is not answered; one whose action is its outcome is right.
- A labelled noul question, at each floor ``f`` of 0.50, 0.55, ..., 1.00: answered when ``p >=
  f`` or ``p <= 1 - f`` (the pair ``yes = f``, ``no = 1 - f`` written for it, in hundredths as
  the sweep compares), right when ``p >= 0.5`` says the label.
- A labelled choice or score question, at each floor of 0.00, 0.05, ..., 1.00: answered when its
  wire ``confidence >= f`` (``min_confidence = f``), right when its pick is the label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..calibration import NOT_ANSWERED, RIGHT, WRONG, SelectiveGuard, oob_selective
from ..core import Policy, Question, registry
from .judged import LABEL_TRUTH, decided_records
from .labels import Labels
from .sweep import at_floor, decided_answers

__all__ = ["NOUL_GRID", "SCORE_GRID", "gate_floors", "question_floors"]

#: A noul question's floors, in hundredths (its confidence max(p, 1 - p) is at least 0.5).
NOUL_GRID = tuple(range(50, 101, 5))
#: A choice or score question's ``min_confidence`` floors, in hundredths.
SCORE_GRID = tuple(range(0, 101, 5))


def gate_floors(
    run: str,
    gates: Mapping[str, Policy],
    questions: Mapping[str, Question],
    labels: Labels,
    floors: Sequence[int],
    target: float,
) -> dict[str, SelectiveGuard | None]:
    """Per gate (file order): its floor for ``target`` accuracy, None when the labels have no
    column named after it."""
    decided = decided_answers(run)
    out: dict[str, SelectiveGuard | None] = {}
    for name, policy in gates.items():
        column = labels.column(name)
        if column is None:
            out[name] = None
            continue
        rows = [
            (answers, row[column])
            for item_id, answers in decided
            if (row := labels.rows.get(item_id)) is not None and row[column]
        ]
        states = []
        for floor in floors:
            p = at_floor(policy, floor)
            line = []
            for answers, outcome in rows:
                got = p.decide(answers, questions)
                line.append(
                    NOT_ANSWERED if got.escalated else RIGHT if got.action == outcome else WRONG
                )
            states.append(line)
        out[name] = oob_selective(states, [f / 100 for f in floors], target)
    return out


def _noul_states(answer: Mapping[str, Any], label: str) -> list[int] | None:
    truth, p = LABEL_TRUTH.get(label.lower()), answer.get("noul")
    if truth is None or not isinstance(p, int | float) or isinstance(p, bool):
        return None
    said = RIGHT if (p >= 0.5) == truth else WRONG
    return [said if p >= f / 100 or p <= (100 - f) / 100 else NOT_ANSWERED for f in NOUL_GRID]


def _confidence_states(answer: Mapping[str, Any], label: str) -> list[int] | None:
    from .selective import confident

    got = confident(answer, label)
    if got is None:
        return None
    conf, right = got
    said = RIGHT if right else WRONG
    return [said if conf >= f / 100 else NOT_ANSWERED for f in SCORE_GRID]


def question_floors(
    run: str, labels: Labels, types: Mapping[str, str], target: float
) -> dict[str, tuple[str, SelectiveGuard]]:
    """Per labelled question of ``types`` (key -> noul, choice or score): its type and floor
    for ``target`` accuracy."""
    per: dict[str, list[list[int]]] = {k: [] for k in types}
    columns = {k: labels.column(k) for k in types}
    for item_id, record in decided_records(run):
        row = labels.rows.get(item_id)
        answers = record.get("answers")
        if row is None or not isinstance(answers, Mapping):
            continue
        for key, at in columns.items():
            answer = answers.get(key)
            if at is None or not row[at] or not isinstance(answer, Mapping):
                continue
            if answer.get("type") != types[key]:
                continue
            by_confidence = registry.floored_by_confidence(types[key])  # else a noul's p
            pick = _confidence_states if by_confidence else _noul_states
            got = pick(answer, row[at])
            if got is not None:
                per[key].append(got)
    out = {}
    for key, records in per.items():
        if not records:
            continue
        grid = SCORE_GRID if registry.floored_by_confidence(types[key]) else NOUL_GRID
        states = [list(column) for column in zip(*records, strict=True)]
        out[key] = (types[key], oob_selective(states, [f / 100 for f in grid], target))
    return out
