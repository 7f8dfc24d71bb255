"""``toolnexus report`` against issue 17's findings: each test quotes the item it holds to
and failed before its fix.

- item 2: "A structured level's label is its ``label`` everywhere a label is shown, accepted
  or matched" (seed 003: "label is always a string and comes from the question's levels");
- item 4: "Spent and cached usage are separate figures everywhere";
- item 6: "``report`` to a full disk names the target ``None``";
- item 13: "``--fail-on met: near-uniform`` gives no count and no ids";
- item 3: "Audit every place wire or file data reaches ``int()``/``float()``".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clirun import error_line, run_cli

LEGEND = {
    "0": {"label": "low", "description": "it can wait"},
    "1": {"label": "high", "description": "today"},
    "2": {"label": "critical", "description": "right now"},
}
PROBS = (
    {"0": 0.6, "1": 0.3, "2": 0.1},
    {"0": 0.2, "1": 0.5, "2": 0.3},
    {"0": 0.1, "1": 0.2, "2": 0.7},
)


def _record(i: int, *, cached: bool = False, near_uniform: bool = False) -> dict[str, Any]:
    level = i % 3
    probs = PROBS[level]
    return {
        "id": f"s{i}",
        "model": "m",
        "calibrated": True,
        "cached": cached,
        "usage": {"input_tokens": 100, "output_tokens": 10, "cost": None},
        "answers": {
            "urgency": {
                "type": "score",
                "score": 1.0,
                "legend": LEGEND,
                "probabilities": probs,
                "confidence": max(probs.values()),
                "level": level,
                "label": LEGEND[str(level)]["label"],
                "band": "yes",
                "flags": [],
            },
            "desk": {
                "type": "choice",
                "choice": "a",
                "probabilities": {"a": 0.34, "b": 0.33, "c": 0.33},
                "confidence": 0.34,
                "near_uniform": near_uniform,
                "band": "uncertain",
                "flags": ["near-uniform", "uncertain"] if near_uniform else ["uncertain"],
            },
        },
        "flags": [],
        "invalid": None,
    }


def _write_run(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def structured(tmp_path: Path) -> Path:
    _write_run(tmp_path / "run.jsonl", [_record(i) for i in range(6)])
    (tmp_path / "by-index.csv").write_text(
        "id,urgency\n" + "".join(f"s{i},{i % 3}\n" for i in range(6)), encoding="utf-8"
    )
    (tmp_path / "by-label.csv").write_text(
        "id,urgency\n" + "".join(f"s{i},{('low', 'high', 'critical')[i % 3]}\n" for i in range(6)),
        encoding="utf-8",
    )
    return tmp_path


# --- item 2: structured levels -------------------------------------------------------------


def test_a_structured_level_is_matched_by_its_label(structured: Path) -> None:
    """Issue 17 item 2: "With labels ``urgency=critical``, ``report`` stops"; a structured
    level's label is its ``label`` where a label is accepted or matched."""
    ran = run_cli(
        "report", str(structured / "run.jsonl"), "--labels", str(structured / "by-label.csv"),
        "--format", "json",
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    metrics = json.loads(ran.out)["questions"]["urgency"]["metrics"]
    assert metrics["accuracy"] == 1.0


@pytest.mark.parametrize("fmt", [pytest.param(f, id=f) for f in ("json", "table", "html")])
def test_a_structured_level_is_shown_by_its_label(structured: Path, fmt: str) -> None:
    """Issue 17 item 2: "the table, the JSON (``"label": "{'description': …}"``) and the HTML
    show Python dict text"; seed 003: "label is always a string and comes from the question's
    levels"."""
    pytest.importorskip("matplotlib") if fmt == "html" else None
    ran = run_cli(
        "report", str(structured / "run.jsonl"), "--labels", str(structured / "by-index.csv"),
        "--format", fmt,
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    assert "description" not in ran.out and "{'" not in ran.out and "{&#x27;" not in ran.out
    if fmt == "json":
        levels = json.loads(ran.out)["questions"]["urgency"]["distribution"]["levels"]
        assert [v["label"] for v in levels.values()] == ["low", "high", "critical"]
    if fmt == "table":
        # the level rows keep their n and share columns
        assert any(
            line.split()[:4] == ["2", "critical", "2", "33%"] for line in ran.out.splitlines()
        )


# --- item 6: a full disk --------------------------------------------------------------------


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("fmt", [pytest.param(f, id=f) for f in ("json", "table")])
def test_a_full_disk_on_stdout_names_stdout(structured: Path, fmt: str) -> None:
    """Issue 17 item 6: "``report`` to a full disk names the target ``None``
    (``toolnexus report run.jsonl > /dev/full``)"; one line, exit 2 as for every command."""
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "toolnexus", "report", str(structured / "run.jsonl"),
             "--format", fmt],
            stdout=full, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=120,
        )  # fmt: skip
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert error_line(err) == "stdout: cannot write: No space left on device"


# --- item 4: cached answers are not spent tokens --------------------------------------------


@pytest.fixture
def half_cached(tmp_path: Path) -> Path:
    return _write_run(tmp_path / "run.jsonl", [_record(i, cached=i < 4) for i in range(6)])


