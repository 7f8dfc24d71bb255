"""``toolnexus report`` on records written by a real ``toolnexus batch`` against the loopback
server (issue 12: "CLI tests for every option above, on records written by toolnexus batch
against the loopback server, with a labels file; the two-run comparison on two real runs;
golden files for the table and the JSON; the HTML parses as HTML and holds one <svg> per
chart").

The loopback server answers deterministically (a hash of question and state), and batch runs
``--ordered``, so the runs, and the goldens, are the same on every machine. Regenerate with
UPDATE_GOLDEN=1 after a deliberate change.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from clirun import error_line, run_cli
from htmlcheck import check_self_contained
from loopback import Fault, Loopback
from paths import TESTS
from toolnexus.cli.schema_cmd import schema_text

GOLDEN = TESTS / "golden"
N = 40

QUESTIONS = """\
questions:
  urgent:
    type: noul
    instructions: Does this ticket need a human today?
  desk:
    type: choice
    instructions: Which desk should own this ticket?
    criteria:
      billing: own it here when money moved
      shipping: own it here when a parcel is late or lost
      technical: own it here when the product itself errors
  impact:
    type: score
    instructions: How much of the service is down?
    criteria: [nothing, some of it, all of it]
"""
# The edit a question-set author might make: the desk descriptions reworded, the urgent
# instructions sharpened. The loopback server answers differently for different questions.
QUESTIONS_AFTER = QUESTIONS.replace(
    "when money moved", "when a charge, refund or invoice is wrong"
).replace("a human today?", "a human before the end of the day?")
DESKS = ("billing", "shipping", "technical")


def _labels_rows() -> list[dict[str, str]]:
    """A fixed labelling: some cells left empty (unlabelled), score labels by index and by
    name, noul labels in every accepted spelling."""
    truth = ("yes", "no", "true", "false", "1", "0")
    levels = ("0", "some of it", "2", "")
    rows = []
    for i in range(N):
        rows.append(
            {
                "id": f"t{i}",
                "urgent": truth[i % 6] if i % 7 else "",
                "desk": DESKS[(i * 2) % 3],
                "impact": levels[i % 4],
            }
        )
    return rows


def _write_csv(path: Path, rows: list[dict[str, str]], id_name: str = "id") -> None:
    cols = [id_name, *[k for k in rows[0] if k != "id"]]
    lines = [",".join(cols)]
    lines += [",".join([r["id"], *(r[c] for c in cols[1:])]) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Real batch runs: the same questions as JSONL, JSON and CSV, and an edited set."""
    d = tmp_path_factory.mktemp("report")
    (d / "q.yaml").write_text(QUESTIONS, encoding="utf-8")
    (d / "q-after.yaml").write_text(QUESTIONS_AFTER, encoding="utf-8")
    with open(d / "in.jsonl", "w", encoding="utf-8") as f:
        for i in range(N):
            f.write(json.dumps({"id": f"t{i}", "text": f"ticket {i}: the app fails"}) + "\n")
    with Loopback() as server:
        for qfile, out, fmt in (
            ("q.yaml", "run.jsonl", "jsonl"),
            ("q.yaml", "run.json", "json"),
            ("q.yaml", "run.csv", "csv"),
            ("q-after.yaml", "after.jsonl", "jsonl"),
        ):
            ran = run_cli(
                "batch",
                str(d / qfile),
                str(d / "in.jsonl"),
                "--id-field",
                "id",
                "--state-field",
                "text",
                "--ordered",
                "--format",
                fmt,
                "--base-url",
                server.base_url,
                "-o",
                str(d / out),
            )
            assert ran.code == 0, ran.stderr
    rows = _labels_rows()
    _write_csv(d / "labels.csv", rows)
    with open(d / "labels.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({k: v for k, v in r.items() if v != ""}) + "\n")
    _write_csv(d / "labels-ticket.csv", rows, id_name="ticket")
    yield d


def _report(*args: str) -> tuple[int, Any, str]:
    ran = run_cli("report", *args)
    data = json.loads(ran.out) if ran.code in (0, 1) and ran.out.startswith("{") else ran.out
    return ran.code, data, ran.stderr


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"differs from {path}"


SCHEMA = jsonschema.Draft202012Validator(json.loads(schema_text("report")))


# --- goldens and the schema --------------------------------------------------------------


#: The goldens are rendered from batch output kept beside them (written by the runs fixture
#: against the loopback server, refreshed with UPDATE_GOLDEN=1), so a change in how the server
#: makes up answers does not move them; only a change in the report does.
GOLDEN_INPUTS = GOLDEN / "report-inputs"


@pytest.fixture
def golden_inputs(runs: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN_INPUTS.mkdir(exist_ok=True)
        for name in ("run.jsonl", "after.jsonl", "labels.csv"):
            (GOLDEN_INPUTS / name).write_bytes((runs / name).read_bytes())
    monkeypatch.chdir(GOLDEN_INPUTS)
    return GOLDEN_INPUTS


def test_json_report_golden_and_valid_against_the_schema(golden_inputs: Path) -> None:
    ran = run_cli(
        "report", "run.jsonl", "--labels", "labels.csv", "--target-precision", "0.6",
        "--format", "json",
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    check_golden("report.json", ran.out)
    SCHEMA.validate(json.loads(ran.out))


def test_table_report_golden(golden_inputs: Path) -> None:
    ran = run_cli(
        "report", "run.jsonl", "after.jsonl", "--labels", "labels.csv",
        "--target-precision", "0.6", "--format", "table",
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    check_golden("report.table.txt", ran.out)


def test_toolnexus_schema_report_prints_the_shipped_schema() -> None:
    ran = run_cli("schema", "report")
    assert ran.code == 0
    schema = json.loads(ran.out)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == "urn:toolnexus:schema:report:1"


def test_two_run_json_is_valid_against_the_schema(runs: Path) -> None:
    code, data, err = _report(
        str(runs / "run.jsonl"),
        str(runs / "after.jsonl"),
        "--labels",
        str(runs / "labels.csv"),
        "--format",
        "json",
    )
    assert code == 0, err
    SCHEMA.validate(data)


# --- what the numbers mean ----------------------------------------------------------------


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_unlabelled_counts_match_the_records(runs: Path) -> None:
    """Without labels: per question the answers, their distribution, flags, confidence; per run
    tokens, cost and models."""
    code, data, err = _report(str(runs / "run.jsonl"), "--format", "json")
    assert code == 0, err
    records = _records(runs / "run.jsonl")
    assert data["records"] == N and data["labelled"] == 0
    run = data["runs"][0]
    assert run["usage"]["input_tokens"] == sum(r["usage"]["input_tokens"] for r in records)
    assert run["usage"]["cost"] is None  # nobody reported a cost: absent, not zero
    assert run["models"] == {"jev-1.13.0": N}
    desk = data["questions"]["desk"]
    picks = [r["answers"]["desk"]["choice"] for r in records]
    assert {o: v["n"] for o, v in desk["distribution"]["options"].items()} == {
        o: picks.count(o) for o in DESKS
    }
    urgent = data["questions"]["urgent"]
    ps = [r["answers"]["urgent"]["noul"] for r in records]
    assert sum(b["n"] for b in urgent["distribution"]["histogram"]) == N
    assert urgent["distribution"]["histogram"][9]["n"] == sum(1 for p in ps if p >= 0.9)
    uncertain = sum(1 for r in records if "uncertain" in r["answers"]["urgent"]["flags"])
    assert urgent["flags"]["uncertain"] == {"n": uncertain, "share": uncertain / N}
    impact = data["questions"]["impact"]
    scores = [r["answers"]["impact"]["score"] for r in records]
    assert impact["distribution"]["mean_score"] == pytest.approx(sum(scores) / N)
    assert impact["distribution"]["levels"]["1"]["label"] == "some of it"
    assert all(q["metrics"] == {} and q["reliability"] == [] for q in data["questions"].values())


def test_labels_join_by_id_and_every_label_spelling_counts(runs: Path) -> None:
    code, data, err = _report(str(runs / "run.jsonl"), "--labels", str(runs / "labels.csv"))
    assert code == 0, err
    rows = _labels_rows()
    records = {r["id"]: r for r in _records(runs / "run.jsonl")}
    urgent = data["questions"]["urgent"]
    labelled = [r for r in rows if r["urgent"]]
    assert urgent["labelled"] == len(labelled)
    truth = {"yes": 1, "true": 1, "1": 1, "no": 0, "false": 0, "0": 0}
    hits = sum(
        (records[r["id"]]["answers"]["urgent"]["noul"] >= 0.5) == bool(truth[r["urgent"]])
        for r in labelled
    )
    assert urgent["metrics"]["accuracy"] == pytest.approx(hits / len(labelled))
    impact = data["questions"]["impact"]
    assert impact["labelled"] == sum(1 for r in rows if r["impact"])  # "" is unlabelled
    level_of = {"0": 0, "some of it": 1, "2": 2}
    right = sum(
        records[r["id"]]["answers"]["impact"]["level"] == level_of[r["impact"]]
        for r in rows
        if r["impact"]
    )
    assert impact["metrics"]["accuracy"] == pytest.approx(right / impact["labelled"])
    desk = data["questions"]["desk"]["metrics"]
    assert desk["confusion"]["labels"] == list(DESKS)
    assert sum(map(sum, desk["confusion"]["matrix"])) == N
    split = desk["accuracy_by_near_uniform"]
    flat = sum(1 for r in records.values() if r["answers"]["desk"]["near_uniform"])
    assert (split["near_uniform"]["n"], split["not_near_uniform"]["n"]) == (flat, N - flat)
    assert len(data["questions"]["desk"]["reliability"]) == 10


@pytest.mark.parametrize(
    "run", [pytest.param("run.json", id="json"), pytest.param("run.csv", id="csv")]
)
def test_json_and_csv_runs_give_the_jsonl_report(runs: Path, run: str) -> None:
    """Input: records as toolnexus batch writes them (JSONL, JSON or CSV)."""
    _, base, _ = _report(str(runs / "run.jsonl"), "--labels", str(runs / "labels.csv"))
    code, other, err = _report(str(runs / run), "--labels", str(runs / "labels.csv"))
    assert code == 0, err
    base["runs"][0]["path"] = base["questions_run"] = other["runs"][0]["path"]
    assert other == base


def test_jsonl_labels_and_a_renamed_id_column(runs: Path) -> None:
    """Labels: JSONL or CSV, an id column, --id-field to rename it."""
    _, base, _ = _report(str(runs / "run.jsonl"), "--labels", str(runs / "labels.csv"))
    code, jsonl, err = _report(str(runs / "run.jsonl"), "--labels", str(runs / "labels.jsonl"))
    assert code == 0, err
    assert jsonl["questions"] == base["questions"]
    code, renamed, err = _report(
        str(runs / "run.jsonl"),
        "--labels",
        str(runs / "labels-ticket.csv"),
        "--id-field",
        "ticket",
    )
    assert code == 0, err
    assert renamed["questions"] == base["questions"]
    code, _, err = _report(str(runs / "run.jsonl"), "--labels", str(runs / "labels-ticket.csv"))
    assert code == 2
    assert error_line(err).endswith(
        "labels-ticket.csv:1: no 'id' column (use --id-field to name it)"
    )


def test_target_precision_reports_the_lowest_threshold(runs: Path) -> None:
    code, data, err = _report(
        str(runs / "run.jsonl"),
        "--labels",
        str(runs / "labels.csv"),
        "--target-precision",
        "0.5",
    )
    assert code == 0, err
    t = data["questions"]["urgent"]["metrics"]["threshold"]
    assert t["target_precision"] == 0.5
    assert t["threshold"] is None or t["precision"] >= 0.5
    # every observed p below the threshold fails the target (it IS the lowest)
    records = {r["id"]: r for r in _records(runs / "run.jsonl")}
    truth = {"yes": 1, "true": 1, "1": 1, "no": 0, "false": 0, "0": 0}
    pairs = [
        (records[r["id"]]["answers"]["urgent"]["noul"], truth[r["urgent"]])
        for r in _labels_rows()
        if r["urgent"]
    ]
    for cut in sorted({p for p, _ in pairs}):
        if t["threshold"] is not None and cut >= t["threshold"]:
            break
        chosen = [y for p, y in pairs if p >= cut]
        assert sum(chosen) / len(chosen) < 0.5
    assert "threshold" not in data["questions"]["desk"]["metrics"]


def test_two_real_runs_compared(runs: Path) -> None:
    """With two runs: per question the share of ids whose answer changed, the mean |delta p|,
    the metric deltas when labelled, and the ids that changed most (top 10)."""
    code, data, err = _report(
        str(runs / "run.jsonl"),
        str(runs / "after.jsonl"),
        "--labels",
        str(runs / "labels.csv"),
    )
    assert code == 0, err
    before = {r["id"]: r for r in _records(runs / "run.jsonl")}
    after = {r["id"]: r for r in _records(runs / "after.jsonl")}
    c = data["comparison"]
    desk = c["questions"]["desk"]
    changed = [
        i
        for i in before
        if before[i]["answers"]["desk"]["choice"] != after[i]["answers"]["desk"]["choice"]
    ]
    assert desk["compared"] == N and desk["changed"] == len(changed) > 0
    assert desk["changed_share"] == pytest.approx(len(changed) / N)
    # total variation: half the sum of |delta p| over the options
    moved = [
        0.5
        * sum(
            abs(
                after[i]["answers"]["desk"]["probabilities"][o]
                - before[i]["answers"]["desk"]["probabilities"][o]
            )
            for o in DESKS
        )
        for i in before
    ]
    assert desk["mean_abs_delta_p"] == pytest.approx(sum(moved) / N)
    assert desk["top_changed"][0]["delta_p"] == pytest.approx(max(moved))
    assert [t["delta_p"] for t in desk["top_changed"]] == sorted(
        (t["delta_p"] for t in desk["top_changed"]), reverse=True
    )
    assert len(desk["top_changed"]) == min(10, len(changed))
    urgent = c["questions"]["urgent"]
    deltas = [
        abs(after[i]["answers"]["urgent"]["noul"] - before[i]["answers"]["urgent"]["noul"])
        for i in before
    ]
    assert urgent["mean_abs_delta_p"] == pytest.approx(sum(deltas) / N)
    assert urgent["top_changed"][0]["delta_p"] == pytest.approx(max(deltas))
    # impact's question did not change: same answers, no change
    assert c["questions"]["impact"]["changed"] == 0
    assert c["questions"]["impact"]["mean_abs_delta_p"] == 0
    after_acc = c["after_questions"]["desk"]["metrics"]["accuracy"]
    before_acc = data["questions"]["desk"]["metrics"]["accuracy"]
    assert desk["metric_deltas"]["accuracy"] == pytest.approx(after_acc - before_acc)
    assert [r["path"] for r in data["runs"]] == [str(runs / "run.jsonl"), str(runs / "after.jsonl")]


# --- --fail-on and exit codes -------------------------------------------------------------


def test_fail_on_met_exits_1_and_names_the_question(runs: Path) -> None:
    code, data, err = _report(
        str(runs / "run.jsonl"),
        "--labels",
        str(runs / "labels.csv"),
        "--fail-on",
        "ece>0.01,errors>0",
    )
    assert code == 1
    assert isinstance(data, dict)  # the report is still printed
    assert err.startswith("toolnexus: --fail-on met: ece>0.01 (urgent ")
    assert "errors>0" not in err


def test_fail_on_not_met_exits_0(runs: Path) -> None:
    code, _, err = _report(
        str(runs / "run.jsonl"),
        "--labels",
        str(runs / "labels.csv"),
        "--fail-on",
        "ece>0.99,near-uniform>0.5,errors>0,desk.accuracy<0",
    )
    assert (code, err) == (0, "")


def test_fail_on_changed_over_two_runs(runs: Path) -> None:
    code, _, err = _report(
        str(runs / "run.jsonl"), str(runs / "after.jsonl"), "--fail-on", "impact.changed>0"
    )
    assert (code, err) == (0, "")
    code, _, err = _report(
        str(runs / "run.jsonl"), str(runs / "after.jsonl"), "--fail-on", "desk.changed>0"
    )
    assert code == 1 and "desk.changed>0 (desk " in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--fail-on", "ece>0.1"],
            "--fail-on ece>0.1: nothing to measure it on (it needs --labels)",
            id="a-metric-without-labels-is-not-a-silent-pass",
        ),
        pytest.param(
            ["--fail-on", "eec>0.1"], "--fail-on: unknown name 'eec' in 'eec>0.1'", id="unknown"
        ),
        pytest.param(
            ["--fail-on", "ece=0.1"], "--fail-on: 'ece=0.1' is not NAME>NUMBER", id="no-operator"
        ),
        pytest.param(
            ["--fail-on", "changed>0"],
            "--fail-on changed>0: nothing to measure it on (it needs two runs)",
            id="changed-needs-two-runs",
        ),
        pytest.param(
            ["--target-precision", "1.5", "--labels", "x"],
            "--target-precision takes a precision in (0, 1], got 1.5",
            id="target-out-of-range",
        ),
        pytest.param(
            ["--target-precision", "0.9"],
            "--target-precision needs --labels: precision is measured on labels",
            id="target-needs-labels",
        ),
    ],
)
def test_usage_errors_exit_2_in_one_line(runs: Path, args: list[str], message: str) -> None:
    code, _, err = _report(str(runs / "run.jsonl"), *args)
    assert code == 2
    assert error_line(err).startswith(message)


def test_three_runs_is_a_usage_error(runs: Path) -> None:
    run = str(runs / "run.jsonl")
    code, _, err = _report(run, run, run)
    assert code == 2 and "report takes one run, or two to compare" in error_line(err)


def test_bad_input_names_file_and_line(runs: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = (runs / "run.jsonl").read_text(encoding="utf-8").splitlines()
    bad.write_text("\n".join([lines[0], lines[1], "{not json", lines[2]]) + "\n", encoding="utf-8")
    code, _, err = _report(str(bad))
    assert code == 2
    assert error_line(err).startswith(f"{bad}:3: not a JSON record")
    code, _, err = _report(str(tmp_path / "missing.jsonl"))
    assert code == 2 and error_line(err).startswith(f"{tmp_path / 'missing.jsonl'}: cannot read")
    not_record = tmp_path / "other.jsonl"
    not_record.write_text('{"id": 1, "text": "a state, not a record"}\n', encoding="utf-8")
    code, _, err = _report(str(not_record))
    assert code == 2 and error_line(err) == f"{not_record}:1: not a batch record: missing 'answers'"


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        pytest.param("urgent", "maybe", "question 'urgent' is noul: label true/false", id="noul"),
        pytest.param(
            "desk", "biling", "question 'desk': 'biling' is not one of its options", id="choice"
        ),
        pytest.param(
            "impact", "7", "question 'impact': '7' is neither a level index nor", id="score"
        ),
    ],
)
def test_a_label_that_does_not_fit_names_the_labels_line(
    runs: Path, tmp_path: Path, column: str, value: str, message: str
) -> None:
    rows = _labels_rows()
    rows[5][column] = value
    labels = tmp_path / "labels.csv"
    _write_csv(labels, rows)
    code, _, err = _report(str(runs / "run.jsonl"), "--labels", str(labels))
    assert code == 2
    assert error_line(err) == f"{labels}:7: {message}" or error_line(err).startswith(
        f"{labels}:7: {message}"
    )


