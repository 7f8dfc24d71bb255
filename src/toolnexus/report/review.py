"""A review queue (issue 35 item 6): ``report RUN --review-out FILE`` writes the records a
person should look at as a CSV they can open, whose filled copy is a ``--labels`` file.

A record is queued when a gate escalated it (or, with ``--gates FILE``, held it: any action but
the gate's default), when an answer's band is uncertain, or when an answer is near-uniform or
invalid. Columns: ``id``; ``#why``; per question ``#KEY`` (the answer in words); per gate
``#GATE action`` and ``#GATE reason``; then one EMPTY column per question key and per gate name,
for the label (the gate's: the action the record should get). Columns named ``#...`` are
comments that ``--labels`` skips, so ``report RUN --labels run-labels.csv --labels review.csv``
reads the filled file as it is and sends nothing.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from typing import Any

from .judged import decided_records, label_reading
from .labels import COMMENT_PREFIX

__all__ = ["queue_reasons", "write_review"]

_QUEUED_FLAGS = ("uncertain", "near-uniform", "invalid")


def _said(answer: Any) -> str:
    """An answer in a few words: ``0.55 (uncertain)``, ``billing 0.62``, ``high 0.9``."""
    if not isinstance(answer, Mapping):
        return ""
    band = f" ({answer['band']})" if isinstance(answer.get("band"), str) else ""
    reading = label_reading(answer)
    return reading.said(answer, band) if reading is not None else str(answer.get("type") or "")


def queue_reasons(record: Mapping[str, Any], defaults: Mapping[str, str]) -> list[str]:
    """Why the review queue holds ``record`` (``[]``: it does not): a gate escalated it, or held
    it (an action but its default, for the gates of ``defaults``), or an answer is uncertain,
    near-uniform or invalid. ``batch --emit-cases`` picks its cases with it."""
    reasons = []
    for name, g in (record.get("gates") or {}).items():
        if not isinstance(g, Mapping):
            continue
        if g.get("escalated") is True:
            reasons.append(f"{name} escalated")
        elif name in defaults and g.get("action") != defaults[name]:
            reasons.append(f"{name} held")
    for key, a in (record.get("answers") or {}).items():
        flags = a.get("flags") if isinstance(a, Mapping) else None
        for flag in _QUEUED_FLAGS:
            if isinstance(flags, list) and flag in flags:
                reasons.append(f"{key} {flag}")
    return reasons


def write_review(run: str, path: str, defaults: Mapping[str, str] | None = None) -> int:
    """Write the queue of ``run`` to ``path``; the number of records queued. ``defaults``: per
    gate, its default action (``--gates FILE``), so a held record is queued too."""
    rows: list[list[str]] = []
    keys: list[str] = []
    gates: list[str] = []
    for item_id, record in decided_records(run):
        answers = record.get("answers")
        answers = answers if isinstance(answers, Mapping) else {}
        got = record.get("gates")
        got = got if isinstance(got, Mapping) else {}
        if not keys and not gates:
            keys, gates = list(answers), list(got)
        why = queue_reasons(record, defaults or {})
        if not why:
            continue
        row = [item_id, "; ".join(why)]
        row += [_said(answers.get(k)) for k in keys]
        for name in gates:
            g = got.get(name)
            g = g if isinstance(g, Mapping) else {}
            row += [str(g.get("action", "")), str(g.get("reason", ""))]
        row += [""] * (len(keys) + len(gates))
        rows.append(row)
    c = COMMENT_PREFIX
    header = ["id", f"{c}why", *(f"{c}{k}" for k in keys)]
    header += [f"{c}{name} {field}" for name in gates for field in ("action", "reason")]
    header += [*keys, *gates]
    from ..records import whole_file

    # Whole or not at all (issue 42 item 2): an empty queue is its header.
    with whole_file(path, newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(header)
        out.writerows(rows)
    return len(rows)
