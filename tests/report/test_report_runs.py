"""The run reader: JSONL lines are parsed by orjson for speed, and judged exactly as
``json.loads`` judges them. Whatever orjson refuses (NaN, a lone surrogate escape, an integer
past 64 bits, a BOM, stray bytes) takes ``json.loads``' path, so a report reads the same records,
and names the same line with the same reason, as it did with the standard library alone."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paths import TESTS
from toolnexus.core.errors import ReportError
from toolnexus.report.inputs import ReportInputError
from toolnexus.report.runs import iter_records


def _reference(data: bytes) -> list[tuple[int, Any]] | str:
    """What the reader must yield: json.loads per line over UTF-8 text, blank lines skipped, a
    last line without its newline that does not parse dropped; else the first error."""
    out: list[tuple[int, Any]] = []
    for n, line in enumerate(data.split(b"\n"), 1):
        complete = n < data.count(b"\n") + 1
        if not line and not complete:
            break
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            return f":{n}: not UTF-8 text"
        try:
            out.append((n, json.loads(text)))
        except ValueError as e:
            if not text.strip():
                continue
            if not complete:
                break
            reason = e.msg if isinstance(e, json.JSONDecodeError) else str(e)
            return f":{n}: not a JSON record: {reason}"
    return out


def _read(path: Path) -> list[tuple[int, Any]] | str:
    try:
        return list(iter_records(str(path), "jsonl"))
    except ReportInputError as e:
        return str(e).removeprefix(str(path))


def _same(a: Any, b: Any) -> bool:
    """Equality where NaN equals NaN (json.loads reads the NaN literal)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


ODD_LINES = [
    b'{"id": "t1", "n": NaN}',
    b'{"id": "t1", "n": -Infinity}',
    b'{"id": "\\ud800 lone"}',
    b'{"id": 123456789012345678901234567890}',
    b'\xef\xbb\xbf{"id": "bom"}',
    b'{"id": "caf\xc3\xa9"}',
    b'{"id": "bad \xff byte"}',
    b'   {"id": "leading blanks"}',
    b'{"id": "crlf"}\r',
    b'{"id": "extra"} {"id": 2}',
    b'{"id": "trailing comma",}',
    b"[1, 2, 3]",
    b'"just a string"',
    b"",
    b"   \t",
    b"{not json",
    b'{"id": "deep", "x": ' + b"[" * 200 + b"]" * 200 + b"}",
    b'{"id": "dup", "id": "last wins"}',
    b'{"id": "u2028 \xe2\x80\xa8 inside"}',
]


@pytest.mark.parametrize("line", ODD_LINES, ids=range(len(ODD_LINES)))
def test_each_odd_line_is_judged_as_json_loads_judges_it(tmp_path: Path, line: bytes) -> None:
    for data in (line + b"\n", b'{"id": "a"}\n' + line + b"\n", b'{"id": "a"}\n' + line):
        path = tmp_path / "run.jsonl"
        path.write_bytes(data)
        got, want = _read(path), _reference(data)
        assert _same(got, want) if not isinstance(want, str) else got == want, data


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(ODD_LINES), max_size=6), st.booleans())
def test_any_mix_of_lines_reads_as_json_loads_reads_it(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], final_newline: bool
) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline else b"")
    path = tmp_path_factory.mktemp("mix") / "run.jsonl"
    path.write_bytes(data)
    got, want = _read(path), _reference(data)
    assert _same(got, want) if not isinstance(want, str) else got == want


