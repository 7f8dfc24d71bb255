"""Gates and paired comparison in a report (issue 35 items 2 and 7).

- Per gate of the judged (last) run: how many records it decided, each action's count, how many
  it escalated; with ``--labels`` holding a column named after the gate (the outcome each
  record should get, in the user's own words), how many it agreed with, by outcome.
- With two runs and ``--labels``: per question and per gate, which labelled ids each run got
  right: fixes (wrong in the first, right in the second), breaks (right, then wrong), both
  right, both wrong, and McNemar's exact two-sided p over the discordant pairs.

The gates are counted in the report's one pass over the run (:class:`GateCounts`, fed by
``RunStats.add``); only a paired comparison reads the two runs again. Pure counting; no
numpy, no scipy.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core import CHOICE, NOUL, SCORE, registry
from .labels import Labels
from .runs import iter_records

__all__ = ["GateCounts", "GateReport", "PairedCount", "judge_section", "mcnemar_p"]

_SKIP: Mapping[str, str] = {"json": "skip"}  # model.SKIP (model imports this module)
_OMIT_NONE: Mapping[str, str] = {"json": "omit_none"}
#: Ids named in a --fail-on message, at most (accumulators.FIRST_IDS).
_FIRST_IDS = 5
LABEL_TRUTH = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


@dataclass(frozen=True)
class GateReport:
    """One gate over the judged run. ``actions``: records per action (escalations under
    ``needs_input``); ``escalated_share`` of ``n``. With outcome labels: ``labelled`` records,
    ``agreed`` (action == outcome), ``accuracy`` = agreed / labelled and ``outcomes``
    (outcome -> action -> records)."""

    n: int
    actions: Mapping[str, int]
    escalated: int
    escalated_share: float | None
    labelled: int = 0
    agreed: int = 0
    accuracy: float | None = field(default=None, metadata=_OMIT_NONE)
    outcomes: Mapping[str, Mapping[str, int]] | None = field(default=None, metadata=_OMIT_NONE)
    escalated_ids: tuple[str, ...] = field(default=(), metadata=_SKIP)


@dataclass(frozen=True)
class PairedCount:
    """One question or gate, labelled ids decided in both runs (``compared``): right in both,
    wrong in both, ``fixes`` (wrong, then right), ``breaks`` (right, then wrong) and McNemar's
    exact two-sided p over the ``fixes + breaks`` discordant pairs (1.0 when there are none)."""

    compared: int
    both_right: int
    both_wrong: int
    fixes: int
    breaks: int
    mcnemar_p: float
    fix_ids: tuple[str, ...] = field(default=(), metadata=_SKIP)
    break_ids: tuple[str, ...] = field(default=(), metadata=_SKIP)


def mcnemar_p(fixes: int, breaks: int) -> float:
    """McNemar's exact test, two-sided: ``min(1, 2 * P(X <= min(b, c)))`` for X ~ Bin(b + c,
    1/2), the conditional binomial test ``scipy.stats.binomtest(b, b + c)`` computes (equal to
    it in a test). 1.0 when nothing is discordant."""
    n = fixes + breaks
    if n == 0:
        return 1.0
    k = min(fixes, breaks)
    if n <= 1000:  # exact in integers, then one division
        tail = sum(math.comb(n, i) for i in range(k + 1))
        return min(1.0, float(2 * tail / 2**n))
    # Beyond, the same sum in log space: 2**n is past a double's exponent.
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(k + 1)]
    top = max(logs)
    log_tail = top + math.log(math.fsum(math.exp(x - top) for x in logs)) - n * math.log(2)
    return min(1.0, 2 * math.exp(log_tail))


def _right(answer: Any, label: str) -> bool | None:
    """Whether ``answer`` (a record's answer) says ``label``, as the report's accuracy reads
    it: a noul at p >= 0.5 is true; a choice's pick; a score's level (index or label).
    None for an answer that cannot be read that way (it counts as not compared)."""
    reading = label_reading(answer)
    return reading.right(answer, label) if reading is not None else None


@dataclass(frozen=True)
class LabelReading:
    """How ``report`` reads a record's answer of one type against a label, attached to the
    type's registry entry (the LABELS slot, bottom of this module): each takes the record's
    answer (a mapping)."""

    #: ``(answer, label) -> bool | None``: whether the answer says ``label`` (accuracy)
    right: Callable[[Mapping[str, Any], str], bool | None]
    #: ``(answer, label) -> (confidence, right) | None``: selective prediction's pair
    confident: Callable[[Mapping[str, Any], str], tuple[float, bool] | None]
    #: ``(answer, band) -> str``: the answer in a few words (the review queue)
    said: Callable[[Mapping[str, Any], str], str]


def label_reading(answer: Any) -> LabelReading | None:
    """The :class:`LabelReading` of a record's answer's type; None for a non-mapping or a type
    the report does not judge."""
    if not isinstance(answer, Mapping):
        return None
    reading: LabelReading | None = registry.attached(answer.get("type"), registry.LABELS)
    return reading


def _number(value: Any) -> float | None:
    return None if isinstance(value, bool) or not isinstance(value, int | float) else value


def _noul_right(answer: Mapping[str, Any], label: str) -> bool | None:
    truth = LABEL_TRUTH.get(label.lower())
    p = answer.get("noul")
    if truth is None or not isinstance(p, int | float):
        return None
    return (p >= 0.5) == truth


def _noul_confident(answer: Mapping[str, Any], label: str) -> tuple[float, bool] | None:
    p, truth = _number(answer.get("noul")), LABEL_TRUTH.get(label.lower())
    if truth is None or p is None:
        return None
    return max(p, 1.0 - p), (p >= 0.5) == truth


def _choice_right(answer: Mapping[str, Any], label: str) -> bool:
    return answer.get("choice") == label


def _score_right(answer: Mapping[str, Any], label: str) -> bool:
    return label == str(answer.get("level")) or label == answer.get("label")


def _confident_by(
    right: Callable[[Mapping[str, Any], str], bool],
) -> Callable[[Mapping[str, Any], str], tuple[float, bool] | None]:
    """A choice's or a score's pair: its own confidence, and whether it is right."""

    def confident(answer: Mapping[str, Any], label: str) -> tuple[float, bool] | None:
        conf = _number(answer.get("confidence"))
        return None if conf is None else (float(conf), right(answer, label))

    return confident


NOUL_LABELS = LabelReading(_noul_right, _noul_confident, lambda a, band: f"{a.get('noul')}{band}")
CHOICE_LABELS = LabelReading(
    _choice_right,
    _confident_by(_choice_right),
    lambda a, band: f"{a.get('choice')} {a.get('confidence')}{band}",
)
SCORE_LABELS = LabelReading(
    _score_right,
    _confident_by(_score_right),
    lambda a, band: f"{a.get('label', a.get('level'))} {a.get('confidence')}{band}",
)
registry.attach(NOUL.name, registry.LABELS, NOUL_LABELS)
registry.attach(CHOICE.name, registry.LABELS, CHOICE_LABELS)
registry.attach(SCORE.name, registry.LABELS, SCORE_LABELS)


def decided_records(path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(id, record)`` for each decided record of a run (errors and non-records left out)."""
    for _, obj in iter_records(path):
        if isinstance(obj, Mapping) and "error" not in obj and "id" in obj:
            yield str(obj["id"]), obj


class GateCounts:
    """Per gate, what the judged run's records say, counted in the report's one pass over the
    run (``RunStats.add``; issue 35, Speed: no second pass for gates): each action's count,
    the escalations and their first ids, and with a labels column named after the gate, the
    actions by outcome. Chunks counted apart :meth:`merge` in file order."""

    __slots__ = ("_columns", "actions", "escalated", "first_ids", "outcomes")

    def __init__(self) -> None:
        self.actions: dict[str, dict[str, int]] = {}
        self.escalated: dict[str, int] = {}
        self.first_ids: dict[str, list[str]] = {}
        self.outcomes: dict[str, dict[str, dict[str, int]]] = {}
        #: per gate, its labels column (0: none), resolved when the gate is first met
        self._columns: dict[str, int] = {}

    def add(self, gates: Any, sid: str, row: tuple[Any, ...] | None, labels: Labels | None) -> None:
        """One record's ``gates`` (anything but an object of objects is not counted, as
        before); ``row`` its labels row, if any."""
        if type(gates) is not dict:
            return
        columns = self._columns
        for name, g in gates.items():
            if type(g) is not dict:
                continue
            action = g.get("action", "")
            if type(action) is not str:
                action = str(action)
            counts = self.actions.get(name)
            if counts is None:
                counts = self.actions[name] = {}
                columns[name] = (labels.column(name) or 0) if labels is not None else 0
            counts[action] = counts.get(action, 0) + 1
            if g.get("escalated") is True:
                self.escalated[name] = self.escalated.get(name, 0) + 1
                ids = self.first_ids.setdefault(name, [])
                if len(ids) < _FIRST_IDS:
                    ids.append(sid)
            if row is not None:
                at = columns[name]
                if at and row[at]:
                    by = self.outcomes.setdefault(name, {}).setdefault(row[at], {})
                    by[action] = by.get(action, 0) + 1

    def merge(self, other: GateCounts) -> None:
        """Add ``other``, the next chunk of the same run."""
        for name, counts in other.actions.items():
            mine = self.actions.setdefault(name, {})
            for action, n in counts.items():
                mine[action] = mine.get(action, 0) + n
        for name, n in other.escalated.items():
            self.escalated[name] = self.escalated.get(name, 0) + n
        for name, ids in other.first_ids.items():
            mine_ids = self.first_ids.setdefault(name, [])
            mine_ids.extend(ids[: _FIRST_IDS - len(mine_ids)])
        for name, by_outcome in other.outcomes.items():
            mine_out = self.outcomes.setdefault(name, {})
            for outcome, counts in by_outcome.items():
                into = mine_out.setdefault(outcome, {})
                for action, n in counts.items():
                    into[action] = into.get(action, 0) + n
        self._columns = {}

    def reports(self) -> dict[str, GateReport] | None:
        """The report's ``gates``; None when no record carried any."""
        out: dict[str, GateReport] = {}
        for name, counts in self.actions.items():
            n = sum(counts.values())
            by_outcome = self.outcomes.get(name)
            labelled = sum(sum(c.values()) for c in by_outcome.values()) if by_outcome else 0
            agreed = sum(c.get(o, 0) for o, c in by_outcome.items()) if by_outcome else 0
            escalated = self.escalated.get(name, 0)
            out[name] = GateReport(
                n=n,
                actions=dict(sorted(counts.items())),
                escalated=escalated,
                escalated_share=escalated / n if n else None,
                labelled=labelled,
                agreed=agreed,
                accuracy=agreed / labelled if labelled else None,
                outcomes=(
                    {o: dict(sorted(c.items())) for o, c in sorted(by_outcome.items())}
                    if by_outcome
                    else None
                ),
                escalated_ids=tuple(self.first_ids.get(name, ())),
            )
        return out or None


def _verdicts(path: str, labels: Labels) -> dict[str, dict[str, bool]]:
    """Per question or gate, per labelled id: whether the run got it right."""
    out: dict[str, dict[str, bool]] = {}
    for item_id, record in decided_records(path):
        row = labels.rows.get(item_id)
        if row is None:
            continue
        answers = record.get("answers")
        gates = record.get("gates")
        for i, key in enumerate(labels.keys, 1):
            label = row[i]
            if not label:
                continue
            verdict: bool | None = None
            if isinstance(gates, Mapping) and isinstance(gates.get(key), Mapping):
                verdict = gates[key].get("action") == label
            elif isinstance(answers, Mapping) and key in answers:
                verdict = _right(answers[key], label)
            if verdict is not None:
                out.setdefault(key, {})[item_id] = verdict
    return out


def _paired(before: str, after: str, labels: Labels) -> dict[str, PairedCount]:
    a, b = _verdicts(before, labels), _verdicts(after, labels)
    out: dict[str, PairedCount] = {}
    for key in [k for k in labels.keys if k in a and k in b]:
        first, second = a[key], b[key]
        counts: Counter[tuple[bool, bool]] = Counter()
        fix_ids: list[str] = []
        break_ids: list[str] = []
        for item_id, right in first.items():
            later = second.get(item_id)
            if later is None:
                continue
            counts[(right, later)] += 1
            if not right and later and len(fix_ids) < _FIRST_IDS:
                fix_ids.append(item_id)
            if right and not later and len(break_ids) < _FIRST_IDS:
                break_ids.append(item_id)
        fixes, breaks = counts[(False, True)], counts[(True, False)]
        out[key] = PairedCount(
            compared=sum(counts.values()),
            both_right=counts[(True, True)],
            both_wrong=counts[(False, False)],
            fixes=fixes,
            breaks=breaks,
            mcnemar_p=mcnemar_p(fixes, breaks),
            fix_ids=tuple(fix_ids),
            break_ids=tuple(break_ids),
        )
    return out


def judge_section(
    runs: Sequence[str], labels: Labels | None, counted: GateCounts | None = None
) -> tuple[dict[str, GateReport] | None, dict[str, PairedCount] | None]:
    """The report's ``gates`` (of the last run, as its one counting pass found them in
    ``counted``; None when its records carry none) and ``paired`` (two runs and labels; else
    None: the one report that reads its runs again)."""
    gates = counted.reports() if counted is not None else None
    paired = _paired(runs[0], runs[1], labels) if len(runs) == 2 and labels is not None else None
    return gates, paired
