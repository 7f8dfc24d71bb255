"""``report RUN --labels L --gates QUESTIONS.yaml`` sweeps (issue 35 item 3): "A sweep test on a
hand-built run reproduces counts computed by an independent script in the test"."""

from __future__ import annotations

import json
import random
from itertools import pairwise
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from clirun import error_line, run_cli
from htmlcheck import check_self_contained
from paths import REPO
from toolnexus import Decision, NoulAnswer, NoulQuestion
from toolnexus.records.decision import decision_record
from toolnexus.records.model import DecisionRecord

SCHEMA = json.loads((REPO / "src/toolnexus/report/report.schema.json").read_text())
#: The shape of the published sweep: four noul questions, two whose favourable answer is yes
#: and two whose favourable answer is no; observations labelled permit / clarify / bad.
FAVOURABLE = {
    "addresses_task": "yes",
    "evidence_supports": "yes",
    "unrelated_changes": "no",
    "needs_clarification": "no",
}
QUESTIONS_YAML = "questions:\n" + "".join(
    f"  {k}: {{type: noul, instructions: Is it {k}?}}\n" for k in FAVOURABLE
)
GATES_YAML = """\
gates:
  merge:
    rules:
      - {question: addresses_task, below: 0.5, action: hold}
      - {question: evidence_supports, below: 0.5, action: hold}
      - {question: unrelated_changes, at_least: 0.5, action: hold}
      - {question: needs_clarification, at_least: 0.5, action: clarify}
    default: permit
    thresholds: {"yes": 0.8, "no": 0.2}
"""
#: A question's catch counts, today's and then the published partition's (issue 42 item 8).
CATCH_FIELDS = ("direction", "confidence", "alone",
                "published_direction", "published_confidence", "published_alone")  # fmt: skip
#: Values that sit exactly on a floor or on 1 - floor (0.1 misses 1 - 0.9 in floats).
EDGES = [0.05, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9, 0.95]


def _build(tmp_path: Path, n: int = 90) -> tuple[Path, Path, Path, dict[str, Any]]:
    rng = random.Random(3)
    qs = {k: NoulQuestion(f"Is it {k}?") for k in FAVOURABLE}
    records, labels, facts = [], ["id,merge"], {}
    for i in range(n):
        ps = {
            k: rng.choice(EDGES) if rng.random() < 0.6 else rng.randint(0, 100) / 100
            for k in FAVOURABLE
        }
        outcome = rng.choice(["permit", "clarify", "bad"])
        item = f"obs{i}"
        facts[item] = (ps, outcome)
        d = Decision("jev-1.13.0", {k: NoulAnswer(p) for k, p in ps.items()})
        records.append(
            json.dumps(DecisionRecord.from_body(item, None, decision_record(d, qs)).to_object())
        )
        labels.append(f"{item},{outcome}")
    run = tmp_path / "run.jsonl"
    run.write_text("\n".join(records) + "\n", "utf-8")
    lab = tmp_path / "labels.csv"
    lab.write_text("\n".join(labels) + "\n", "utf-8")
    gates = tmp_path / "gates.yaml"
    gates.write_text(QUESTIONS_YAML + GATES_YAML, "utf-8")
    return run, lab, gates, facts


