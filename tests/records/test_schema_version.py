"""Issue 30 item 7: "Records carry a ``schema_version``, and ``report`` and ``--resume`` keep
reading runs written by earlier versions (a test reads a stored run of today's shape)".

The stored run is ``tests/golden/runs-v0/`` (written by main before the key existed: gated and
recalibrated decisions and an error record, in JSONL, JSON, CSV and Parquet; its ``make.py``
says how). A reader meeting a newer ``schema_version`` stops with one line naming the file and
line (``--resume``: the file and the record's id) and asking for an upgrade.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clirun import error_line, run_cli
from hostile_server import HostileServer
from paths import TESTS
from toolnexus.records import DecisionRecord, ErrorRecord, codec_for, record_from_object
from toolnexus.records.csvcodec import csv_header
from toolnexus.records.model import SCHEMA_VERSION, RecordVersionError, schema_problem

V0 = TESTS / "golden" / "runs-v0"
FORMATS = [pytest.param(f, id=f) for f in ("jsonl", "json", "csv", "parquet")]
KEY = "tn-schema-key-0123456789"


def _make() -> Any:
    """The stored run's own generator: its question file and its server's answers."""
    spec = importlib.util.spec_from_file_location("runs_v0_make", V0 / "make.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _objects(path: Path, fmt: str) -> list[dict[str, Any]]:
    """The JSON objects of a run, as the record codecs read them."""
    if fmt == "parquet":
        from toolnexus.records.arrow import iter_parquet_run

        return list(iter_parquet_run(path))
    lines = path.read_bytes().splitlines(keepends=True)
    codec = codec_for(fmt)
    if fmt == "csv":
        from toolnexus.records.csvcodec import CsvCodec

        header = lines.pop(0).decode().rstrip("\n").split(",")
        codec = CsvCodec(header)
    records = (codec.decode(line) for line in lines)
    return [r.to_object() for r in records if r is not None]


# --- the key -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "record",
    [
        pytest.param(DecisionRecord("a", "sha", "m"), id="decision"),
        pytest.param(ErrorRecord("a", "backend_http", "HTTP 500", "sha"), id="error"),
    ],
)
def test_every_record_carries_schema_version_right_after_its_id(record: Any) -> None:
    """Item 7: "Records carry a schema_version": second, after ``id``, in decision and error
    records alike (records.model says why there)."""
    keys = list(record.to_object())
    assert keys[:3] == ["id", "schema_version", "questions_sha256"]
    assert record.to_object()["schema_version"] == SCHEMA_VERSION == 2  # issue 42 item 6


def test_the_csv_header_and_the_parquet_schema_carry_it_too() -> None:
    """Item 7, every format: the CSV column after the error columns, the Parquet column after
    ``id``."""
    from toolnexus.core.qtypes.noul import NoulQuestion
    from toolnexus.records.arrow import run_schema

    pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
    header = csv_header(DecisionRecord("", "sha", "m").to_object())
    assert header[:5] == ["id", "error.code", "error.message", "schema_version", "questions_sha256"]
    schema = run_schema({"q": NoulQuestion("q")})
    assert schema.names[:3] == ["id", "schema_version", "questions_sha256"]
    assert str(schema.field("schema_version").type) == "int64"


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_record_written_now_reads_back_with_its_version(fmt: str, tmp_path: Path) -> None:
    """Item 7: what ``batch`` writes today reads back the same, version included, in every
    format."""
    # The stored run's gated, recalibrated decision and its error record, as written today.
    stored = [record_from_object(o) for o in _objects(V0 / "run.jsonl", "jsonl")[1:3]]
    records = [dataclasses.replace(r, schema_version=SCHEMA_VERSION) for r in stored if r]
    path = tmp_path / f"run.{fmt}"
    if fmt == "parquet":
        pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
        from toolnexus.records.arrow import write_parquet_run

        write_parquet_run(path, [r.to_object() for r in records], _make_questions())
    else:
        columns = csv_header(records[0].to_object()) if fmt == "csv" else ()
        codec = codec_for(fmt, columns)
        body = codec.start() + b"".join(codec.encode(r, i == 0) for i, r in enumerate(records))
        path.write_bytes(body + codec.end())
    assert _objects(path, fmt) == [r.to_object() for r in records]
    assert all(o["schema_version"] == SCHEMA_VERSION for o in _objects(path, fmt))


# --- the stored run of today's shape -------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_report_reads_the_stored_run_of_todays_shape(fmt: str) -> None:
    """Item 7: "report ... keep[s] reading runs written by earlier versions (a test reads a
    stored run of today's shape)": every format gives the same report, with the gated and
    recalibrated decisions and the error record counted."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
    ran = run_cli("report", str(V0 / f"run.{fmt}"), "--format", "json")
    assert ran.code == 0, ran.stderr
    run = json.loads(ran.out)["runs"][0]
    assert (run["records"], run["answered"], run["errors"]) == (5, 4, {"backend_http": 1})
    assert list(run["recalibrated_by"].values()) == [4]


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_stored_run_reads_as_records_without_a_version(fmt: str) -> None:
    """Item 7: a record written before versions is read (and written back) without one, never
    with a made-up one; its gates and recalibration come back whole."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
    objects = _objects(V0 / f"run.{fmt}", fmt)
    assert [o["id"] for o in objects] == ["s1", "s2", "s-err", "s4", "s5"]
    assert all("schema_version" not in o for o in objects)
    records = [record_from_object(o) for o in objects]
    assert all(r is not None and r.schema_version is None for r in records)
    decided = [r for r in records if isinstance(r, DecisionRecord)]
    assert len(decided) == 4
    assert all(r.gates and r.recalibrated for r in decided)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[HostileServer]:
    monkeypatch.setenv("TYPESAFE_API_KEY", KEY)
    with HostileServer(_make()._answer) as s:
        yield s


@pytest.mark.parametrize("fmt", FORMATS)
def test_batch_resume_continues_the_stored_run_of_todays_shape(
    fmt: str, server: HostileServer, tmp_path: Path
) -> None:
    """Item 7: "--resume keep[s] reading runs written by earlier versions": only the new
    states are asked, the old records stay as they were (no version made up for them), the new
    ones carry theirs (a CSV run keeps its own header, so its file keeps one shape), and
    ``report`` reads the continued run."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
    out = tmp_path / f"run.{fmt}"
    shutil.copy(V0 / f"run.{fmt}", out)
    states = tmp_path / "states.jsonl"
    states.write_bytes((V0 / "states.jsonl").read_bytes() + b'{"id": "s6", "text": "s6"}\n')
    ran = run_cli(
        "batch", str(V0 / "q.yaml"), str(states), "--id-field", "id", "--state-field", "text",
        "--ordered", "--base-url", server.base_url, "--retries", "0", "-o", str(out),
        "--format", fmt, "--calibration", str(V0 / "cal.json"), "--resume",
    )  # fmt: skip
    assert ran.code == 3, ran.stderr  # the stored error record stays: never exit 0
    assert [r.json["state"] for r in server.seen] == ["s6"]
    objects = _objects(out, fmt)
    assert [o["id"] for o in objects] == ["s1", "s2", "s-err", "s4", "s5", "s6"]
    assert objects[:5] == _objects(V0 / f"run.{fmt}", fmt)
    expected = None if fmt == "csv" else SCHEMA_VERSION
    assert objects[5].get("schema_version") == expected
    if fmt == "csv":
        old_header = (V0 / "run.csv").read_bytes().splitlines()[0]
        assert out.read_bytes().splitlines()[0] == old_header
    report = run_cli("report", str(out), "--format", "json")
    assert report.code == 0, report.stderr
    assert json.loads(report.out)["runs"][0]["answered"] == 5