def test_cached_usage_is_a_separate_figure_in_the_json(half_cached: Path) -> None:
    """Issue 17 item 4: "Cached answers are counted as spent tokens ... and ``report`` counts
    them the same. Spent and cached usage are separate figures everywhere"."""
    ran = run_cli("report", str(half_cached), "--format", "json")
    assert ran.code == 0, ran.stderr
    run = json.loads(ran.out)["runs"][0]
    assert run["usage"] == {
        "input_tokens": 200, "output_tokens": 20, "cost": None, "cost_reported": 0,
    }  # fmt: skip
    assert run["cached_records"] == 4
    assert run["cached_usage"] == {
        "input_tokens": 400, "output_tokens": 40, "cost": None, "cost_reported": 0,
    }  # fmt: skip


@pytest.mark.parametrize("fmt", [pytest.param(f, id=f) for f in ("table", "html")])
def test_cached_usage_is_a_separate_figure_in_the_table_and_html(
    half_cached: Path, fmt: str
) -> None:
    """Issue 17 item 4: spent and cached usage are separate figures."""
    if fmt == "html":
        pytest.importorskip("matplotlib")
    ran = run_cli("report", str(half_cached), "--format", fmt)
    assert ran.code == 0, ran.stderr
    assert "tokens 200 in / 20 out" in ran.out or "200 in / 20 out" in ran.out
    assert "4 cached records (400 in / 40 out, not spent)" in ran.out


def test_a_cached_field_that_is_not_a_boolean_is_refused(tmp_path: Path) -> None:
    """A field ``toolnexus batch`` never writes is refused in words, at its line."""
    record = _record(0)
    record["cached"] = "yes"
    run = _write_run(tmp_path / "run.jsonl", [record])
    ran = run_cli("report", str(run), "--format", "json")
    assert ran.code == 2
    assert (
        error_line(ran.stderr) == f"{run}:1: not a batch record: cached is 'yes', not true or false"
    )


# --- item 13: --fail-on names the count and the first ids -----------------------------------


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        pytest.param(
            "near-uniform>0.1",
            "near-uniform>0.1 (desk 0.4286 [3 of 7 answers; first ids s0, s3, s6])",
            id="a-flag-share",
        ),
        pytest.param(
            "desk.uncertain>=1",
            "desk.uncertain>=1 (desk 1 [7 of 7 answers; first ids s0, s1, s2, s3, s4])",
            id="five-ids-at-most",
        ),
        pytest.param(
            "errors>0",
            "errors>0 (urgency 1 [first ids bad], desk 1 [first ids bad])",
            id="error-records",
        ),
        pytest.param("urgency.mean_confidence>0", None, id="unknown-name-is-refused"),
    ],
)
def test_fail_on_names_the_count_and_the_first_ids(
    tmp_path: Path, condition: str, expected: str | None
) -> None:
    """Issue 17 item 13: "``--fail-on met: near-uniform`` gives no count and no ids: name the
    count per condition and the first ids"."""
    records: list[dict[str, Any]] = [_record(i, near_uniform=i % 3 == 0) for i in range(7)]
    records.append({"id": "bad", "error": {"code": "backend_http", "message": "HTTP 500"}})
    run = _write_run(tmp_path / "run.jsonl", records)
    ran = run_cli("report", str(run), "--format", "json", "--fail-on", condition)
    if expected is None:
        assert ran.code == 2 and "unknown name" in error_line(ran.stderr)
        return
    assert ran.code == 1, ran.stderr
    assert error_line(ran.stderr) == f"--fail-on met: {expected}"


# --- item 3: numbers of thousands of digits -------------------------------------------------


def _digits(n: int) -> str:
    return "9" * n


@pytest.mark.parametrize(
    ("field", "value", "copies"),
    [
        pytest.param(
            '"input_tokens": 100',
            f'"input_tokens": {_digits(4300)}',
            2,
            id="token-counts-summed-past-printable",
        ),
        pytest.param(
            '"output_tokens": 10',
            f'"output_tokens": {_digits(17)}',
            1,
            id="a-token-count-past-2**53",
        ),
        pytest.param(
            '"input_tokens": 100',
            f'"input_tokens": {_digits(5000)}',
            1,
            id="a-token-count-json-cannot-read",
        ),
        pytest.param('"id": "s0"', f'"id": {_digits(5000)}', 1, id="an-id"),
        pytest.param('"level": 0', f'"level": {_digits(5000)}', 1, id="a-level"),
        pytest.param('"score": 1.0', f'"score": 1{"0" * 400}.5', 1, id="a-score-past-float"),
    ],
)
def test_a_number_of_thousands_of_digits_is_one_located_line(
    tmp_path: Path, field: str, value: str, copies: int
) -> None:
    """Issue 17 item 3: "a number of thousands of digits ... gives a Python ValueError
    traceback from int() ... Audit every place wire or file data reaches int()/float()": one
    line naming file:line, never a traceback. The two token-count cases failed before the fix;
    the others are the audit's record of the paths that already held."""
    line = json.dumps(_record(0))
    assert field in line
    lines = [line.replace(field, value).replace('"s0"', f'"s{i}"') for i in range(copies)]
    run = tmp_path / "run.jsonl"
    run.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
    for fmt in ("json", "table"):
        ran = run_cli("report", str(run), "--format", fmt)
        assert ran.code == 2, ran.stderr
        assert error_line(ran.stderr).startswith(f"{run}:")


def test_reported_costs_are_totalled_exactly_never_as_a_float_sum() -> None:
    """Issue 20 item 4: the summary and report total what the server charged, in Decimal:
    0.1 + 0.2 reported is 0.3, not 0.30000000000000004."""
    from toolnexus.report.usage import Usage

    usage = Usage()
    for cost in (0.1, 0.2):
        usage.add({"input_tokens": 1, "output_tokens": 1, "cost": cost})
    assert usage.summary().cost == 0.3
