"""Where ../shared lives, and small readers for its fixtures. Import as `from paths import ...`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
#: The cross-language fixtures live beside the repo, in ../shared (read-only in CI).
SHARED = REPO.parent / "shared"
CONFORMANCE = SHARED / "conformance"
RECORDINGS_LIVE = SHARED / "recordings-live"

needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(),
    reason=f"the shared fixtures folder {SHARED} is absent (it sits beside the repo checkout)",
)


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def conformance_files() -> list[Path]:
    return sorted(CONFORMANCE.glob("*.json")) if CONFORMANCE.is_dir() else []


def live_captures() -> list[Path]:
    return sorted(RECORDINGS_LIVE.glob("*.json")) if RECORDINGS_LIVE.is_dir() else []