def _independent(facts: dict[str, Any], floors: list[int]) -> list[dict[str, Any]]:
    """The published definition, in integer hundredths: a question is on its favourable side
    with confidence max(p, 1 - p) >= floor, else caught: by direction when it is confident on
    the other side (p >= 0.5 counts as the yes side), by confidence otherwise; "permit" (let
    through) when no question catches the observation."""
    out = []
    for floor in floors:
        for outcome in ("bad", "clarify", "permit"):
            rows = [ps for ps, o in facts.values() if o == outcome]
            counts = {k: [0, 0, 0, 0, 0, 0] for k in FAVOURABLE}
            let = escalated = agreed = 0
            for ps in rows:
                caught, published = {}, {}
                for k, fav in FAVOURABLE.items():
                    h = round(ps[k] * 100)
                    confident = max(h, 100 - h) >= floor
                    yes_side = h >= 50
                    favourable = yes_side if fav == "yes" else not yes_side
                    caught[k] = (
                        ""
                        if favourable and confident
                        else "direction"
                        if confident
                        else "confidence"
                    )
                    # issue 42 item 8, the published partition: "by direction when its answer
                    # is on the unfavourable side ..., whatever the confidence, and by
                    # confidence when it is on the favourable side below the floor"
                    published[k] = (
                        "direction" if not favourable else "" if confident else "confidence"
                    )
                hits = [k for k, c in caught.items() if c]
                let += not hits
                # first match, in the file's rule order: the first question caught decides
                first = next((caught[k] for k in FAVOURABLE if caught[k]), "")
                action = {"": "permit", "confidence": "needs_input"}.get(first)
                if first == "direction":
                    key = next(k for k in FAVOURABLE if caught[k])
                    action = "clarify" if key == "needs_clarification" else "hold"
                escalated += first == "confidence"
                agreed += action == outcome
                for k, c in caught.items():
                    counts[k][0] += c == "direction"
                    counts[k][1] += c == "confidence"
                    counts[k][2] += hits == [k]
                published_hits = [k for k, c in published.items() if c]
                for k, c in published.items():
                    counts[k][3] += c == "direction"
                    counts[k][4] += c == "confidence"
                    counts[k][5] += published_hits == [k]
            out.append(
                {
                    "floor": floor / 100,
                    "outcome": outcome,
                    "n": len(rows),
                    "let_through": let,
                    "held": len(rows) - let,
                    "escalated": escalated,
                    "agreed": agreed,
                    "questions": {
                        k: dict(zip(CATCH_FIELDS, c, strict=True)) for k, c in counts.items()
                    },
                }
            )
    return out


def test_the_sweep_reproduces_an_independent_count_cell_for_cell(tmp_path: Path) -> None:
    """Issue 35 item 3: per floor, per outcome label, let through and held, and per rule question
    caught by direction, by confidence (escalated) and alone; a floor f means yes = f, no = 1 - f
    in the policy's inclusive sense, compared in integer hundredths."""
    run, labels, gates, facts = _build(tmp_path)
    ran = run_cli(
        "report", str(run), "--labels", str(labels), "--gates", str(gates), "--format", "json"
    )
    assert ran.code == 0, ran.stderr
    report = json.loads(ran.out)
    jsonschema.validate(report, SCHEMA)
    sweep = report["sweeps"]["merge"]
    assert sweep["default"] == "permit" and sweep["cut_points"] == "thresholds (inclusive)"
    rows = _independent(facts, list(range(50, 100, 5)))
    assert sweep["rows"] == rows
    for point in sweep["curve"]:  # issue 35 item 5, per gate: coverage against risk
        at = [r for r in rows if r["floor"] == point["floor"]]
        answered = sum(r["n"] - r["escalated"] for r in at)
        assert point["answered"] == answered
        assert point["risk"] == pytest.approx((answered - sum(r["agreed"] for r in at)) / answered)
    # issue 35 item 5, "per question and per gate ... AURC": the trapezoid area under the
    # gate's curve over the coverage its floors span, written out here from the rows alone
    points = sorted(
        (sum(r["n"] - r["escalated"] for r in at) / sum(r["n"] for r in at),
         1 - sum(r["agreed"] for r in at) / sum(r["n"] - r["escalated"] for r in at))
        for at in ([r for r in rows if r["floor"] == f / 100] for f in range(50, 100, 5))
        if sum(r["n"] - r["escalated"] for r in at)
    )  # fmt: skip
    pairs = pairwise(points)
    area = sum((c1 - c0) * (r0 + r1) / 2 for (c0, r0), (c1, r1) in pairs)
    assert sweep["aurc"] == pytest.approx(area / (points[-1][0] - points[0][0]))


