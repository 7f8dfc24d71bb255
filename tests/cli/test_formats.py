"""Issue 8 §3: "--format is a click.Choice/Enum built from the renderer's table, so --help lists
the values and a wrong value is rejected the same way by every command"."""

from __future__ import annotations

from typing import get_args

import pytest

from clirun import error_line, run_cli
from toolnexus.cli.render import (
    RENDERERS,
    BatchFormat,
    CacheStatsResult,
    CanonicalResult,
    CanonicalView,
    DecisionFormat,
    DecisionResult,
    DiffFormat,
    DiffResult,
    LintFormat,
    LintResult,
    ReportFormat,
    ReportResult,
    StatsFormat,
)
from toolnexus.run.codecs import sinks


@pytest.mark.parametrize(
    ("choices", "result"),
    [
        pytest.param(DecisionFormat, DecisionResult, id="eval"),
        pytest.param(LintFormat, LintResult, id="check-criteria"),
        pytest.param(StatsFormat, CacheStatsResult, id="cache-stats"),
        pytest.param(CanonicalView, CanonicalResult, id="canonical"),
        pytest.param(ReportFormat, ReportResult, id="report"),
        pytest.param(DiffFormat, DiffResult, id="diff"),
    ],
)
def test_each_format_choice_is_its_renderer_table(choices: object, result: type) -> None:
    assert get_args(choices) == tuple(RENDERERS[result])


def test_batch_formats_are_its_choice() -> None:
    assert get_args(BatchFormat) == sinks()


@pytest.mark.parametrize(
    ("command", "choices"),
    [
        pytest.param(["eval", "questions/guard.yaml", "--state-text", "s"], DecisionFormat),
        pytest.param(["batch", "questions/guard.yaml", "in.jsonl"], BatchFormat),
        pytest.param(["check-criteria", "questions/"], LintFormat),
        pytest.param(["cache", "stats"], StatsFormat),
        pytest.param(["report", "run.jsonl"], ReportFormat),
        pytest.param(["diff", "a.yaml", "b.yaml"], DiffFormat),
    ],
    ids=lambda v: v[0] if isinstance(v, list) else None,
)
def test_a_wrong_format_is_rejected_the_same_way(command: list[str], choices: object) -> None:
    ran = run_cli(*command, "--format", "xml")
    allowed = ", ".join(repr(c) for c in get_args(choices))
    path = " ".join(command[:2] if command[0] == "cache" else command[:1])
    assert ran.code == 2
    assert ran.out == ""
    assert error_line(ran.stderr) == (
        f"Invalid value for '--format': 'xml' is not one of {allowed}; "
        f"see 'toolnexus {path} --help'"
    )


@pytest.mark.parametrize(
    ("command", "choices"),
    [
        pytest.param(["eval"], DecisionFormat),
        pytest.param(["batch"], BatchFormat),
        pytest.param(["check-criteria"], LintFormat),
        pytest.param(["cache", "stats"], StatsFormat),
        pytest.param(["report"], ReportFormat),
        pytest.param(["diff"], DiffFormat),
    ],
    ids=lambda v: v[0] if isinstance(v, list) else None,
)
def test_help_lists_the_values(command: list[str], choices: object) -> None:
    ran = run_cli(*command, "--help")
    assert ran.code == 0
    assert "<" + "|".join(get_args(choices)) + ">" in ran.out