def test_stray_label_columns_and_ids_are_warned_about(runs: Path, tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        '{"id": "t1", "desk": "billing", "mood": "sunny"}\n{"id": "nobody", "desk": "billing"}\n',
        encoding="utf-8",
    )
    code, data, err = _report(str(runs / "run.jsonl"), "--labels", str(labels))
    assert code == 0
    assert data["labelled"] == 1
    assert (
        f"toolnexus: warning: {labels}: column 'mood' matches no question key of the run (its "
        "keys: 'urgent', 'desk', 'impact'); ignored"
    ) in err
    assert f"toolnexus: warning: {labels}: 1 labelled ids have no answered record" in err


# --- batch's own quirks: errors, repeated ids, a killed run --------------------------------


def test_error_records_are_counted_by_code(tmp_path: Path) -> None:
    q = tmp_path / "q.yaml"
    q.write_text(QUESTIONS, encoding="utf-8")
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"e{i}", "text": f"s{i}"}) + "\n" for i in range(5)))
    out = tmp_path / "run.jsonl"
    with Loopback() as server:
        server.push(Fault.http(500), Fault.http(500))
        ran = run_cli(
            "batch",
            str(q),
            str(src),
            "--id-field",
            "id",
            "--state-field",
            "text",
            "--concurrency",
            "1",
            "--retries",
            "0",
            "--base-url",
            server.base_url,
            "-o",
            str(out),
        )
    assert ran.code == 3
    code, data, err = _report(str(out), "--fail-on", "errors>1")
    assert code == 1 and "errors>1 (urgent 2 [first ids e0, e1], desk 2 [first ids e0, e1]" in err
    assert data["runs"][0]["errors"] == {"backend_http": 2}
    assert data["questions"]["desk"]["n"] == 3
    assert data["questions"]["desk"]["errors"] == {"backend_http": 2}


