"""``report`` over gated runs (issue 35): each gate's actions and escalations, agreement with
a labels column named after the gate, and item 7's paired comparison: "per question and per
gate, fixes, breaks, both right, both wrong and McNemar's exact two-sided p (1.0 when nothing
is discordant; equal to scipy.stats.binomtest in a test)", ``--fail-on "NAME.breaks>0"`` /
``"NAME.mcnemar_p<0.05"`` and ``--junit FILE`` with one test case per condition."""

from __future__ import annotations

import json
import random
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from clirun import error_line, run_cli
from paths import REPO
from toolnexus import Decision, NoulAnswer, NoulQuestion, Policy, Rule
from toolnexus.records.decision import decision_record
from toolnexus.records.model import DecisionRecord, ErrorRecord
from toolnexus.report.judged import mcnemar_p

SCHEMA = json.loads((REPO / "src/toolnexus/report/report.schema.json").read_text())
QUESTIONS = {"addresses_task": NoulQuestion("Does the change address the task?")}
GATES = {
    "merge": Policy(
        [Rule("addresses_task", "hold", below=0.5)],
        default="permit",
        thresholds={"yes": 0.8, "no": 0.2},
    )
}
N = 60


def _runs(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, Any]]:
    """Two runs of the same ids and a labels file, plus what an independent count says."""
    rng = random.Random(35)
    truth = {f"t{i}": rng.random() < 0.5 for i in range(N)}
    paths = []
    ps: list[dict[str, float]] = [{}, {}]
    for run in range(2):
        lines = []
        for i, (item, yes) in enumerate(truth.items()):
            if run == 1 and i == 0:  # one id the second run failed on: not compared
                lines.append(json.dumps(ErrorRecord(item, "backend", "down").to_object()))
                continue
            # the second run is a little better: its p is nearer the truth more often
            lean = 0.25 if run == 1 else 0.1
            p = round(min(1.0, max(0.0, rng.random() * 0.8 + (lean if yes else -lean) + 0.1)), 2)
            ps[run][item] = p
            d = Decision("m", {"addresses_task": NoulAnswer(p)})
            body = decision_record(d, QUESTIONS, gates=GATES)
            lines.append(json.dumps(DecisionRecord.from_body(item, None, body).to_object()))
        path = tmp_path / f"run{run}.jsonl"
        path.write_text("\n".join(lines) + "\n", "utf-8")
        paths.append(path)
    labels = tmp_path / "labels.csv"
    rows = ["id,addresses_task,merge"]
    for item, yes in truth.items():
        rows.append(f"{item},{'true' if yes else 'false'},{'permit' if yes else 'hold'}")
    labels.write_text("\n".join(rows) + "\n", "utf-8")
    return paths[0], paths[1], labels, {"truth": truth, "ps": ps}


def _action(p: float) -> str:
    """The merge gate, written again: inclusive 0.8 / 0.2, hold below 0.5, else permit."""
    if 0.2 < p < 0.8:
        return "needs_input"
    return "hold" if p < 0.5 else "permit"


def _independent(facts: dict[str, Any]) -> dict[str, dict[str, int]]:
    truth, (a, b) = facts["truth"], facts["ps"]
    out: dict[str, dict[str, int]] = {}
    for key in ("addresses_task", "merge"):
        c = {"both_right": 0, "both_wrong": 0, "fixes": 0, "breaks": 0}
        for item in b:
            want = truth[item]
            if key == "addresses_task":
                r1, r2 = (a[item] >= 0.5) == want, (b[item] >= 0.5) == want
            else:
                label = "permit" if want else "hold"
                r1, r2 = _action(a[item]) == label, _action(b[item]) == label
            name = {(1, 1): "both_right", (0, 0): "both_wrong", (0, 1): "fixes", (1, 0): "breaks"}
            c[name[(int(r1), int(r2))]] += 1
        out[key] = c
    return out


def test_paired_counts_match_an_independent_count_and_scipy(tmp_path: Path) -> None:
    """Issue 35 item 7: per question and per gate, fixes, breaks, both right, both wrong and
    McNemar's exact two-sided p, equal to scipy.stats.binomtest."""
    a, b, labels, facts = _runs(tmp_path)
    ran = run_cli("report", str(a), str(b), "--labels", str(labels), "--format", "json")
    assert ran.code == 0, ran.stderr
    report = json.loads(ran.out)
    jsonschema.validate(report, SCHEMA)
    want = _independent(facts)
    for key, counts in want.items():
        got = report["paired"][key]
        assert {k: got[k] for k in counts} == counts, key
        assert got["compared"] == N - 1
        n = counts["fixes"] + counts["breaks"]
        expected = binomtest(counts["fixes"], n, 0.5).pvalue if n else 1.0
        assert got["mcnemar_p"] == pytest.approx(expected, rel=1e-12)
    assert sum(want["merge"].values()) == N - 1


