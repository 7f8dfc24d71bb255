"""Issue 42 item 6: "Records misstate what was applied. With --thresholds @t.yaml holding
per-question cut-points, each record's top-level thresholds shows the run default while the band
follows the file. Each answer gains the cut-points that decided its band (thresholds: {yes, no,
min_confidence}; a struct field in Parquet; schema_version + 1); the top-level thresholds stays
the run default." Every codec and the record model agree; report reads both versions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clirun import run_cli
from toolnexus import ChoiceQuestion, NoulQuestion
from toolnexus.core.decision import parse_decision
from toolnexus.questionfile.load import load_question_set
from toolnexus.records import codec_for
from toolnexus.records.csvcodec import (
    CsvCodec,
    csv_header,
)
from toolnexus.records.decision import record, sample_record
from toolnexus.records.model import SCHEMA_VERSION, DecisionRecord
from toolnexus.styles.recordings import write_recording

QS = {"a": NoulQuestion("A?"), "c": ChoiceQuestion("C?", {"x": "x", "y": "y"})}
BODY = {
    "model": "m",
    "answers": {
        "a": {"type": "noul", "noul": 0.75},
        "c": {"type": "choice", "choice": "x", "probabilities": {"x": 0.7, "y": 0.3},
              "confidence": 0.4},
    },
    "usage": {"input_tokens": 1, "output_tokens": 1},
}  # fmt: skip
RUN_DEFAULT = {"yes": 0.9, "no": 0.2, "min_confidence": 0.6}
A_OWN = {"yes": 0.7, "no": 0.3, "min_confidence": 0.6}


def _record(item: str = "i1") -> DecisionRecord:
    d = parse_decision(BODY, QS)
    return record(item, "sha", d, QS, {"yes": 0.9},
                  question_thresholds={"a": {"yes": 0.7, "no": 0.3}})  # fmt: skip


def test_each_answer_carries_the_cut_points_that_decided_its_band() -> None:
    obj = _record().to_object()
    assert obj["schema_version"] == SCHEMA_VERSION == 2
    assert obj["thresholds"] == RUN_DEFAULT  # the run default, as before
    a, c = obj["answers"]["a"], obj["answers"]["c"]
    assert (a["band"], a["thresholds"]) == ("yes", A_OWN)  # 0.75 >= a's own yes 0.7
    assert (c["band"], c["thresholds"]) == ("uncertain", RUN_DEFAULT)
    assert list(a) == ["type", "noul", "band", "thresholds", "flags"]


def _roundtrip(fmt: str, tmp_path: Path, records: list[DecisionRecord]) -> list[dict[str, Any]]:
    path = tmp_path / f"run.{fmt}"
    if fmt == "parquet":
        pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
        from toolnexus.records.arrow import iter_parquet_run, run_schema, write_parquet_run

        write_parquet_run(path, [r.to_object() for r in records], QS)
        struct = run_schema(QS).field("answers").type.field("a").type.field("thresholds").type
        assert [f.name for f in struct] == ["yes", "no", "min_confidence"]  # a struct field
        return list(iter_parquet_run(path))
    columns = (
        csv_header(sample_record(QS, questions_sha256="sha").to_object()) if fmt == "csv" else ()
    )
    codec = codec_for(fmt, columns)
    body = codec.start() + b"".join(codec.encode(r, i == 0) for i, r in enumerate(records))
    path.write_bytes(body + codec.end())
    lines = path.read_bytes().splitlines(keepends=True)
    if fmt == "csv":
        codec = CsvCodec(lines.pop(0).decode().rstrip("\n").split(","))
    return [r.to_object() for r in map(codec.decode, lines) if r is not None]


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv", "parquet"])
def test_every_codec_writes_and_reads_the_answers_thresholds(fmt: str, tmp_path: Path) -> None:
    """ "Every codec (JSONL, CSV, Parquet/Arrow) and the record model must agree"."""
    records = [_record("i1"), _record("i2")]
    got = _roundtrip(fmt, tmp_path, records)
    assert got == [r.to_object() for r in records]
    assert got[0]["answers"]["a"]["thresholds"] == A_OWN


def test_eval_with_a_thresholds_file_shows_what_each_answer_was_banded_by(
    tmp_path: Path,
) -> None:
    """The issue's case end to end: --thresholds @t.yaml with per-question cut-points."""
    qpath = tmp_path / "q.yaml"
    qpath.write_text("questions:\n  a: {type: noul, instructions: A?}\n", "utf-8")
    t = tmp_path / "t.yaml"
    t.write_text('questions:\n  "a": {"yes": 0.7, "no": 0.3}\n', "utf-8")
    _, qs = load_question_set(qpath)
    rec = tmp_path / "rec"
    body = {"model": "m", "answers": {"a": {"type": "noul", "noul": 0.75}},
            "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    write_recording(rec, model="m", endpoint="e", state="x", questions=qs, response=body)
    ran = run_cli("eval", str(qpath), "--state-text", "x", "--replay", str(rec),
                  "--format", "json", "--thresholds", f"@{t}")  # fmt: skip
    assert ran.code == 0, ran.stderr
    out = json.loads(ran.out)
    assert out["thresholds"] == {"yes": 0.8, "no": 0.2, "min_confidence": 0.6}
    assert out["answers"]["a"]["band"] == "yes"
    assert out["answers"]["a"]["thresholds"] == A_OWN


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_report_reads_a_run_of_both_versions(fmt: str, tmp_path: Path) -> None:
    """ "report must read both old and new versions": a version-1 record (no answer
    thresholds) beside a version-2 one."""
    new = _record("i2").to_object()
    old = json.loads(json.dumps(new)) | {"id": "i1", "schema_version": 1}
    for answer in old["answers"].values():
        del answer["thresholds"]
    path = tmp_path / f"run.{fmt}"
    if fmt == "parquet":
        pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
        from toolnexus.records.arrow import write_parquet_run

        write_parquet_run(path, [old, new], QS)
    else:
        path.write_text(json.dumps(old) + "\n" + json.dumps(new) + "\n", "utf-8")
    ran = run_cli("report", str(path), "--format", "json")
    assert ran.code == 0, ran.stderr
    assert json.loads(ran.out)["records"] == 2


def test_resume_continues_a_version_1_csv_under_its_own_header() -> None:
    """A CSV run written before answers carried thresholds is continued under its own header
    (``earlier_headers``), as version 0 and 1 runs were."""
    from toolnexus.records.csvcodec import earlier_headers

    columns = csv_header(sample_record(QS).to_object())
    assert "answers.a.thresholds" in columns
    v1 = [c for c in columns if c not in ("answers.a.thresholds", "answers.c.thresholds")]
    assert earlier_headers(columns)[0] == v1


@pytest.mark.parametrize(
    "cuts",
    [
        pytest.param("x", id="text"),
        pytest.param([1], id="list"),
        pytest.param({"yes": "a", "no": 0.2, "min_confidence": 0.6}, id="not-a-number"),
        pytest.param({"yes": 0.8}, id="partial"),
        pytest.param({"yes": 0.8, "no": 0.2, "min_confidence": 0.6, "x": 1}, id="extra-name"),
    ],
)
def test_a_parquet_answer_whose_thresholds_do_not_fit_is_kept_as_json(
    cuts: Any, tmp_path: Path
) -> None:
    """Attack: a record batch never writes (a script's own dicts) is stored losslessly, not a
    pyarrow traceback, as a recalibrated of another shape is."""
    pytest.importorskip("pyarrow", reason="platform: the parquet extra is not installed")
    from toolnexus.records.arrow import iter_parquet_run, write_parquet_run

    rec = _record().to_object()
    rec["answers"]["a"]["thresholds"] = cuts
    path = tmp_path / "run.parquet"
    write_parquet_run(path, [rec], QS)
    assert list(iter_parquet_run(path)) == [rec]
