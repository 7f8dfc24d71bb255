"""The Python examples of seed 001, saved verbatim, run unmodified in a subprocess and print
their ok: lines ('Their Python examples must run unmodified against our package')."""

from __future__ import annotations

import subprocess
import sys

import pytest

from paths import TESTS

HERE = TESTS / "seed_examples"

EXPECTED = {
    "seed001_example1_all_three_types.py": "ok: billing | urgency 0.49",
    "seed001_example2_limits_and_bytes.py": (
        "ok: both limits named their key; absent != empty; rubric order preserved"
    ),
    "seed001_example3_degenerate.py": "ok: 1 warning for department",
}


@pytest.mark.parametrize("name", sorted(EXPECTED), ids=lambda n: n.removesuffix(".py"))
def test_seed_example_runs_unmodified(name: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(HERE / name)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == EXPECTED[name]


def test_every_saved_example_is_checked() -> None:
    assert {p.name for p in HERE.glob("*.py")} == set(EXPECTED)