def test_floors_and_the_table(tmp_path: Path) -> None:
    run, labels, gates, facts = _build(tmp_path, n=30)
    ran = run_cli(
        "report", str(run), "--labels", str(labels), "--gates", str(gates),
        "--floors", "0.65,0.9", "--format", "json",
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    assert json.loads(ran.out)["sweeps"]["merge"]["rows"] == _independent(facts, [65, 90])
    table = run_cli(
        "report", str(run), "--labels", str(labels), "--gates", str(gates),
        "--floors", "0.50:0.60:0.05", "--format", "table",
    )  # fmt: skip
    assert "sweep of gate merge (thresholds (inclusive); let through: permit; per" in table.out
    assert "caught by direction/by confidence/alone" in table.out
    assert "published" in table.out  # issue 42 item 8: the published partition's columns
    assert "gate merge: AURC 0." in table.out  # issue 35 item 5: AURC per gate, in the table
    assert "matches no question key" not in table.stderr  # merge is the gate's outcome column


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        pytest.param(("--floors", "0.5"), "--floors needs --gates", id="floors-without-gates"),
        pytest.param(
            ("--gates", "GATES", "--floors", "0.42x"), "'0.42x' is not a number", id="bad-floor"
        ),
        pytest.param(
            ("--gates", "GATES", "--floors", "0.3"), "not a floor in 0.50..1.00", id="low-floor"
        ),
        pytest.param(
            ("--gates", "GATES", "--floors", "nan"), "'nan' is not a finite number", id="nan"
        ),
        pytest.param(
            ("--gates", "GATES", "--floors", "0.5:1.0:0.001"),
            "STEP '0.001' is not a whole number of hundredths",
            id="step-rounds-to-zero",
        ),
    ],
)
def test_sweep_usage_errors_are_one_line(
    tmp_path: Path, args: tuple[str, ...], fragment: str
) -> None:
    run, _, gates, _ = _build(tmp_path, n=5)
    ran = run_cli("report", str(run), *(str(gates) if a == "GATES" else a for a in args))
    assert ran.code == 2
    assert fragment in error_line(ran.stderr)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param("nan", "'nan' is not a finite number", id="nan"),
        pytest.param("inf", "'inf' is not a finite number", id="inf"),
        pytest.param("0.5,-inf", "'-inf' is not a finite number", id="list-minus-inf"),
        pytest.param("nan:0.9:0.05", "FROM 'nan' is not a finite number", id="from-nan"),
        pytest.param("0.5:inf:0.05", "TO 'inf' is not a finite number", id="to-inf"),
        pytest.param("0.5:0.9:abc", "STEP 'abc' is not a number", id="step-abc"),
        pytest.param("0.5:0.9:nan", "STEP 'nan' is not a finite number", id="step-nan"),
        pytest.param("0.5:0.9:1e308", "STEP '1e308' is wider than 0.50..1.00", id="step-huge"),
        pytest.param("1e308", "'1e308' is not a floor in 0.50..1.00", id="floor-huge"),
        pytest.param("0.5:1.0:0.001", "STEP '0.001' is not a whole number", id="step-rounds-0"),
        pytest.param("0.5:1.0:0.015", "STEP '0.015' is not a whole number", id="step-fraction"),
        pytest.param("0.5:1.0:0", "STEP '0' is not positive", id="step-zero"),
        pytest.param("0.5:1.0:-0.05", "STEP '-0.05' is not positive", id="step-negative"),
        pytest.param("0.9:0.5:0.05", "FROM 0.9 is above TO 0.5", id="from-above-to"),
        pytest.param(",", "names no floor", id="no-floor"),
        pytest.param("0.5:0.9", "is not FROM:TO:STEP", id="two-parts"),
    ],
)
def test_floors_name_the_real_problem(text: str, fragment: str) -> None:
    """Issue 43 item 3: "report --floors nan, inf, 0.5:0.9:abc give tracebacks; 0.5:1.0:0.001
    says 'not FROM:TO:STEP with FROM <= TO' when the real problem is a step that rounds to zero
    hundredths. One line naming the real problem, exit 2" (ReportInputError is exit 2)."""
    from toolnexus.report.inputs import ReportInputError
    from toolnexus.report.sweep import parse_floors

    with pytest.raises(ReportInputError) as raised:
        parse_floors(text)
    assert fragment in str(raised.value)
    assert "\n" not in str(raised.value)


