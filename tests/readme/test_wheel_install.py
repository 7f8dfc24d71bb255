"""Issue 46 acceptance: "A new user, from the first screen alone, runs ``pip install .`` and
``toolnexus eval questions/support-triage.yaml examples/states/support-ticket.txt --replay
recordings/`` and gets a decision offline (tested in make test-slow against a wheel built from
the checkout)."

The README's ``pip install .`` line is the one thing its runner cannot run (it would install
into the suite's own environment); this test does it in a fresh venv instead, with pip's index
switched off: the dependencies come from the wheelhouse ``make install`` fills
(``.venv/wheelhouse``), so it never talks to the network.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from paths import REPO

WHEELHOUSE = Path(sys.prefix) / "wheelhouse"
EVAL = (
    "toolnexus eval questions/support-triage.yaml examples/states/support-ticket.txt"
    " --replay recordings/"
)


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env |= {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(WHEELHOUSE), "PIP_CONFIG_FILE": os.devnull}
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600, **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_wheel_of_the_checkout_installs_offline_and_the_readme_eval_decides(
    tmp_path: Path,
) -> None:
    assert (WHEELHOUSE / ".built").exists(), f"{WHEELHOUSE}: make install builds it"
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "pip install ." in readme and EVAL in readme, "the README's first screen names both"
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)])
    (wheel,) = dist.glob("toolnexus_classifier-*.whl")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)])
    args = EVAL.split()
    done = _run([str(venv / "bin" / args[0]), *args[1:], "--format", "json"], cwd=REPO)
    assert '"department"' in done.stdout and '"billing"' in done.stdout, done.stdout