def test_a_record_is_the_same_python_value_either_way(tmp_path: Path) -> None:
    """The fast path's values are json.loads' values: ints stay ints, floats round-trip."""
    record = {
        "id": "t0",
        "usage": {"input_tokens": 600, "cost": None},
        "answers": {"urgent": {"type": "noul", "noul": 0.1 + 0.2, "flags": []}},
        "calibrated": True,
    }
    path = tmp_path / "run.jsonl"
    text = json.dumps(record, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")
    ((n, got),) = list(iter_records(str(path)))
    assert n == 1 and got == json.loads(text)
    assert type(got["usage"]["input_tokens"]) is int
    assert got["answers"]["urgent"]["noul"] == 0.1 + 0.2


def test_an_integer_past_64_bits_outside_the_id_reads_as_the_nearest_float(
    tmp_path: Path,
) -> None:
    """The one documented difference from json.loads: orjson turns such an integer into a
    float. Only an id must be exact (it joins labels and runs), and an id is."""
    big = 123456789012345678901234567890
    path = tmp_path / "run.jsonl"
    path.write_text(f'{{"id": {big}, "usage": {{"input_tokens": {big}}}}}\n', encoding="utf-8")
    ((_, got),) = list(iter_records(str(path)))
    assert got["id"] == big and type(got["id"]) is int
    path.write_text(f'{{"id": "t1", "usage": {{"input_tokens": {big}}}}}\n', encoding="utf-8")
    ((_, got),) = list(iter_records(str(path)))
    assert got["usage"]["input_tokens"] == float(big)


# --- a record batch never writes is refused in words, never counted as garbage ---------------

GOOD = (
    '{"id":"t0","model":"jev-1.13.0","calibrated":true,'
    '"usage":{"input_tokens":600,"output_tokens":90,"cost":null},"answers":{'
    '"urgent":{"type":"noul","noul":0.27,"band":"uncertain","flags":["uncertain"]},'
    '"desk":{"type":"choice","choice":"technical","probabilities":{"billing":0.21,'
    '"shipping":0.39,"technical":0.4},"confidence":0.87,"near_uniform":false,"flags":[]},'
    '"impact":{"type":"score","score":1.74,"legend":{"0":"nothing","1":"some","2":"all"},'
    '"probabilities":{"0":0.13,"1":0.0,"2":0.87},"confidence":0.78,"level":2,"flags":[]}}}'
)

BAD_FIELDS = [
    ('"level":2', '"level":15', "answer 'impact': level is 15, not a level index 0..9"),
    ('"level":2', '"level":-1', "answer 'impact': level is -1, not a level index 0..9"),
    ('"level":2', '"level":true', "answer 'impact': level is True, not a level index 0..9"),
    ('"level":2', '"level":2.0', "answer 'impact': level is 2.0, not a level index 0..9"),
    ('"score":1.74', '"score":"1.74"', "answer 'impact': score is '1.74', not an expected level"),
    ('"noul":0.27', '"noul":"0.27"', "answer 'urgent': noul is '0.27', not a probability"),
    ('"noul":0.27', '"noul":7', "answer 'urgent': noul is 7, not a probability in [0, 1]"),
    ('"noul":0.27', '"noul":-0.5', "answer 'urgent': noul is -0.5, not a probability"),
    ('"noul":0.27', '"noul":NaN', "answer 'urgent': noul is nan, not a probability"),
    ('"noul":0.27', '"noul":null', "answer 'urgent': noul is None, not a probability"),
    ('"noul":0.27,', "", "answer 'urgent' has no 'noul'"),
    ('"band":"uncertain"', '"band":5', "answer 'urgent': band is 5, not yes, no or uncertain"),
    ('"confidence":0.87', '"confidence":"x"', "answer 'desk': confidence is 'x', not a"),
    ('"billing":0.21', '"billing":"0.21"', "answer 'desk': probabilities['billing'] is '0.21'"),
    (
        '"probabilities":{"billing":0.21,"shipping":0.39,"technical":0.4}',
        '"probabilities":[0.21,0.39,0.4]',
        "answer 'desk': probabilities is [0.21, 0.39, 0.4], not an object of probabilities",
    ),
    ('"choice":"technical"', '"choice":3', "answer 'desk': choice is 3, not an option name"),
    ('"flags":["uncertain"]', '"flags":"uncertain"', "answer 'urgent': flags is 'uncertain',"),
    ('"flags":["uncertain"]', '"flags":[["x"]]', "answer 'urgent': flags holds ['x'], not a"),
    ('"input_tokens":600', '"input_tokens":"600"', "usage.input_tokens is '600', not a token"),
    ('"input_tokens":600', '"input_tokens":-1', "usage.input_tokens is -1, not a token count"),
    ('"cost":null', '"cost":"free"', "usage.cost is 'free', not a cost"),
    ('"cost":null', '"cost":Infinity', "usage.cost is inf, not a cost"),
    ('"model":"jev-1.13.0"', '"model":["a"]', "model is ['a'], not a model name"),
    ('"id":"t0"', '"id":[1]', "id is [1], not a string or an integer"),
    ('"id":"t0"', '"id":1.5', "id is 1.5, not a string or an integer"),
    ('"answers":{"urgent":', '"answers":{"x":[],"urgent":', "answer 'x' is [], not an object"),
    (
        '"answers":{"urgent":',
        '"answers":{"x":{"type":"choice","choice":"a","probabilities":{"a":1}},"urgent":',
        None,  # an integer 1 is a probability: this record is fine
    ),
    # issue 42 item 5: "in a record whose invalid is null, a choice or score distribution that
    # does not sum to 1 within validate_decision's tolerance, or a choice that is not among the
    # record's probability keys, is an error at run.jsonl:LINE"
    pytest.param(
        '"billing":0.21',
        '"billing":0.5',
        "answer 'desk': probabilities sum to 1.29, not 1 ± 0.02, in a record whose invalid is null",
        id="choice-sum-1.29",
    ),
    pytest.param(
        '"0":0.13',
        '"0":0.10',
        "answer 'impact': probabilities sum to 0.97, not 1 ± 0.02",
        id="score-sum-0.97",
    ),
    pytest.param('"0":0.13', '"0":0.15', None, id="score-sum-1.02-within-tolerance"),
    pytest.param(
        '"answers":',
        '"invalid":false,"answers":',
        "invalid is False, not null or a validation message",
        id="invalid-false-is-not-null",
    ),
    pytest.param(
        '"choice":"technical"',
        '"choice":"sales"',
        "answer 'desk': choice 'sales' is not one of its probabilities' keys (billing, shipping,",
        id="choice-not-a-key",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [pytest.param(*b, id=b[1]) if type(b) is tuple else b for b in BAD_FIELDS],
)
def test_a_field_batch_never_writes_is_named_with_its_file_and_line(
    tmp_path: Path, old: str, new: str, message: str | None
) -> None:
    """Bad input gets one line naming the file, the line and the question key (exit 2), not a
    traceback, and not a report that counted garbage (a level of -1 used to count as level 9,
    a level of 15 ended in a traceback)."""
    from clirun import error_line, run_cli

    assert old in GOOD
    run = tmp_path / "run.jsonl"
    run.write_text(GOOD + "\n" + GOOD.replace(old, new, 1).replace('"t0"', '"t1"') + "\n")
    ran = run_cli("report", str(run), "--format", "json")
    if message is None:
        assert ran.code == 0, ran.stderr
        return
    assert ran.code == 2, ran.out
    line = error_line(ran.stderr)
    assert line.startswith(f"{run}:2: not a batch record: {message}"), line
    assert "Traceback" not in ran.stderr


def test_a_record_with_invalid_set_is_counted_as_invalid_not_refused(tmp_path: Path) -> None:
    """Issue 42 item 5: "A record with invalid set is counted as invalid, as today": its answers
    may hold what validate_decision refused, and the report counts it."""
    from clirun import run_cli

    bad = GOOD.replace('"billing":0.21', '"billing":0.5').replace(
        '"choice":"technical"', '"choice":"sales"'
    )
    bad = bad.replace('"answers":', '"invalid":"answer \'desk\': chose \'sales\'","answers":')
    bad = bad.replace('"flags":[]}', '"flags":["invalid"]}', 1)
    run = tmp_path / "run.jsonl"
    run.write_text(GOOD + "\n" + bad.replace('"t0"', '"t1"') + "\n")
    ran = run_cli("report", str(run), "--format", "json")
    assert ran.code == 0, ran.stderr
    assert json.loads(ran.out)["questions"]["desk"]["invalid"] == 1


def test_a_parquet_run_refuses_a_distribution_batch_never_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42 item 5 in a Parquet run counted from its columns: a row group holding such a
    row is left to the record path, which names the row, as for JSONL."""
    pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
    from toolnexus import ChoiceQuestion, NoulQuestion, ScoreQuestion
    from toolnexus.records import arrow
    from toolnexus.report.reader import read_run

    monkeypatch.setattr(arrow, "ROW_GROUP_RECORDS", 2)  # two row groups: the column path
    qs = {"urgent": NoulQuestion("U?"),
          "desk": ChoiceQuestion("D?", {"billing": "b", "shipping": "s", "technical": "t"}),
          "impact": ScoreQuestion("I?", ["nothing", "some", "all"])}  # fmt: skip
    records = [json.loads(GOOD.replace('"t0"', f'"t{i}"')) for i in range(4)]
    records[3]["answers"]["desk"]["probabilities"]["billing"] = 0.5
    run = tmp_path / "run.parquet"
    arrow.write_parquet_run(run, records, qs)
    with pytest.raises(ReportError, match=r":4: not a batch record: answer 'desk': probabilities"):
        read_run(str(run), None, jobs=1)
    records[3]["invalid"] = "answer 'desk': probabilities sum to 1.29, not 1 ± 0.02"
    arrow.write_parquet_run(run, records, qs)
    assert read_run(str(run), None, jobs=1).records == 4


def test_a_record_that_is_not_an_object_is_named(tmp_path: Path) -> None:
    from clirun import error_line, run_cli

    run = tmp_path / "run.jsonl"
    for body, shown in (("[1, 2]", "[1, 2]"), ("7", "7"), ('"t0"', "'t0'")):
        run.write_text(GOOD + "\n" + body + "\n")
        ran = run_cli("report", str(run), "--format", "json")
        assert ran.code == 2
        assert error_line(ran.stderr) == (
            f"{run}:2: not a batch record: a record is a JSON object, not {shown}"
        )


# --- a run or labels file that can be read only once ----------------------------------------

INPUTS = TESTS / "golden" / "report-inputs"


def _report_process(*args: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "toolnexus", "report", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
    )


def test_a_run_through_a_pipe_reports_as_the_file_does() -> None:
    """Sniffing the format used to eat the pipe's first 4 KiB, so a piped run failed at line 1
    ("Extra data"); a pipe is now read from a temporary copy, which can be sniffed, read twice
    (a repeated id) and cut in chunks."""
    data = (INPUTS / "run.jsonl").read_bytes()
    data += data.splitlines(keepends=True)[3]  # t3 again: the last record counts
    labels = str(INPUTS / "labels.csv")
    piped = _report_process("/dev/stdin", "--labels", labels, "--format", "json", stdin=data)
    assert piped.returncode == 0, piped.stderr
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
        f.write(data)
        f.flush()
        from_file = _report_process(f.name, "--labels", labels, "--format", "json", stdin=b"")
    want = json.loads(from_file.stdout)
    got = json.loads(piped.stdout)
    assert got["runs"][0].pop("path") == got.pop("questions_run") == "/dev/stdin"
    want["runs"][0].pop("path")
    want.pop("questions_run")
    assert got == want and got["records"] == 40


def test_labels_through_a_pipe_and_errors_name_the_pipe() -> None:
    labels = (INPUTS / "labels.csv").read_bytes()
    run = str(INPUTS / "run.jsonl")
    ok = _report_process(run, "--labels", "/dev/stdin", "--format", "json", stdin=labels)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["labelled"] > 0
    bad = _report_process(run, "--labels", "/dev/stdin", stdin=labels + b"t0,yes,billing,0\n")
    assert bad.returncode == 2
    assert bad.stderr.decode().strip() == (
        "toolnexus: /dev/stdin:42: id 't0' is labelled twice (first at line 2)"
    )
    broken = _report_process("/dev/stdin", stdin=b'{"id": "t0"}\n{bad\n')
    assert broken.returncode == 2
    assert broken.stderr.decode().startswith("toolnexus: /dev/stdin:1: not a batch record")


def test_a_labels_csv_saved_by_a_spreadsheet_reads_as_any_other(tmp_path: Path) -> None:
    """Spreadsheets save CSV with a byte-order mark and CRLF line ends; the BOM used to glue
    itself to the first header cell, so the 'id' column was not found."""
    from clirun import run_cli

    text = (INPUTS / "labels.csv").read_text(encoding="utf-8")
    excel = tmp_path / "labels.csv"
    excel.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    run = str(INPUTS / "run.jsonl")
    plain = run_cli("report", run, "--labels", str(INPUTS / "labels.csv"), "--format", "json")
    saved = run_cli("report", run, "--labels", str(excel), "--format", "json")
    assert (plain.code, saved.code) == (0, 0), saved.stderr
    assert json.loads(saved.out)["questions"] == json.loads(plain.out)["questions"]
    assert json.loads(saved.out)["labelled"] > 0


def test_a_labels_column_twice_is_refused_at_the_header(tmp_path: Path) -> None:
    """Which of two 'urgent' columns holds the label? Neither is guessed."""
    from toolnexus.report.labels import read_labels

    labels = tmp_path / "labels.csv"
    labels.write_text("id,urgent,desk,urgent\nt0,yes,billing,no\n", encoding="utf-8")
    with pytest.raises(ReportInputError) as e:
        read_labels(str(labels))
    assert str(e.value) == (
        f"{labels}:1: column 'urgent' appears twice; a question has one label column"
    )


def test_a_bad_csv_row_is_named_at_its_line_in_a_run_and_in_labels(tmp_path: Path) -> None:
    """Runs and labels read CSV through one reader (runs.csv_rows): a row of another width or
    one that is not UTF-8 is an error at its line, in either file."""
    from toolnexus.report.labels import read_labels
    from toolnexus.report.runs import iter_records

    labels = tmp_path / "labels.csv"
    labels.write_bytes(b"id,urgent\nt0,yes\n\nt1,yes,extra\n")
    with pytest.raises(ReportInputError, match=rf"^{labels}:4: 3 cells for 2 columns$"):
        read_labels(str(labels))
    labels.write_bytes(b"id,urgent\nt0,yes\nt1,\xff\n")
    with pytest.raises(
        ReportInputError,
        match=rf"^{labels}:3: not UTF-8 text \(byte 4\): the whole file must be UTF-8 text; ",
    ):
        read_labels(str(labels))
    run = tmp_path / "run.csv"
    run.write_bytes(b"id,model\nt0,m\nt1\n")
    with pytest.raises(ReportInputError, match=rf"^{run}:3: 1 cells for 2 columns$"):
        list(iter_records(str(run)))
    run.write_bytes(b"model\nm\n")
    with pytest.raises(ReportInputError, match=rf"^{run}:1: not a batch CSV file: no 'id' column"):
        list(iter_records(str(run)))