def test_floors_that_are_right_still_parse() -> None:
    from toolnexus.report.sweep import parse_floors

    assert parse_floors("0.50:0.60:0.05") == (50, 55, 60)
    assert parse_floors("0.5:1.0:0.01")[:3] == (50, 51, 52)
    assert parse_floors("0.9,0.65") == (65, 90)


def test_the_html_report_shows_the_sweep_self_contained(tmp_path: Path) -> None:
    """Issue 35 item 3: "Table, JSON and HTML"; the sections are plain tables and a hand-drawn
    risk-coverage chart, checked self-contained (the page's matplotlib charts are the HTML
    report's own tests' business: rendering them here would cost seconds)."""
    from toolnexus.questionfile.load import load_question_file
    from toolnexus.report.build import build_report
    from toolnexus.report.judgedhtml import judged_html

    run, labels, gates, _ = _build(tmp_path, n=20)
    (_, questions), policies = load_question_file(gates)
    report = build_report(
        [str(run)], labels_path=str(labels), sweep_gates=(policies, questions), floors=[80, 90]
    )
    html = judged_html(report)
    assert check_self_contained(html) == 1
    assert "<h2>Sweep of gate merge" in html
    assert "<th>needs_clarification dir/conf/alone</th>" in html
    assert "<th>needs_clarification published dir/conf/alone</th>" in html  # issue 42 item 8
    assert 'aria-label="gate merge: risk against coverage"' in html  # item 5, per gate
    assert report.sweeps is not None and report.sweeps["merge"].aurc is not None
    assert f"risk against coverage, by floor (AURC {report.sweeps['merge'].aurc:.4f})</h3>" in html


def test_an_unfavourable_answer_below_the_floor_is_caught_by_direction_as_published(
    tmp_path: Path,
) -> None:
    """Issue 42 item 8: "report --gates counts direction only when the rule fired with a sure
    answer, so an unfavourable answer between 0.5 and the floor is counted under confidence.
    Keep today's fields and add the published partition beside them"."""
    qs = {k: NoulQuestion(f"Is it {k}?") for k in FAVOURABLE}
    # unrelated_changes at 0.6: unfavourable (its good answer is no), confidence 0.6 < 0.8
    ps = {"addresses_task": 0.9, "evidence_supports": 0.9, "unrelated_changes": 0.6,
          "needs_clarification": 0.3}  # fmt: skip
    d = Decision("jev-1.13.0", {k: NoulAnswer(p) for k, p in ps.items()})
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps(DecisionRecord.from_body("o1", None, decision_record(d, qs))
                              .to_object()) + "\n")  # fmt: skip
    labels = tmp_path / "labels.csv"
    labels.write_text("id,merge\no1,bad\n")
    gates = tmp_path / "gates.yaml"
    gates.write_text(QUESTIONS_YAML + GATES_YAML)
    ran = run_cli("report", str(run), "--labels", str(labels), "--gates", str(gates),
                  "--floors", "0.8", "--format", "json")  # fmt: skip
    assert ran.code == 0, ran.stderr
    (row,) = json.loads(ran.out)["sweeps"]["merge"]["rows"]
    got = {k: tuple(c[f] for f in CATCH_FIELDS) for k, c in row["questions"].items()}
    assert got == {
        "addresses_task": (0, 0, 0, 0, 0, 0),
        "evidence_supports": (0, 0, 0, 0, 0, 0),
        # today: an escalation (confidence); published: unfavourable side, so direction
        "unrelated_changes": (0, 1, 0, 1, 0, 0),
        # favourable side (no) below the floor: confidence both ways
        "needs_clarification": (0, 1, 0, 0, 1, 0),
    }


