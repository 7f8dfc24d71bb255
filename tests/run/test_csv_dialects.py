"""Issue 31 item 14, the CSV dialects Excel writes: "A semicolon-separated CSV (European Excel)
fails with '--id-field 'id' is not a column ('id;text')' with no hint about the delimiter; a
cp1252 CSV fails row by row ('not UTF-8 (byte 7)') with no file-level hint." A header without a
comma but with ``;`` or tabs sets the delimiter (said on stderr); a file that is not UTF-8 is
refused once, at its line, with what to do; UTF-8 with a byte-order mark reads as UTF-8."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from clirun import run_cli
from paths import REPO, TESTS
from toolnexus.core.errors import RunError
from toolnexus.run.inputs import read_csv
from toolnexus.run.items import InputSpec

QUESTIONS = str(REPO / "questions" / "noul-small.yaml")
SPEC = InputSpec(id_field="id", state_fields=("text",))


@pytest.mark.parametrize(
    ("data", "note"),
    [
        pytest.param(
            b'id;text\r\nT-1;caf\xc3\xa9 au lait\r\nT-2;"a;b, c"\r\n', "semicolon", id="semicolon"
        ),
        pytest.param(b"id\ttext\r\nT-1\tcaf\xc3\xa9 au lait\r\nT-2\ta;b, c\r\n", "tab", id="tab"),
        pytest.param(
            b'\xef\xbb\xbfid,text\r\nT-1,caf\xc3\xa9 au lait\r\nT-2,"a;b, c"\r\n', None, id="bom"
        ),
    ],
)
def test_excel_dialects_read_the_same_states(
    tmp_path: Path, data: bytes, note: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in.csv"
    src.write_bytes(data)
    items = list(read_csv(str(src), SPEC))
    assert [(i.id, i.state, i.error) for i in items] == [
        ("T-1", "café au lait", None),
        ("T-2", "a;b, c", None),
    ]
    err = capsys.readouterr().err
    if note is None:
        assert err == ""
    else:
        assert err == (
            f"toolnexus: note: {src}: the header has no comma; read as {note}-separated\n"
        )


def test_a_cp1252_csv_is_refused_once_with_the_encoding_hint(tmp_path: Path) -> None:
    src = tmp_path / "latin.csv"
    src.write_bytes("id,text\r\nT-1,café\r\nT-2,naïve\r\nT-3,fine\r\n".encode("cp1252"))
    with pytest.raises(RunError) as e:
        list(read_csv(str(src), SPEC))
    assert e.value.message == (
        f"{src}:2: not UTF-8 (byte 8): the whole file must be UTF-8 text; a spreadsheet's plain "
        "'CSV' export is often Windows-1252: save it as 'CSV UTF-8', or convert it (iconv -f "
        "cp1252 -t utf-8)"
    )


def test_a_cp1252_batch_stops_before_sending_with_one_line(tmp_path: Path) -> None:
    src = tmp_path / "latin.csv"
    src.write_bytes("id,text\r\nT-1,café\r\nT-2,naïve\r\n".encode("cp1252"))
    ran = run_cli("batch", QUESTIONS, str(src), "--id-field", "id", "--state-field", "text",
                  "--dry-run")  # fmt: skip
    assert ran.code == 2
    assert ran.stderr.count("\n") == 1 and f"{src}:2: not UTF-8 (byte 8)" in ran.stderr


def test_report_reads_semicolon_labels_and_says_so(tmp_path: Path) -> None:
    inputs = TESTS / "golden" / "report-inputs"
    shutil.copy(inputs / "run.jsonl", tmp_path / "run.jsonl")
    text = (inputs / "labels.csv").read_text(encoding="utf-8")
    (tmp_path / "labels.csv").write_bytes(b"\xef\xbb\xbf" + text.replace(",", ";").encode())
    ran = run_cli("report", str(tmp_path / "run.jsonl"), "--labels", str(tmp_path / "labels.csv"),
                  "--format", "json")  # fmt: skip
    assert ran.code == 0, ran.stderr
    assert '"labelled": 40' in ran.out
    assert ran.stderr == (
        f"toolnexus: warning: {tmp_path / 'labels.csv'}: the header has no comma; read as "
        "semicolon-separated\n"
    )
