"""Where the suite's fixtures live, and small readers for them. Import as `from paths import ...`.

The cross-language fixtures, live captures, seed texts and wire reference are COPIES of the
project's shared folder, kept in ``tests/fixtures/<name>`` (one folder per shared folder, same
name) so that a clone on its own runs every test. ``tests/fixtures/README.md`` says where each
came from; ``tests/house/test_fixtures.py`` checks the copies against their manifest always, and
against ``../shared`` byte for byte whenever that folder sits beside the checkout.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
FIXTURES = TESTS / "fixtures"
CONFORMANCE = FIXTURES / "conformance"
RECORDINGS_LIVE = FIXTURES / "recordings-live"
SEEDS = FIXTURES / "seeds"
REFERENCE = FIXTURES / "reference"

#: The shared folders copied into tests/fixtures/, each under its own name.
COPIED = ("conformance", "recordings-live", "reference", "seeds")
#: ``sha256  <name>/<file>`` for every copied file, as `sha256sum` writes it.
MANIFEST = FIXTURES / "SHA256SUMS"
#: The documentation: the README, CONTRIBUTING.md and the site's pages (issue 46).
DOC_PAGES = ("README.md", "CONTRIBUTING.md", "docs")
#: Where the copies came from: the shared folder beside the checkout, when there is one.
SHARED = REPO.parent / "shared"


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def doc_files() -> list[Path]:
    """Every page of the documentation: the README, CONTRIBUTING.md, then ``docs/**/*.md``."""
    return [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").rglob("*.md"))]


def docs_text() -> str:
    """Every page of the documentation, one after another: what a test that checks "the
    documentation says X" reads, wherever the page that says it is."""
    return "\n".join(p.read_text(encoding="utf-8") for p in doc_files())


def conformance_files() -> list[Path]:
    return sorted(CONFORMANCE.glob("*.json"))


def live_captures() -> list[Path]:
    return sorted(RECORDINGS_LIVE.glob("*.json"))


def seed_text(number: str) -> str:
    """The text of seed ``number`` (e.g. "001"): exactly one file ``<number>_*.txt``."""
    (path,) = SEEDS.glob(f"{number}_*.txt")
    return path.read_text(encoding="utf-8")


def tree_files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (recursively), keyed by its POSIX path relative to ``root``."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def copied_files() -> dict[str, bytes]:
    """Every copied file, keyed ``<name>/<relative path>`` as in the manifest."""
    return {
        f"{name}/{rel}": data
        for name in COPIED
        for rel, data in tree_files(FIXTURES / name).items()
    }


def manifest_text(files: dict[str, bytes]) -> str:
    return "".join(
        f"{hashlib.sha256(data).hexdigest()}  {key}\n" for key, data in sorted(files.items())
    )