@pytest.mark.parametrize(
    ("points", "want"),
    [
        pytest.param([(0.5, 0.4), (1.0, 0.2)], 0.3, id="two-floors-mean-of-a-trapezoid"),
        pytest.param([(0.2, 0.0), (0.6, 0.2), (1.0, 0.2)], 0.15, id="three-floors"),
        pytest.param([(0.7, 0.25)], 0.25, id="one-floor-its-risk"),
        pytest.param([(0.7, 0.1), (0.7, 0.3)], 0.2, id="one-coverage-mean-risk"),
        pytest.param([], None, id="nothing-decided"),
    ],
)
def test_gate_aurc_is_the_mean_risk_under_the_curve(
    points: list[tuple[float, float]], want: float | None
) -> None:
    """Issue 35 item 5: "Per question and per gate: coverage against risk ... with AURC"."""
    from toolnexus.report.selective import RiskPoint
    from toolnexus.report.sweep import gate_aurc

    curve = [RiskPoint(0.5 + i / 100, 10, c, r) for i, (c, r) in enumerate(points)]
    curve.append(RiskPoint(0.99, 0, 0.0, None))  # a floor that decided nothing: left out
    got = gate_aurc(curve)
    assert got == (None if want is None else pytest.approx(want))


# --- issue 43 item 11: "report --gates on a question file holding no gates, or a gate the labels
# have no column for, says nothing: one line naming what is missing" ---------------------------


def test_a_gate_the_labels_have_no_column_for_is_one_warning_naming_it(tmp_path: Path) -> None:
    run, labels, _, _ = _build(tmp_path, n=5)
    other = tmp_path / "other.yaml"
    other.write_text(
        QUESTIONS_YAML
        + "gates:\n  other:\n    rules: [{question: addresses_task, below: 0.5, action: hold}]\n"
        + "    default: permit\n",
        "utf-8",
    )
    ran = run_cli(
        "report", str(run), "--labels", str(labels), "--gates", str(other), "--format", "json"
    )
    assert ran.code == 0, ran.stderr
    said = [line for line in ran.stderr.splitlines() if "'other'" in line]
    assert said == [
        f"toolnexus: warning: {labels}: no column for --gates gate 'other' (its columns: "
        "'merge'): not swept; add a column of the outcome each record should get, named after "
        "the gate, or drop --labels to sweep all records"
    ]
    assert json.loads(ran.out)["sweeps"] == {}


@pytest.mark.parametrize(
    "tail",
    [pytest.param("", id="no-gates-section"), pytest.param("gates: {}\n", id="empty-gates")],
)
def test_a_question_file_holding_no_gates_is_one_line_exit_2(tmp_path: Path, tail: str) -> None:
    run, labels, _, _ = _build(tmp_path, n=5)
    plain = tmp_path / "plain.yaml"
    plain.write_text(QUESTIONS_YAML + tail, "utf-8")
    ran = run_cli("report", str(run), "--labels", str(labels), "--gates", str(plain))
    assert ran.code == 2
    assert error_line(ran.stderr) == f"{plain}: no gates: to sweep (add a gates: section)"


# --- issue 43 item 10: "Sweep and report tables cut at 80 columns (`0…`, `per…`): wrap or stack,
# never truncate a number or an outcome name, so a pipe or a narrow terminal stays readable" ----


@pytest.mark.parametrize("columns", [40, 60, 80])
def test_every_number_and_name_of_the_sweep_and_report_appears_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    run, labels, gates, _ = _build(tmp_path, n=30)
    args = ("report", str(run), "--labels", str(labels), "--gates", str(gates))
    data = json.loads(run_cli(*args, "--floors", "0.5,0.9", "--format", "json").out)
    monkeypatch.setenv("COLUMNS", str(columns))
    ran = run_cli(*args, "--floors", "0.5,0.9", "--format", "table")
    assert ran.code == 0, ran.stderr
    lines = ran.out.splitlines()
    assert "…" not in ran.out
    assert max(len(line) for line in lines) <= columns
    words = {word.rstrip(":,") for line in lines for word in line.split()}
    expected = {"merge", *FAVOURABLE}
    for row in data["sweeps"]["merge"]["rows"]:
        expected |= {f"{row['floor']:.2f}", row["outcome"]}
        expected |= {str(row[k]) for k in ("n", "let_through", "held")}
        expected |= {f"{c['direction']}/{c['confidence']}/{c['alone']}"
                     for c in row["questions"].values()}  # fmt: skip
    for key, q in data["questions"].items():
        expected |= {key, str(q["n"])}
    assert expected - words == set()
