"""Decode cost per answer before and after the consistency flags (issue 33): a response body
decoded (``parse_decision``) and rendered as the record every format prints from
(``decision_record``), with ``consistency.consistency_flags`` in place ("after") and replaced by
a function returning no flag ("before"), alternating, median of 3 runs each, in one process.
The answers are the synthetic server's shapes (one noul, one 3-option choice, one 3-level
score, probabilities in hundredths). It asserts nothing: the figures depend on the machine.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from _common import QUESTIONS, states
from toolnexus.core.decision import parse_decision
from toolnexus.core.questions import normalize_questions
from toolnexus.records import decision as records
from toolnexus.serve.synthetic import synthesize

DECISIONS = 10_000
RUNS = 3


def bodies() -> list[dict[str, Any]]:
    return [
        synthesize({"model": "jev-latest", "state": s, "questions": QUESTIONS})
        for s in states(DECISIONS)
    ]


def measure(responses: list[dict[str, Any]]) -> float:
    """CPU microseconds per answer to decode and render every response (CPU time: the
    machine is shared, and a neighbour's burst would land in a wall-clock figure)."""
    qs = normalize_questions(QUESTIONS)
    started = time.process_time()
    for body in responses:
        records.decision_record(parse_decision(body, qs), qs)
    answers = sum(len(b["answers"]) for b in responses)
    return (time.process_time() - started) / answers * 1e6


def no_flags(answer: Any, *, calibrated: bool = True) -> tuple[str, ...]:
    """The records' consistency check as it was before issue 33: none."""
    return ()


def main() -> None:
    responses = bodies()
    real = records.consistency_flags
    runs: dict[str, list[float]] = {"before": [], "after": []}
    for _ in range(RUNS):
        records.consistency_flags = no_flags
        runs["before"].append(measure(responses))
        records.consistency_flags = real
        runs["after"].append(measure(responses))
    before, after = (statistics.median(runs[k]) for k in ("before", "after"))
    print(f"decode + record per answer, without the consistency flags: {before:6.2f} us")
    print(f"decode + record per answer, with the consistency flags:    {after:6.2f} us")
    print(f"  with / without: {after / before:.2f}x (median of {RUNS} runs each)", flush=True)


if __name__ == "__main__":
    main()
