"""What ``check-criteria``'s meaning rules (issue 34) add to the shape lint, in-process: a
255-option choice and a directory of 200 question files, each read with the loader's checks only
(``lint_file``) and with every rule (``lintrun.check_file``). Run by ``make bench``.

Issue 34's target: the new rules add at most 20%. CPU times are printed, never asserted.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolnexus.cli.lintrun import Controls, check_file
from toolnexus.questionfile.load import lint_file

RUNS = 31
TARGET = 1.20


def _wide(folder: Path) -> list[Path]:
    options = "".join(
        f"      bin_{i}: the item is stored in warehouse bin number {i}, row {i % 17}\n"
        for i in range(254)
    )
    path = folder / "wide.yaml"
    path.write_text(
        "model: jev-1.13.0\nquestions:\n  bin:\n    type: choice\n"
        "    instructions: Which numbered warehouse bin holds the requested item?\n"
        f"    criteria:\n{options}      other: none of the bins above\n",
        encoding="utf-8",
    )
    return [path]


def _many(folder: Path) -> list[Path]:
    paths = []
    for n in range(200):
        path = folder / f"set{n:03}.yaml"
        path.write_text(
            "model: jev-1.13.0\nquestions:\n"
            f"  wants_refund_{n}:\n    type: noul\n"
            "    instructions: Is the customer asking for money to be returned?\n"
            f"  desk_{n}:\n    type: choice\n    instructions: Which desk should own this?\n"
            "    criteria:\n      billing: money that moved\n      shipping: a parcel\n"
            "      other: none of these desks\n"
            f"  urgency_{n}:\n    type: score\n    instructions: How fast does it need a human?\n"
            "    criteria:\n      - the customer waits\n      - the customer is blocked\n",
            encoding="utf-8",
        )
        paths.append(path)
    return paths


def _medians(*runs: Callable[[], object]) -> list[float]:
    """Each case's median CPU time over ``RUNS`` rounds, the cases taking turns within a round
    (a machine that slows down mid-run slows every case alike; a few ms per run is in the noise
    of one scheduler tick, so one median of a handful of runs moved by 0.3x between runs)."""
    for run in runs:
        run()  # warm: imports and the file cache
    times: list[list[float]] = [[] for _ in runs]
    for _ in range(RUNS):
        for run, spent in zip(runs, times, strict=True):
            start = time.process_time()  # CPU time: a busy machine's other work is not counted
            run()
            spent.append(time.process_time() - start)
    return [statistics.median(spent) for spent in times]


def main() -> None:
    controls = Controls()
    print(f"median of {RUNS} interleaved runs; shape lint alone vs every rule")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (("255-option choice", _wide), ("200 question files", _many)):
            folder = Path(tmp) / name.replace(" ", "-")
            folder.mkdir()
            paths = make(folder)
            shape, rules = _medians(
                lambda paths=paths: [lint_file(p) for p in paths],
                lambda paths=paths: [check_file(p, controls) for p in paths],
            )
            ratio = rules / shape
            verdict = "met" if ratio <= TARGET else "NOT met"
            print(
                f"  {name:<20} {shape * 1000:7.1f} ms -> {rules * 1000:7.1f} ms  "
                f"{ratio:4.2f}x  (target <= {TARGET:.2f}x: {verdict})"
            )


if __name__ == "__main__":
    main()
