"""The copies in tests/fixtures/ (issue 8: "Copy the conformance fixtures, the live captures and
the seed examples into the repository ... When ../shared is present, one test checks that the
copies still equal it, byte for byte"), and the suite's skip policy ("a skip anywhere fails the
run unless it names a platform reason")."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from paths import (
    COPIED,
    FIXTURES,
    MANIFEST,
    REPO,
    SHARED,
    copied_files,
    manifest_text,
    seed_text,
    tree_files,
)
from suite_policy import note

SYNC = "run `.venv/bin/python tests/fixtures/sync.py` and review the diff"


def test_copies_equal_their_manifest() -> None:
    """Every copied file is listed in SHA256SUMS with its sha256, and every listed file exists."""
    listed = {}
    for line in MANIFEST.read_text(encoding="utf-8").splitlines():
        digest, key = line.split("  ", 1)
        listed[key] = digest
    copies = {key: hashlib.sha256(data).hexdigest() for key, data in copied_files().items()}
    assert sorted(set(listed) - set(copies)) == [], "listed in SHA256SUMS but missing"
    assert sorted(set(copies) - set(listed)) == [], "copied but not in SHA256SUMS"
    changed = sorted(key for key in copies if copies[key] != listed[key])
    assert changed == [], f"edited in tests/fixtures/ (copies are never edited; {SYNC})"
    assert MANIFEST.read_text(encoding="utf-8") == manifest_text(copied_files())


def test_copies_equal_shared_byte_for_byte(request: pytest.FixtureRequest) -> None:
    """With ../shared beside the checkout: each copied folder equals its source byte for byte,
    no file missing on either side. Without it (a clone on its own) there is nothing to compare
    against: the copies are held to their manifest (the test above), and the run says so."""
    if not SHARED.is_dir():
        note(
            request.config, "no ../shared beside the checkout: tests/fixtures/ held to its manifest"
        )
        return
    problems = []
    for name in COPIED:
        source = SHARED / name
        assert source.is_dir(), f"{source} is gone: the copies have no source ({SYNC})"
        want, have = tree_files(source), tree_files(FIXTURES / name)
        problems += [f"{name}/{rel}: only in ../shared" for rel in sorted(set(want) - set(have))]
        problems += [f"{name}/{rel}: only in the copy" for rel in sorted(set(have) - set(want))]
        problems += [
            f"{name}/{rel}: bytes differ"
            for rel in sorted(set(want) & set(have))
            if want[rel] != have[rel]
        ]
    assert problems == [], f"tests/fixtures/ drifted from ../shared ({SYNC})"
    note(request.config, "tests/fixtures/ equals ../shared byte for byte")


@pytest.mark.parametrize(
    "example",
    sorted(p.name for p in (REPO / "tests" / "seed_examples").glob("*.py")),
    ids=lambda n: n.removesuffix(".py"),
)
def test_seed_example_is_verbatim_in_seed_001(example: str) -> None:
    """tests/seed_examples/README.md: 'copied verbatim (not a byte changed)'; the file's text
    (apart from the end-of-file newline) appears as-is in seed 001."""
    text = (REPO / "tests" / "seed_examples" / example).read_text(encoding="utf-8")
    assert text.rstrip("\n") in seed_text("001")


#: A path built to the shared folder: a `/` joining the string shared, or a string literal that
#: starts with ../shared (only paths.py may build one).
_SHARED_PATH = re.compile(r"""/\s*["']shared["']|["']\.\./shared""")


def test_no_test_reads_outside_the_repository() -> None:
    """Tests, benches and build scripts read tests/fixtures/, never the shared folder itself
    (only paths.py names it, for this file's comparison and for sync.py, which refreshes)."""
    offenders = [
        path.relative_to(REPO).as_posix()
        for folder in ("tests", "bench", "recordings", "src")
        for path in sorted((REPO / folder).rglob("*.py"))
        if path != REPO / "tests" / "paths.py" and _SHARED_PATH.search(path.read_text("utf-8"))
    ]
    assert offenders == []


# --- the skip policy, run on a throwaway suite ---------------------------------------------------

SUITE = """
import sys
import pytest

def test_runs():
    pass

@pytest.mark.skipif(True, reason="platform: not this OS")
def test_platform_skip():
    pass

@pytest.mark.skipif(SKIP_PLAIN, reason="the fixtures folder is absent")
def test_plain_skip():
    pass
"""


def _run_suite(tmp_path: Path, *, plain_skip: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "test_x.py").write_text(
        SUITE.replace("SKIP_PLAIN", str(plain_skip)), encoding="utf-8"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "suite_policy", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_skip_without_a_platform_reason_fails_the_run(tmp_path: Path) -> None:
    """Issue 8: 'a skip anywhere fails the run unless it names a platform reason'."""
    done = _run_suite(tmp_path, plain_skip=True)
    assert done.returncode == 1, done.stdout
    assert "test_x.py::test_plain_skip: the fixtures folder is absent" in done.stdout
    assert "test_platform_skip" not in done.stdout.split("skips without a platform reason")[1]


def test_a_platform_skip_alone_passes(tmp_path: Path) -> None:
    done = _run_suite(tmp_path, plain_skip=False)
    assert done.returncode == 0, done.stdout
    assert "1 passed, 2 skipped" not in done.stdout and "2 passed, 1 skipped" in done.stdout
