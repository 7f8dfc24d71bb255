"""``toolnexus diff OLD NEW`` (issue 12): "diff tests for each kind of change above, including
REV:path in a temporary git repo". Each case edits one base question set one way and checks
the change's kind, whether it is called out as breaking, the exit code (0 equal canonical
bytes, 1 differ, 2 error) and what still applies."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from clirun import error_line, run_cli

BASE = """\
model: jev-1.13.0
questions:
  refund:
    type: noul
    instructions: Is the customer asking for money back?
  desk:
    type: choice
    instructions: Which desk should own this ticket?
    criteria:
      billing: own it here when money moved
      shipping: own it here when a parcel is late
      technical: own it here when the product errors
  urgency:
    type: score
    instructions: How fast does this need a human?
    criteria:
      - waiting
      - {label: chasing, description: will chase today}
      - blocked
"""


def _diff(tmp_path: Path, new_text: str, *extra: str) -> tuple[int, dict[str, Any]]:
    old = tmp_path / "old.yaml"
    new = tmp_path / "new.yaml"
    old.write_text(BASE, encoding="utf-8")
    new.write_text(new_text, encoding="utf-8")
    ran = run_cli("diff", str(old), str(new), "--format", "json", *extra)
    assert ran.code in (0, 1), ran.stderr
    return ran.code, json.loads(ran.out)


def _kinds(data: dict[str, Any]) -> list[tuple[str | None, str, bool]]:
    return [(c["key"], c["kind"], c["breaking"]) for c in data["changes"]]


CASES = [
    pytest.param(
        BASE.replace("model: jev-1.13.0", "model: jev-1.14.0"),
        [(None, "model", False)],
        {"recordings": True, "cached_decisions": False},
        id="model",
    ),
    pytest.param(
        BASE + "  spam:\n    type: noul\n    instructions: Is this spam?\n",
        [("spam", "question_added", False)],
        {"recordings": False, "cached_decisions": False},
        id="question-added",
    ),
    pytest.param(
        BASE.split("  desk:")[0] + "  urgency:" + BASE.split("  urgency:")[1],
        [("desk", "question_removed", False)],
        {"recordings": False, "cached_decisions": False},
        id="question-removed",
    ),
    pytest.param(
        BASE.replace("asking for money back?", "asking for a refund?"),
        [("refund", "instructions", False)],
        None,
        id="instructions",
    ),
    pytest.param(
        BASE.replace("money back?\n", "money back?\n    criteria: {}\n"),
        [("refund", "noul_criteria", False)],
        None,
        id="noul-criteria-absent-to-empty",
    ),
    pytest.param(
        BASE.replace(
            "  billing: own", "  legal: own it here when a lawyer writes\n      billing: own"
        ),
        [("desk", "option_added", False)],
        None,
        id="option-added",
    ),
    pytest.param(
        BASE.replace("      shipping: own it here when a parcel is late\n", ""),
        [("desk", "option_removed", False)],
        None,
        id="option-removed",
    ),
    pytest.param(
        BASE.replace("when money moved", "when a charge is wrong"),
        [("desk", "option_redescribed", False)],
        None,
        id="option-redescribed",
    ),
    pytest.param(
        BASE.replace("shipping: own", "parcels: own"),
        [("desk", "option_renamed", True)],
        None,
        id="option-renamed-is-breaking",
    ),
    pytest.param(
        BASE.replace("      - waiting\n", "").replace(
            "      - blocked\n", "      - blocked\n      - waiting\n"
        ),
        [("urgency", "levels_reordered", True)],
        None,
        id="levels-reordered-is-breaking",
    ),
    pytest.param(
        BASE.replace("      - waiting\n", "      - waiting\n      - reading\n"),
        [("urgency", "level_inserted", True)],
        None,
        id="level-inserted-is-breaking",
    ),
    pytest.param(
        BASE.replace("      - blocked\n", "      - blocked\n      - on fire\n"),
        [("urgency", "level_inserted", True)],
        None,
        id="level-appended-changes-the-scale",
    ),
    pytest.param(
        BASE.replace("      - {label: chasing, description: will chase today}\n", ""),
        [("urgency", "level_removed", True)],
        None,
        id="level-removed-is-breaking",
    ),
    pytest.param(
        BASE.replace("will chase today", "will chase before noon"),
        [("urgency", "level_reworded", False)],
        None,
        id="level-redescribed",
    ),
    pytest.param(
        BASE.replace(
            "    type: noul\n", "    type: choice\n    criteria: {yes: money back, no: not}\n"
        ),
        [("refund", "type_changed", True)],
        None,
        id="type-changed-is-breaking",
    ),
    pytest.param(
        BASE.replace("own it here when money moved", "billing")
        .replace("own it here when a parcel is late", "shipping")
        .replace("own it here when the product errors", "technical"),
        [
            ("desk", "option_redescribed", False),
            ("desk", "option_redescribed", False),
            ("desk", "option_redescribed", False),
            ("desk", "criteria_degenerate", True),
        ],
        None,
        id="degenerate-TN002-is-breaking",
    ),
    pytest.param(
        BASE.replace("      - blocked\n", "      - waiting\n"),
        [("urgency", "level_reworded", False), ("urgency", "criteria_degenerate", True)],
        None,
        id="duplicate-level-TN022-is-breaking",
    ),
]


@pytest.mark.parametrize(("new_text", "expected", "applies"), CASES)
def test_each_kind_of_change(
    tmp_path: Path,
    new_text: str,
    expected: list[tuple[str | None, str, bool]],
    applies: dict[str, bool] | None,
) -> None:
    code, data = _diff(tmp_path, new_text)
    assert code == 1
    assert data["equal"] is False
    assert _kinds(data) == expected
    assert data["breaking"] == sum(1 for *_, b in expected if b)
    assert data["old"]["sha256"] != data["new"]["sha256"]
    if applies is not None:
        assert data["still_apply"] == applies


def test_degenerate_change_names_the_check_criteria_code(tmp_path: Path) -> None:
    same = "own it here"
    text = (
        BASE.replace("own it here when money moved", same)
        .replace("own it here when a parcel is late", same)
        .replace("own it here when the product errors", same)
    )
    _, data = _diff(tmp_path, text)
    degenerate = [c for c in data["changes"] if c["kind"] == "criteria_degenerate"]
    assert [c["detail"]["code"] for c in degenerate] == ["TN003"]
    assert degenerate[0]["message"].startswith("TN003 every option description is identical")


def test_a_renamed_option_and_a_reorder_are_called_out_in_words(tmp_path: Path) -> None:
    old = tmp_path / "old.yaml"
    new = tmp_path / "new.yaml"
    old.write_text(BASE, encoding="utf-8")
    new.write_text(BASE.replace("shipping: own", "parcels: own"), encoding="utf-8")
    ran = run_cli("diff", str(old), str(new))
    assert ran.code == 1
    assert ran.out.splitlines()[:4] == [
        f"--- {old}",
        f"+++ {new}",
        "~ desk",
        "    BREAKING option 'shipping' renamed to 'parcels': old labels and recordings name "
        "'shipping'",
    ]
    assert "1 breaking change: re-check labels, thresholds and recordings" in ran.out
    assert "recordings: no longer apply\ncached decisions: no longer apply\n" in ran.out


def test_equal_canonical_bytes_exit_0_even_when_the_yaml_differs(tmp_path: Path) -> None:
    """Comments, quoting and the order of choice options are not on the wire."""
    reordered = "# reviewed\n" + BASE.replace(
        "      billing: own it here when money moved\n      shipping: own it here when a parcel is late\n",  # noqa: E501
        '      shipping: "own it here when a parcel is late"\n      billing: own it here when money moved\n',  # noqa: E501
    )
    assert reordered != BASE
    code, data = _diff(tmp_path, reordered)
    assert code == 0
    assert data["equal"] is True and data["changes"] == []
    assert data["still_apply"] == {"recordings": True, "cached_decisions": True}


def test_sha256_is_the_canonical_commands(tmp_path: Path) -> None:
    _, data = _diff(tmp_path, BASE.replace("How fast", "How soon"))
    for side, name in (("old", "old.yaml"), ("new", "new.yaml")):
        ran = run_cli("canonical", "--sha256", str(tmp_path / name))
        assert data[side]["sha256"] == ran.out.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_rev_path_from_a_temporary_git_repo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
        )

    (tmp_path / "questions").mkdir()
    path = tmp_path / "questions" / "triage.yaml"
    path.write_text(BASE, encoding="utf-8")
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "first")
    path.write_text(BASE.replace("shipping: own", "parcels: own"), encoding="utf-8")
    git("commit", "-q", "-am", "rename")
    monkeypatch.chdir(tmp_path)
    ran = run_cli(
        "diff", "HEAD~1:questions/triage.yaml", "questions/triage.yaml", "--format", "json"
    )
    assert ran.code == 1, ran.stderr
    data = json.loads(ran.out)
    assert data["old"]["source"] == "HEAD~1:questions/triage.yaml"
    assert _kinds(data) == [("desk", "option_renamed", True)]
    ran = run_cli("diff", "HEAD~1:questions/triage.yaml", "HEAD:questions/triage.yaml")
    assert ran.code == 1
    ran = run_cli("diff", "HEAD:questions/triage.yaml", "questions/triage.yaml")
    assert ran.code == 0 and "no change: the canonical bytes are equal" in ran.out
    ran = run_cli("diff", "HEAD~5:questions/triage.yaml", "questions/triage.yaml")
    assert ran.code == 2
    assert error_line(ran.stderr).startswith("HEAD~5:questions/triage.yaml: fatal:")


def test_errors_exit_2_with_one_located_line(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(BASE, encoding="utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text("questions:\n  x:\n    type: choise\n    instructions: hm\n", encoding="utf-8")
    ran = run_cli("diff", str(good), str(bad))
    assert ran.code == 2
    assert error_line(ran.stderr).startswith(f"{bad}:3:11: question 'x': unknown type 'choise'")
    ran = run_cli("diff", str(good), str(tmp_path / "nope.yaml"))
    assert ran.code == 2
    assert error_line(ran.stderr).startswith(f"{tmp_path / 'nope.yaml'}: cannot read")