# --- a newer version -----------------------------------------------------------------------


def _newer_run(tmp_path: Path, fmt: str) -> Path:
    """The stored run with its third decision (line 4 of JSONL: s4) written by a newer
    toolnexus (schema_version 3)."""
    objects = _objects(V0 / f"run.{fmt}", fmt)
    objects[3] = {"id": "s4", "schema_version": 3, **{k: v for k, v in objects[3].items()
                                                      if k != "id"}}  # fmt: skip
    path = tmp_path / f"run.{fmt}"
    if fmt == "parquet":
        from toolnexus.records.arrow import write_parquet_run

        write_parquet_run(path, objects, _make_questions())
        return path
    text = (V0 / f"run.{fmt}").read_text("utf-8").splitlines(keepends=True)
    if fmt == "csv":
        rows = list(csv.reader(text))
        for n, row in enumerate(rows):
            row.insert(3, "schema_version" if n == 0 else "3" if row[0] == "s4" else "")
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        text = [buf.getvalue()]
    else:
        at = 3 if fmt == "jsonl" else 4  # a JSON run's line 1 is its "["
        lead = "" if fmt == "jsonl" else ","
        obj = json.loads(text[at].removeprefix(","))
        obj = {"id": obj["id"], "schema_version": 3, **obj}
        text[at] = lead + json.dumps(obj, separators=(",", ":")) + "\n"
    path.write_text("".join(text), "utf-8")
    return path


def _make_questions() -> Any:
    from toolnexus.pytest_plugin.cases import load_questions

    return load_questions(V0 / "q.yaml")


