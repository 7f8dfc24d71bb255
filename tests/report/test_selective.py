"""Selective prediction in ``report`` (issue 35 item 5): "Per question ...: coverage against risk
(and accuracy above each floor) with AURC and coverage at a target risk, in JSON, in the table
and as an SVG chart in the HTML report"."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from clirun import error_line, run_cli
from htmlcheck import check_self_contained
from paths import REPO
from toolnexus import ChoiceAnswer, ChoiceQuestion, Decision, NoulAnswer, NoulQuestion
from toolnexus.records.decision import decision_record
from toolnexus.records.model import DecisionRecord

SCHEMA = json.loads((REPO / "src/toolnexus/report/report.schema.json").read_text())
QS: dict[str, Any] = {
    "urgent": NoulQuestion("Is it urgent?"),
    "desk": ChoiceQuestion("Which desk?", {"billing": "money", "tech": "bugs"}),
}


def _build(tmp_path: Path, n: int = 80) -> tuple[Path, Path, dict[str, list[tuple[float, bool]]]]:
    rng = random.Random(5)
    lines, labels = [], ["id,urgent,desk"]
    facts: dict[str, list[tuple[float, bool]]] = {"urgent": [], "desk": []}
    for i in range(n):
        p = rng.randint(0, 100) / 100
        truth = rng.random() < p  # roughly calibrated, with ties on the two-decimal grid
        conf = rng.randint(50, 100) / 100
        pick = rng.choice(["billing", "tech"])
        desk = pick if rng.random() < conf else ("tech" if pick == "billing" else "billing")
        other = "tech" if pick == "billing" else "billing"
        d = Decision(
            "m",
            {
                "urgent": NoulAnswer(p),
                "desk": ChoiceAnswer(pick, {pick: conf, other: round(1 - conf, 2)}, conf),
            },
        )
        item = f"t{i}"
        lines.append(
            json.dumps(DecisionRecord.from_body(item, None, decision_record(d, QS)).to_object())
        )
        labels.append(f"{item},{'true' if truth else 'false'},{desk}")
        facts["urgent"].append((max(p, 1 - p), (p >= 0.5) == truth))
        facts["desk"].append((conf, pick == desk))
    run, lab = tmp_path / "run.jsonl", tmp_path / "labels.csv"
    run.write_text("\n".join(lines) + "\n", "utf-8")
    lab.write_text("\n".join(labels) + "\n", "utf-8")
    return run, lab, facts


def _brute(pairs: list[tuple[float, bool]], target: float) -> dict[str, Any]:
    """Straight from the definitions: for each answer, the risk of answering everything at least
    as confident as it; AURC their mean; the largest such coverage with risk <= target."""
    n = len(pairs)

    def above(c: float) -> list[bool]:
        return [r for conf, r in pairs if conf >= c]

    risks = [1 - sum(above(c)) / len(above(c)) for c, _ in pairs]
    ok = [(len(above(c)) / n, c) for c, _ in pairs if 1 - sum(above(c)) / len(above(c)) <= target]
    cov, floor = max(ok) if ok else (0.0, None)
    curve = []
    for i in range(21):
        f = i / 20
        said = above(f)
        curve.append(
            {
                "floor": f,
                "answered": len(said),
                "coverage": len(said) / n,
                "risk": (1 - sum(said) / len(said)) if said else None,
            }
        )
    return {
        "aurc": sum(risks) / n,
        "coverage_at_target": cov,
        "floor_at_target": floor,
        "curve": curve,
    }


def test_curve_aurc_and_coverage_at_target_match_the_definitions(tmp_path: Path) -> None:
    run, labels, facts = _build(tmp_path)
    ran = run_cli(
        "report", str(run), "--labels", str(labels), "--target-risk", "0.2", "--format", "json"
    )
    assert ran.code == 0, ran.stderr
    report = json.loads(ran.out)
    jsonschema.validate(report, SCHEMA)
    for key, pairs in facts.items():
        got, want = report["selective"][key], _brute(pairs, 0.2)
        assert got["n"] == len(pairs) and got["target_risk"] == 0.2
        assert got["aurc"] == pytest.approx(want["aurc"], abs=1e-12)
        assert (got["coverage_at_target"], got["floor_at_target"]) == (
            pytest.approx(want["coverage_at_target"]),
            want["floor_at_target"],
        )
        for g, w in zip(got["curve"], want["curve"], strict=True):
            assert g["answered"] == w["answered"] and g["risk"] == pytest.approx(w["risk"])


def test_table_and_html_show_it(tmp_path: Path) -> None:
    run, labels, _ = _build(tmp_path, n=30)
    table = run_cli("report", str(run), "--labels", str(labels), "--selective", "--format", "table")
    assert table.code == 0, table.stderr
    assert "selective prediction (answering above a confidence floor)" in table.out
    from toolnexus.report.build import build_report
    from toolnexus.report.judgedhtml import judged_html

    html = judged_html(build_report([str(run)], labels_path=str(labels), target_risk=0.1))
    assert check_self_contained(html) == 2  # one chart per question, hand-drawn
    assert 'aria-label="urgent: risk against coverage"' in html


def test_without_the_flag_a_labelled_report_is_unchanged(tmp_path: Path) -> None:
    run, labels, _ = _build(tmp_path, n=10)
    ran = run_cli("report", str(run), "--labels", str(labels), "--format", "json")
    assert "selective" not in json.loads(ran.out)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        pytest.param(("--selective",), "need --labels", id="no-labels"),
        pytest.param(
            ("--labels", "LABELS", "--target-risk", "1.5"), "error rate in [0, 1]", id="bad-risk"
        ),
    ],
)
def test_usage_errors(tmp_path: Path, args: tuple[str, ...], fragment: str) -> None:
    run, labels, _ = _build(tmp_path, n=5)
    ran = run_cli("report", str(run), *(str(labels) if a == "LABELS" else a for a in args))
    assert ran.code == 2 and fragment in error_line(ran.stderr)
