"""Shared test fixtures: where ../shared lives, and isolation of env vars and cache dirs."""

from __future__ import annotations

import json
import os
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


@pytest.fixture(autouse=True)
def _isolate_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test sees the developer's credentials, TOOLNEXUS_* settings or cache directory."""
    for name in list(os.environ):
        if name.startswith("TOOLNEXUS_") or name.endswith("_API_KEY"):
            monkeypatch.delenv(name, raising=False)
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("TOOLNEXUS_CACHE_DIR", str(cache))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.setenv("NO_COLOR", "1")