@pytest.mark.parametrize("fmt", FORMATS)
def test_report_refuses_a_newer_record_naming_file_line_and_upgrade(
    fmt: str, tmp_path: Path
) -> None:
    """Item 7 (brief): "A reader meeting a newer schema_version than it knows must fail with
    one clear line naming the file:line and what to do (upgrade toolnexus)"."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
    path = _newer_run(tmp_path, fmt)
    ran = run_cli("report", str(path), "--format", "json")
    assert ran.code == 2
    line = {"jsonl": 4, "json": 5, "csv": 5, "parquet": 4}[fmt]
    assert error_line(ran.stderr) == (
        f"{path}:{line}: record schema_version 3 is newer than this toolnexus reads (up to 2): "
        "upgrade toolnexus (pip install -U toolnexus-classifier) to read it"
    )
    assert "Traceback" not in ran.stderr


@pytest.mark.parametrize(
    ("fmt", "line"),
    [
        pytest.param("jsonl", 4, id="jsonl"),
        pytest.param("json", 5, id="json"),  # line 1 is the array's "["
        pytest.param("csv", 5, id="csv"),  # line 1 is the header
    ],
)
def test_resume_refuses_a_newer_record_naming_file_line_and_the_id(
    server: HostileServer, tmp_path: Path, fmt: str, line: int
) -> None:
    """Item 7 (brief): ``--resume`` of a run holding a newer record stops before asking
    anything, one line naming ``--output``, the record and the upgrade; run2 brief item 3:
    "name ``FILE:LINE`` like ``report`` does"."""
    out = _newer_run(tmp_path, fmt)
    ran = run_cli(
        "batch", str(V0 / "q.yaml"), str(V0 / "states.jsonl"), "--id-field", "id",
        "--state-field", "text", "--base-url", server.base_url, "-o", str(out), "--resume",
        "--format", fmt,
    )  # fmt: skip
    assert ran.code == 2
    assert error_line(ran.stderr) == (
        f"--output {out}:{line}: cannot resume from it: record 's4': record schema_version 3 "
        "is newer than this toolnexus reads (up to 2): upgrade toolnexus (pip install -U "
        "toolnexus-classifier) to read it"
    )
    assert server.seen == []


@pytest.mark.parametrize(
    ("version", "problem"),
    [
        pytest.param(None, None, id="absent-v0"),
        pytest.param(0, None, id="zero"),
        pytest.param(1, None, id="version-1"),
        pytest.param(2, None, id="current"),
        pytest.param(3, "is newer than this toolnexus reads", id="newer"),
        pytest.param("1", "is not one toolnexus writes", id="text"),
        pytest.param(True, "is not one toolnexus writes", id="bool"),
        pytest.param(-1, "is not one toolnexus writes", id="negative"),
    ],
)
def test_which_versions_are_read(version: Any, problem: str | None) -> None:
    """Item 7: none (before versions) up to SCHEMA_VERSION is read; anything else is refused by
    the record model itself, so every reader refuses it alike."""
    obj: dict[str, Any] = {"id": "a", "model": "m"}
    if version is not None:
        obj["schema_version"] = version
    found = schema_problem(obj)
    if problem is None:
        assert found is None
        assert record_from_object(obj) is not None
    else:
        assert found is not None and problem in found
        with pytest.raises(RecordVersionError, match=problem):
            record_from_object(obj)


def test_report_refuses_a_newer_record_in_a_plain_parquet_run_counted_by_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 7 (brief), the Parquet column path (``report.columns``, which counts each row group
    of a plain run of several without a record per row): a newer ``schema_version`` sends the
    group to the record path, which names the row."""
    pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
    from toolnexus.records import arrow
    from toolnexus.records.arrow import write_parquet_run

    monkeypatch.setattr(arrow, "ROW_GROUP_RECORDS", 2)  # two row groups: the column path

    plain = []
    for obj in _objects(V0 / "run.jsonl", "jsonl"):
        if "error" in obj:
            continue
        obj = {k: v for k, v in obj.items() if k not in ("gates", "recalibrated")}
        obj["answers"] = {
            key: {f: v for f, v in answer.items() if f != "recalibrated"}
            for key, answer in obj["answers"].items()
        }
        plain.append({"id": obj["id"], "schema_version": 1, **obj})
    path = tmp_path / "plain.parquet"
    write_parquet_run(path, plain, _make_questions())
    assert run_cli("report", str(path), "--format", "json").code == 0
    plain[2]["schema_version"] = 3
    write_parquet_run(path, plain, _make_questions())
    ran = run_cli("report", str(path), "--format", "json")
    assert ran.code == 2
    assert error_line(ran.stderr).startswith(f"{path}:3: record schema_version 3 is newer")
