"""Start-up cost of the CLI, as ratios to ``python -c "import yaml"`` (the floor any YAML-reading
command pays). Median of RUNS fresh processes each; run by ``make bench``.

Wall-clock numbers are printed, never asserted: they depend on the machine.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RUNS = 15

CASES = {
    'python -c "import yaml"': [sys.executable, "-c", "import yaml"],
    "toolnexus --version": [str(BIN / "toolnexus"), "--version"],
    "toolnexus check-criteria questions/": [str(BIN / "toolnexus"), "check-criteria", "questions/"],
    "toolnexus canonical questions/guard.yaml": [
        str(BIN / "toolnexus"),
        "canonical",
        "questions/guard.yaml",
    ],
}

#: Issue 8 §7: the most each may cost, as a multiple of ``python -c "import yaml"``.
TARGETS = {
    "toolnexus --version": 1.0,
    "toolnexus check-criteria questions/": 3.0,
    "toolnexus canonical questions/guard.yaml": 3.0,
}


def medians(cases: dict[str, list[str]]) -> dict[str, float]:
    """Median wall time of each case over RUNS fresh processes. The cases take turns, one run
    each per round, so a machine whose load drifts during the bench weighs on every case alike
    (run one after the other, a busy minute would land on one case only)."""
    for cmd in cases.values():
        subprocess.run(cmd, cwd=REPO, capture_output=True, check=True)  # warm the file cache
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(RUNS):
        for name, cmd in cases.items():
            start = time.perf_counter()
            subprocess.run(cmd, cwd=REPO, capture_output=True, check=True)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    result = medians(CASES)
    floor = result['python -c "import yaml"']
    width = max(map(len, result))
    print(f"median of {RUNS} runs each, the cases interleaved")
    for name, seconds in result.items():
        ratio = seconds / floor
        target = TARGETS.get(name)
        verdict = "" if target is None else f"  (target <= {target:.1f}x: "
        verdict += "" if target is None else ("met)" if ratio <= target else "NOT met)")
        print(f"  {name:<{width}}  {seconds * 1000:7.1f} ms  {ratio:5.2f}x{verdict}")


if __name__ == "__main__":
    main()
