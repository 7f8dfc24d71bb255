"""Issue 31 item 20: "CSV output writes an id that starts with =, +, - or @ raw (a formula when
Excel opens it) and raw control and bidi characters. Escape them in CSV output losslessly —
report and --resume read back exactly the original id (the README promises lossless CSV ids)."
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clirun import run_cli
from loopback import Loopback
from toolnexus.records.csvcodec import (
    CsvCodec,
    csv_line,
    escape_id,
    unescape_id,
)
from toolnexus.run.codecs import sink_for
from toolnexus.run.resume import LINES, read_ids

QUESTIONS = (
    "questions:\n  urgent:\n    type: noul\n    instructions: Does this need a human today?\n"
)
HOSTILE_IDS = [
    "=1+1",
    '=HYPERLINK("http://x","y")',
    "+33 1 23",
    "-5",
    "@SUM(A1)",
    "ok=1",  # not first: no formula
    "-",  # alone: no formula (eval's id for stdin), written as is
    "rtl\u202eevil",
    "iso\u2066late\u2069",
    "bell\x07",
    "nul\x00byte",
    "del\x7f",
    "c1\x85next",
    "tab\there",
    "\\u003d already",  # a backslash sequence that is text
]
BIDI = {
    "\u061c",
    "\u200e",
    "\u200f",
    *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
}


def _safe(cell: str) -> bool:
    """What a spreadsheet or terminal can show without running or reordering it."""
    return (
        (cell[:1] not in ("=", "+", "-", "@") or len(cell) == 1)
        and not any(unicodedata.category(c) == "Cc" or c in BIDI for c in cell)
        and "\u2028" not in cell
        and "\u2029" not in cell
    )


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=16))
def test_any_id_is_escaped_safe_and_read_back_exactly(item_id: str) -> None:
    """The property: escaped, no cell starts a formula or holds a control or bidi character;
    written as a CSV row and read back by the codec, the id is the original."""
    cell = escape_id(item_id)
    assert _safe(cell)
    assert unescape_id(cell) == item_id
    codec = CsvCodec(["id", "model"])
    line = csv_line(codec.columns, {"id": item_id, "model": "m"})
    assert line.count("\n") == 1
    row = next(csv.reader(io.StringIO(line)))
    assert codec.object_of(row)["id"] == item_id


def test_batch_csv_output_is_safe_and_report_and_resume_read_the_ids_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("q.yaml").write_text(QUESTIONS, encoding="utf-8")
    with open("in.jsonl", "w", encoding="utf-8") as f:
        for i in HOSTILE_IDS:
            f.write(json.dumps({"id": i, "text": "x"}) + "\n")
    with Loopback() as server:
        args = ("batch", "q.yaml", "in.jsonl", "--id-field", "id", "--state-field", "text",
                "--format", "csv", "--base-url", server.base_url, "-o", "out.csv")  # fmt: skip
        ran = run_cli(*args)
        assert ran.code == 0, ran.stderr
        sent = sum(server.requests.values())
        again = run_cli(*args, "--resume")
        assert again.code == 0, again.stderr
        assert sum(server.requests.values()) == sent, "an id was not recognised on resume"
    raw = Path("out.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(raw)))
    assert len(rows) == len(HOSTILE_IDS) + 1
    assert all(_safe(r[0]) for r in rows[1:]), [r[0] for r in rows]
    assert sorted(read_ids("out.csv", "csv", sink_for("csv").framing or LINES)) == sorted(
        HOSTILE_IDS
    )
    # report joins labels by the original ids (a labels file written by a script, as JSONL)
    with open("labels.jsonl", "w", encoding="utf-8") as f:
        for i in HOSTILE_IDS:
            f.write(json.dumps({"id": i, "urgent": True}) + "\n")
    report = run_cli("report", "out.csv", "--labels", "labels.jsonl", "--format", "json")
    assert report.code == 0, report.stderr
    assert json.loads(report.out)["labelled"] == len(HOSTILE_IDS)
    assert "have no answered record" not in report.stderr
