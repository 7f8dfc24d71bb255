"""``toolnexus report`` against issue 31 (items 7, 9, 15, 19): every section names its run,
labels that match nothing say what did not match, count columns survive a narrow terminal, and a
cut last line is warned about. Inputs: the golden batch runs kept under tests/golden/."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clirun import run_cli
from paths import TESTS

INPUTS = TESTS / "golden" / "report-inputs"


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("run.jsonl", "after.jsonl", "labels.csv"):
        shutil.copy(INPUTS / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("toolnexus: warning:")]


# --- item 19 --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tail", "warned"),
    [
        pytest.param(b'{"id": "t40", "answers": {"urg', True, id="cut-mid-record"),
        pytest.param(b'{"id": "t40", "answers": {}, "err', True, id="cut-mid-key"),
        pytest.param(None, False, id="whole-record-without-newline"),
    ],
)
def test_report_warns_once_about_a_cut_last_jsonl_line(
    run_dir: Path, tail: bytes | None, warned: bool
) -> None:
    """Issue 31 item 19: "report drops a partial last JSONL line (from a disk-full run) without
    a warning": one warning line naming the file and the line."""
    run = run_dir / "run.jsonl"
    data = run.read_bytes()
    run.write_bytes(data + tail if tail is not None else data.rstrip(b"\n"))
    ran = run_cli("report", "run.jsonl", "--format", "json")
    assert ran.code == 0, ran.stderr
    if warned:
        assert _warnings(ran.stderr) == [
            "toolnexus: warning: run.jsonl:41: the last line is cut short (no newline, not "
            "JSON: a run killed or out of disk mid-write); left out of the report (batch "
            "--resume asks its state again)"
        ]
    else:
        assert _warnings(ran.stderr) == []


# --- item 9 ---------------------------------------------------------------------------------