def test_the_last_record_of_a_repeated_id_counts(runs: Path, tmp_path: Path) -> None:
    """An uncompacted --retry-errors run holds an error record, then the retried record."""
    lines = (runs / "run.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    err_line = json.dumps({"id": first["id"], "error": {"code": "backend_http", "message": "x"}})
    run = tmp_path / "retried.jsonl"
    run.write_text("\n".join([err_line, *lines]) + "\n", encoding="utf-8")
    _, base, _ = _report(str(runs / "run.jsonl"))
    code, data, _ = _report(str(run))
    assert code == 0
    assert data["records"] == N and data["runs"][0]["errors"] == {}
    assert data["questions"] == base["questions"]


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_killed_runs_cut_last_line_is_skipped(runs: Path, tmp_path: Path, suffix: str) -> None:
    source = (runs / f"run{suffix}").read_bytes()
    cut = source.rstrip(b"\n]")
    cut = cut[: len(cut) - 40]  # the last record, half written, no newline
    run = tmp_path / f"killed{suffix}"
    run.write_bytes(cut)
    code, data, err = _report(str(run))
    assert code == 0, err
    assert data["records"] == N - 1


# --- output ------------------------------------------------------------------------------


def test_output_file_and_its_format_from_the_name(runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    ran = run_cli("report", str(runs / "run.jsonl"), "-o", str(out))
    assert (ran.code, ran.out) == (0, "")
    assert json.loads(out.read_text(encoding="utf-8"))["records"] == N
    out = tmp_path / "r.txt"
    assert run_cli("report", str(runs / "run.jsonl"), "-o", str(out)).code == 0
    assert out.read_text(encoding="utf-8").startswith(f"run {runs / 'run.jsonl'}: {N} records")


def test_table_is_plain_words_when_piped(runs: Path) -> None:
    ran = run_cli(
        "report", str(runs / "run.jsonl"), "--labels", str(runs / "labels.csv"), "--format", "table"
    )
    assert ran.code == 0
    assert "\x1b[" not in ran.out and "█" not in ran.out
    assert "#" in ran.out  # the in-terminal charts, in plain characters
    assert "urgent: reliability (ece " in ran.out


class _Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.svgs = 0
        self.charts = 0
        self.scripts: list[dict[str, str | None]] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "svg":
            self.svgs += 1
        if tag == "figure" and "chart" in (a.get("class") or ""):
            self.charts += 1
        if tag == "script":
            self.scripts.append(a)
        for name in ("src", "href"):
            value = a.get(name)
            if value and not value.startswith("#"):
                self.links.append(value)


def _charts_expected(data: dict[str, Any]) -> int:
    """One distribution per question; per labelled question a reliability diagram, and a
    confusion heatmap for choice and score; a before/after diagram for a recalibrated one, a
    one-vs-rest diagram for a choice with an option shown (issue 24); per compared question
    a comparison chart."""
    n = 0
    for q in data["questions"].values():
        n += 1
        if q["labelled"]:
            n += 1 + ("confusion" in q["metrics"]) + ("recalibrated" in q)
            n += any(o["skipped"] is None for o in q["metrics"].get("per_option", ()))
    if data["comparison"]:
        n += len(data["comparison"]["questions"])
    return n


@pytest.mark.parametrize("two", [False, True], ids=["one-run", "two-runs"])
def test_html_is_self_contained_with_one_svg_per_chart(
    runs: Path, tmp_path: Path, two: bool
) -> None:
    args = [str(runs / "run.jsonl"), *([str(runs / "after.jsonl")] if two else [])]
    args += ["--labels", str(runs / "labels.csv")]
    out = tmp_path / "report.html"
    ran = run_cli("report", *args, "--format", "html", "-o", str(out))
    assert ran.code == 0, ran.stderr
    page = out.read_text(encoding="utf-8")
    parser = _Html()
    parser.feed(page)
    parser.close()
    _, data, _ = _report(*args, "--format", "json")
    assert parser.charts == _charts_expected(data) > 0
    assert parser.svgs == parser.charts  # one <svg> per chart, nothing else drawn
    assert parser.scripts == [] and parser.links == []  # nothing loaded from elsewhere
    assert check_self_contained(page) == parser.svgs
    assert "http://" not in page.replace("http://www.w3.org/", "")
    assert "https://" not in page
    assert page.startswith("<!DOCTYPE html>")


# --- start-up --------------------------------------------------------------------------------

_PROBE = """
import atexit, json, sys
def report():
    top = {m.split(".")[0] for m in sys.modules}
    heavy = sorted(top & {"httpx", "aiohttp", "matplotlib", "numpy"})
    with open(sys.argv[1], "w") as f:
        json.dump(heavy, f)
atexit.register(report)
import toolnexus.cli.app
toolnexus.cli.app.main(sys.argv[2:])
"""


@pytest.mark.parametrize(
    ("args", "heavy"),
    [
        pytest.param(["--format", "json"], [], id="json-imports-no-chart-library-and-no-http"),
        pytest.param(["--format", "table"], [], id="table-too"),
        pytest.param(["--format", "html"], ["matplotlib", "numpy"], id="html-imports-matplotlib"),
    ],
)
def test_only_the_html_path_imports_the_chart_library(
    runs: Path, tmp_path: Path, args: list[str], heavy: list[str]
) -> None:
    import subprocess
    import sys

    seen = tmp_path / "modules.json"
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _PROBE,
            str(seen),
            "report",
            str(runs / "run.jsonl"),
            *args,
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(seen.read_text(encoding="utf-8")) == heavy


def test_the_demo_labels_fit_the_demo_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make demo` ends with `toolnexus report` on its batch output and examples/guard-labels.csv;
    the same batch, replayed from recordings/, is fully labelled by that file."""
    from paths import REPO

    monkeypatch.chdir(REPO)
    out = tmp_path / "guard.jsonl"
    ran = run_cli(
        "batch", "questions/guard.yaml", "examples/states/guard-*", "--replay", "recordings/",
        "--ordered", "-o", str(out),
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    code, data, err = _report(str(out), "--labels", "examples/guard-labels.csv")
    assert (code, err) == (0, "")
    assert data["labelled"] == data["records"] == 3
    assert data["questions"]["risk"]["labelled"] == 3
    # the tour shows a flagged answer: the guard set has an uncertain one
    assert any(q["flags"]["uncertain"]["n"] for q in data["questions"].values())


def test_jsonl_lines_are_judged_as_json_loads_would(runs: Path, tmp_path: Path) -> None:
    """The reader calls the C scanner directly; anything it does not take whole goes through
    json.loads: leading blanks and CRLF are fine, extra data after a record is an error."""
    lines = (runs / "run.jsonl").read_text(encoding="utf-8").splitlines()
    ok = tmp_path / "ok.jsonl"
    ok.write_bytes(("   " + lines[0] + "\r\n" + "\r\n".join(lines[1:]) + "\r\n").encode())
    code, data, err = _report(str(ok))
    assert (code, data["records"]) == (0, N), err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines[0] + "\n" + lines[1] + ' {"id": 2}\n', encoding="utf-8")
    code, _, err = _report(str(bad))
    assert code == 2
    assert error_line(err) == f"{bad}:2: not a JSON record: Extra data"


@pytest.mark.parametrize(("given", "kept"), [(None, "1"), ("4", "4")])
def test_report_runs_openblas_on_one_thread_unless_the_user_says(
    runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str | None, kept: str
) -> None:
    """report_cmd: numpy's OpenBLAS would start a thread per CPU as it loads, spinning while the
    workers count the run; the report never multiplies matrices, so it asks for one thread,
    and a user's own setting wins."""
    if given is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", given)
    ran = run_cli(
        "report", str(runs / "run.jsonl"), "--labels", str(runs / "labels.csv"),
        "-o", str(tmp_path / "out.json"),
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    assert os.environ["OPENBLAS_NUM_THREADS"] == kept
