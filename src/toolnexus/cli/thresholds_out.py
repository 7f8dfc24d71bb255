"""``report --target-precision P --write-thresholds FILE``: the ``--thresholds @FILE`` that
``eval``/``batch`` read, per noul question a consistent ``yes``/``no`` pair and per choice or
score question a ``min_confidence`` floor (issue 35 item 4), each floor chosen on bootstrap
resamples and measured out of bag (``calibration.oob``'s rule, ``report.floors``): what is
written is that out-of-bag choice, never the report's in-sample search. A floor whose
out-of-bag estimate misses the target is refused with the numbers on stderr and not written.
The bootstrap runs only here, when a target is asked."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .errors import CliError, one_line

if TYPE_CHECKING:
    from ..report.floors import GuardedFloor, GuardedPair
    from ..report.model import Report

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
) -> tuple[str, list[str]]:
    """The file's text, and one line per question left out (no cut-point reaches the target,
    or the out-of-bag guard refused it)."""
    lines, missing, target = _pair_lines(report, guards or {})
    more, refused = _floor_lines(floors or {})
    lines += more
    missing += refused
    if target is None and floors:
        target = next(iter(floors.values())).target
    head = [
        f"# toolnexus report --target-precision {target:g}: per noul question a yes/no pair, "
        "per choice or score question a min_confidence, each chosen on bootstrap resamples",
        "# (the median of the resamples' lowest floors reaching the target, stepped up at most to "
        "their 0.75 quantile until it holds out of bag), written only when it holds.",
        "# For this model and way of asking only (seed 000). Use: --thresholds @THIS_FILE",
        "questions:" if lines else "questions: {}",
    ]
    return "\n".join(head + lines) + "\n", missing


def write_thresholds(
    path: str, report: Report, run: str, labels: list[str], id_field: str, target: float
) -> None:
    """Guard, then write ``path``; a warning line on stderr per question left out."""
    from ..report.build import read_all_labels
    from ..report.floors import confidence_floors, guard_pairs

    pairs, floors = {}, {}
    for key, q in report.questions.items():
        pair = getattr(q.metrics, "thresholds", None)
        if pair is not None and pair.yes is not None and pair.no is not None:
            pairs[key] = pair.target_precision
    floors = {k: target for k, q in report.questions.items()
              if q.type in ("choice", "score") and q.labelled}  # fmt: skip
    # A run or labels file that cannot be read is a ReportError: the one boundary prints it.
    read = read_all_labels(labels, id_field) if pairs or floors else None
    guards = guard_pairs(run, read, pairs) if read is not None and pairs else {}
    found = confidence_floors(run, read, floors) if read is not None and floors else {}
    text, missing = thresholds_yaml(report, guards, found)
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    except OSError as e:
        raise CliError(f"{path}: cannot write: {e.strerror or type(e).__name__}") from None
    for line in missing:
        sys.stderr.write(f"toolnexus: warning: {path}: {one_line(line)}\n")
