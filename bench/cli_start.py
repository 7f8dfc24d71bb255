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
}


def median_seconds(cmd: list[str]) -> float:
    subprocess.run(cmd, cwd=REPO, capture_output=True, check=True)  # warm the file cache
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    medians = {name: median_seconds(cmd) for name, cmd in CASES.items()}
    floor = medians['python -c "import yaml"']
    width = max(map(len, medians))
    print(f"median of {RUNS} runs each")
    for name, seconds in medians.items():
        print(f"  {name:<{width}}  {seconds * 1000:7.1f} ms  {seconds / floor:5.2f}x")


if __name__ == "__main__":
    main()