def test_gate_actions_escalations_and_outcomes(tmp_path: Path) -> None:
    """Issue 35 item 2: a gate's actions and escalations; a labels column named after the gate
    holds the outcome each record should get."""
    _, b, labels, facts = _runs(tmp_path)
    ran = run_cli("report", str(b), "--labels", str(labels), "--format", "json")
    assert ran.code == 0, ran.stderr
    assert "name no question" not in ran.stderr  # the gate's column is not a stray column
    merge = json.loads(ran.out)["gates"]["merge"]
    actions = [_action(p) for p in facts["ps"][1].values()]
    assert merge["n"] == N - 1
    assert merge["actions"] == {a: actions.count(a) for a in sorted(set(actions))}
    assert merge["escalated"] == actions.count("needs_input")
    agreed = sum(
        _action(p) == ("permit" if facts["truth"][i] else "hold") for i, p in facts["ps"][1].items()
    )
    assert (merge["labelled"], merge["agreed"]) == (N - 1, agreed)
    table = run_cli("report", str(b), "--labels", str(labels), "--format", "table")
    assert "gates (the question file's policies" in table.out
    assert "merge: labelled hold:" in table.out


def test_fail_on_reads_gate_and_paired_metrics_and_junit_has_one_case_each(tmp_path: Path) -> None:
    """Issue 35 items 2 and 7: ``--fail-on`` reads gate metrics in its ``[KEY.]NAME OP NUMBER``
    grammar; ``--junit FILE`` writes one test case per condition."""
    a, b, labels, facts = _runs(tmp_path)
    breaks = _independent(facts)["merge"]["breaks"]
    assert breaks > 0  # the sample is built so that the gate breaks something
    junit = tmp_path / "junit.xml"
    conditions = "merge.breaks>0,merge.escalated>0.99,addresses_task.mcnemar_p<=1"
    ran = run_cli(
        "report", str(a), str(b), "--labels", str(labels), "--format", "json",
        "--fail-on", conditions, "--junit", str(junit),
    )  # fmt: skip
    assert ran.code == 1
    line = error_line(ran.stderr)
    assert f"merge.breaks>0 (merge {breaks} [of {N - 1} labelled ids; first ids" in line
    assert "merge.escalated" not in line
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "3" and suite.get("failures") == "2"
    cases = {c.get("name"): c.find("failure") is not None for c in suite.iter("testcase")}
    assert cases == {
        "merge.breaks>0": True,
        "merge.escalated>0.99": False,
        "addresses_task.mcnemar_p<=1": True,
    }


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        pytest.param(
            ("--fail-on", "merge.breaks>0"), "it needs two runs and --labels", id="breaks-one-run"
        ),
        pytest.param(
            ("--fail-on", "nosuch.escalated>0"), "no question or gate 'nosuch'", id="unknown-key"
        ),
        pytest.param(
            ("--junit", "x.xml"), "--junit writes one test case per --fail-on", id="junit-alone"
        ),
    ],
)
def test_usage_errors_are_one_line(tmp_path: Path, args: tuple[str, ...], fragment: str) -> None:
    _, b, _, _ = _runs(tmp_path)
    ran = run_cli("report", str(b), *args)
    assert ran.code == 2
    assert fragment in error_line(ran.stderr)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 1500), st.integers(0, 1500))
def test_mcnemar_p_equals_scipy_binomtest(fixes: int, breaks: int) -> None:
    """Issue 35 item 7: "McNemar's exact two-sided p (1.0 when nothing is discordant; equal to
    scipy.stats.binomtest in a test; no scipy at run time)" — past 1000 pairs too (log space)."""
    n = fixes + breaks
    want = binomtest(fixes, n, 0.5).pvalue if n else 1.0
    assert mcnemar_p(fixes, breaks) == pytest.approx(
        want, rel=1e-9, abs=1e-250
    )  # scipy underflows to 0 first


def test_no_scipy_at_run_time() -> None:
    import ast

    source = (REPO / "src/toolnexus/report/judged.py").read_text()
    imported = {
        n.module or "" for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)
    } | {a.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Import) for a in n.names}
    assert not any(m.startswith(("scipy", "numpy")) for m in imported)
