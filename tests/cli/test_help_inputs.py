"""Issue 31 item 17: "`batch --help` and `report --help` do not list Parquet/Arrow inputs"."""

from __future__ import annotations

import pytest

from clirun import run_cli


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(
    ("command", "words"),
    [
        pytest.param("batch", ("Parquet or Arrow IPC file", ".feather"), id="batch-inputs"),
        pytest.param("report", ("CSV or Parquet);", "JSONL, CSV or Parquet:"), id="report-runs"),
    ],
)
def test_help_lists_parquet_and_arrow_inputs(
    command: str, words: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31 item 17: the --help of batch and report name the Parquet/Arrow inputs they read."""
    monkeypatch.setenv("COLUMNS", "200")
    ran = run_cli(command, "--help")
    assert ran.code == 0, ran.stderr
    text = _flat(ran.out)
    for word in words:
        assert word in text, text