def _labels(path: Path, header: str, ids: str) -> None:
    rows = [header] + [f"{ids}{i},billing" for i in range(40)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")


def test_fail_on_with_labels_that_match_no_id_says_so(run_dir: Path) -> None:
    """Issue 31 item 9: "`report --labels nomatch.csv --fail-on ...` says the condition 'needs
    --labels' though --labels was given and matched no id"."""
    _labels(run_dir / "nomatch.csv", "id,desk", "x")
    ran = run_cli("report", "run.jsonl", "--labels", "nomatch.csv", "--fail-on", "ece>0.1")
    assert ran.code == 2
    last = ran.stderr.splitlines()[-1]
    assert "needs --labels" not in last
    assert last == (
        "toolnexus: --fail-on ece>0.1: nothing to measure it on (--labels nomatch.csv matched no "
        "id of run.jsonl (its 'id' column holds ids such as 'x0', 'x1', 'x2'))"
    )


def test_a_misspelled_only_answer_column_is_named_not_the_ids(run_dir: Path) -> None:
    """Issue 31 item 9: "a labels file whose only answer column is misspelled warns that
    labelled ids have no record, though they do": the column is what did not match."""
    _labels(run_dir / "dsk.csv", "id,dsk", "t")
    ran = run_cli("report", "run.jsonl", "--labels", "dsk.csv", "--fail-on", "accuracy<0.5")
    assert ran.code == 2
    assert _warnings(ran.stderr) == [
        "toolnexus: warning: dsk.csv: column 'dsk' matches no question key of the run (its "
        "keys: 'urgent', 'desk', 'impact'); ignored"
    ]
    assert ran.stderr.splitlines()[-1] == (
        "toolnexus: --fail-on accuracy<0.5: nothing to measure it on (--labels dsk.csv: no "
        "label column matches a question key of the run (its keys: 'urgent', 'desk', 'impact'))"
    )


# --- item 7 ---------------------------------------------------------------------------------


def test_every_section_of_a_two_run_report_names_its_run(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31 item 7: "A two-run report shows the first run in its 'Questions' and 'Against
    labels' sections (table and HTML) without saying so, while --fail-on judges the last run.
    Every section names its run." (the JSON: ``questions_run``)."""
    pytest.importorskip("matplotlib")
    named = "before run.jsonl; --fail-on judges the after run, after.jsonl"
    args = ("report", "run.jsonl", "after.jsonl", "--labels", "labels.csv")
    table = run_cli(*args, "--format", "table")
    assert table.code == 0, table.stderr
    assert f"\nquestions ({named})\n" in table.out
    assert f"\nagainst labels ({named})\n" in table.out
    from toolnexus.report import charts

    # the headings are what is checked here; the charts' drawing costs seconds
    monkeypatch.setattr(charts, "_svg", lambda fig: "<svg></svg>")
    html = run_cli(*args, "--format", "html")
    assert html.code == 0, html.stderr
    for section in ("Questions", "Against labels"):
        assert f'<h2>{section} <span class="muted">({named})</span></h2>' in html.out
    assert '<h2>Before and after <span class="muted">(both runs)</span></h2>' in html.out
    data = run_cli(*args, "--format", "json")
    assert data.code == 0, data.stderr
    assert '"questions_run": "run.jsonl"' in data.out


# --- item 15 --------------------------------------------------------------------------------

LONG_LEVEL = "some of the service, in one region, for some customers"
LONG_OPTION = "technical-support-escalation-team"
LONG_KEY = "which_desk_should_own_this_ticket_first"


@pytest.fixture
def long_labels(run_dir: Path) -> Path:
    """The golden run with a long question key, option name and level label."""
    for name, quote in (("run.jsonl", '"'), ("labels.csv", "")):
        text = (run_dir / name).read_text(encoding="utf-8")
        text = text.replace(f"{quote}desk{quote}", f"{quote}{LONG_KEY}{quote}")
        text = text.replace("technical", LONG_OPTION)
        level = f'"{LONG_LEVEL}"' if name == "labels.csv" else LONG_LEVEL
        (run_dir / name).write_text(text.replace("some of it", level), encoding="utf-8")
    return run_dir


def _section(out: str, head: str) -> list[str]:
    """The lines of the table whose header line starts with ``head``, header included."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(head))
    end = next((i for i in range(start + 2, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


@pytest.mark.parametrize("columns", [60, 80, 100])
def test_narrow_tables_keep_every_count_column(
    long_labels: Path, columns: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31 item 15: "at 80 columns drops the score histogram's n and share; at 60 the
    summary loses n and conf; the reliability table's bar column has no header. At 80 and 100
    columns every count column stays; only text labels may be shortened." """
    monkeypatch.setenv("COLUMNS", str(columns))
    ran = run_cli("report", "run.jsonl", "--labels", "labels.csv", "--format", "table")
    assert ran.code == 0, ran.stderr
    out = ran.out
    assert max(len(line) for line in out.splitlines()) <= columns
    lines = out.splitlines()
    # Issue 43 item 10: a table whose names and numbers do not fit whole is stacked, one
    # `header: cell` line each, instead of cutting the long key.
    if f"question: {LONG_KEY}" in lines:
        at = lines.index(f"question: {LONG_KEY}")
        assert lines[at + 2 : at + 5] == ["  n: 40", "  errors: 0", "  conf: 0.39"]
    else:
        summary = _section(out, "question ")
        assert summary[0].split()[2:5] == ["n", "errors", "conf"]
        assert summary[3].split()[2:5] == ["40", "0", "0.39"]  # the long key's row
    levels = _section(out, "level ")
    assert levels[0].split()[1:] == ["n", "share"]
    rows = [line for line in levels[2:] if line[:1].isdigit()]  # a long label wraps
    assert [line.split()[-3:-1] for line in rows] == [
        ["12", "30%"], ["16", "40%"], ["12", "30%"],
    ]  # fmt: skip
    assert rows[1].startswith("1 some of the")  # the label itself may wrap, never be cut
    reliability = [line for line in lines if " confidence " in line and "gap" in line]
    assert len(reliability) == 3
    for head in reliability:
        assert head.split()[-6:] == ["n", "confidence", "accuracy", "gap", "accuracy", "bar"]
    if "label \\ answer: billing" in lines:
        at = lines.index("label \\ answer: billing")
        assert lines[at + 1 : at + 4] == [
            "  billing: 2", "  shipping: 6", f"  {LONG_OPTION}: 6",
        ]  # fmt: skip
    else:
        confusion = _section(out, "label ")
        assert [line.split()[-3:] for line in confusion[2:5]] == [
            ["2", "6", "6"], ["3", "2", "8"], ["4", "6", "3"],
        ]  # fmt: skip
    if f"choice: {LONG_KEY}" in lines:
        at = lines.index(f"choice: {LONG_KEY}")
        assert lines[at + 1 : at + 3] == ["  labelled: 40", "  accuracy: 0.175"]
    else:
        choice = _section(out, "choice ")
        assert choice[0].split()[1:] == [
            "labelled", "accuracy", "brier", "log_loss", "ece", "macro_f1",
        ]  # fmt: skip
        assert choice[2].split()[1:] == ["40", "0.175", "0.904", "1.687", "0.416", "0.174"]
    if columns >= 80:
        score = _section(out, "score ")
        assert score[0].split()[1:] == [
            "labelled", "accuracy", "within_one", "mae", "brier", "rps", "ece",
        ]  # fmt: skip
        assert score[2].split()[1:] == [
            "30", "0.267", "0.900", "0.763", "1.005", "0.303", "0.441",
        ]  # fmt: skip
