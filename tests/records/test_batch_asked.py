"""Issue 31 item 1: "Records (every format, Parquet included) carry ``packed``, ``position`` and
``reasked``; maps record the pack size they were fitted on; fitting on a run that mixes pack
sizes is refused with the sizes found" -- and runs written before these fields existed are
still read by ``report`` and continued by ``--resume``.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from clirun import error_line, run_cli
from hostile_server import HostileServer, Reply, qfile_fixture, server_fixture
from toolnexus.records.parquet import journal_line

KEY = "tn-asked-key-0123456789"
QUESTIONS = "questions:\n  q: {type: noul, instructions: Is it so?}\n"

server = server_fixture(KEY)
qfile = qfile_fixture(QUESTIONS)


def _noul(i: int) -> float:
    return round(0.05 + 0.9 * ((i * 37) % 100) / 100, 2)


def _varied(req: Any) -> Reply:
    """Every asked question (a packed request derives ``k:q`` per state) gets its own noul,
    from the state's text ``s<i>``."""
    state = req.json["state"]
    texts = state["states"] if isinstance(state, dict) and "states" in state else [state]
    answers = {}
    for key in req.json["questions"]:
        index = int(key.split(":")[0]) if ":" in key else 0
        answers[key] = {"type": "noul", "noul": _noul(int(str(texts[index])[1:]))}
    body = {"model": "m-1", "answers": answers, "usage": {"input_tokens": 2, "output_tokens": 1}}
    return Reply(200, json.dumps(body).encode())


def _inputs(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"s{i}", "text": f"s{i}"}) + "\n"
                            for i in range(n)))  # fmt: skip
    return path


def _batch(server: HostileServer, qfile: Path, inp: Path, out: Path, *extra: str) -> Any:
    return run_cli(
        "batch", str(qfile), str(inp), "--id-field", "id", "--state-field", "text", "--ordered",
        "--base-url", server.base_url, "--retries", "0", "-o", str(out), *extra,
    )  # fmt: skip


def _asked(record: dict[str, Any]) -> tuple[Any, Any, Any]:
    return record.get("packed"), record.get("position"), record.get("reasked")


#: 4 states at --pack 3: one packed request of three, then the fourth alone (a pack of one is
#: never packed).
ASKED = [(3, 0, False), (3, 1, False), (3, 2, False), (1, 0, False)]


def _records(path: Path, fmt: str) -> list[dict[str, Any]]:
    if fmt == "parquet":
        from toolnexus.records.arrow import iter_parquet_run

        return list(iter_parquet_run(path))
    text = path.read_text(encoding="utf-8")
    if fmt == "json":
        return list(json.loads(text))
    if fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        return [{"packed": int(r["packed"]), "position": int(r["position"]),
                 "reasked": r["reasked"] == "true"} for r in rows]  # fmt: skip
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.parametrize(
    "fmt",
    [
        pytest.param("jsonl", id="jsonl"),
        pytest.param("json", id="json"),
        pytest.param("csv", id="csv"),
        pytest.param("parquet", id="parquet"),
    ],
)
def test_every_format_says_how_each_state_was_asked(
    server: HostileServer, qfile: Path, tmp_path: Path, fmt: str
) -> None:
    """Item 1: "Records (every format, Parquet included) carry packed, position and reasked"."""
    server.answer = _varied
    out = tmp_path / f"run.{fmt}"
    ran = _batch(server, qfile, _inputs(tmp_path / "in.jsonl", 4), out, "--pack", "3",
                 "--format", fmt)  # fmt: skip
    assert ran.code == 0, ran.stderr
    assert [_asked(r) for r in _records(out, fmt)] == ASKED
    if fmt == "parquet":
        import pyarrow.parquet as pq

        names = pq.read_schema(out).names
        assert names[names.index("cached") + 1 : names.index("cached") + 4] == [
            "packed", "position", "reasked",
        ]  # fmt: skip


def test_the_parquet_journal_carries_them_too() -> None:
    """Item 1: the journal a killed Parquet run leaves holds the same fields, and reads back."""
    from toolnexus.records import DecisionRecord, record_from_object

    record = DecisionRecord("a", "sha", "m", packed=20, position=7, reasked=True)
    line = journal_line(record, record.to_object())
    assert _asked(json.loads(line)) == (20, 7, True)
    assert record_from_object(json.loads(line)) == record


def _labels(path: Path, n: int) -> Path:
    path.write_text("id,q\n" + "".join(f"s{i},{'yes' if _noul(i) > (i % 7) / 7 else 'no'}\n"
                                       for i in range(n)))  # fmt: skip
    return path


def _fit(run: Path, labels: Path, cal: Path) -> Any:
    return run_cli("report", str(run), "--labels", str(labels), "--fit-calibration", str(cal),
                   "--format", "json")  # fmt: skip


def test_a_map_fitted_on_a_packed_run_holds_for_packed_runs_only(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    """Item 1: "report --fit-calibration on a --pack 20 run writes pack_size: 1, the map is then
    accepted for unpacked runs and refused for pack-20 runs -- the reverse of its own rule"."""
    server.answer = _varied
    n = 60
    inp = _inputs(tmp_path / "in.jsonl", n)
    assert _batch(server, qfile, inp, tmp_path / "p3.jsonl", "--pack", "3").code == 0
    cal = tmp_path / "cal.json"
    fitted = _fit(tmp_path / "p3.jsonl", _labels(tmp_path / "labels.csv", n), cal)
    assert fitted.code == 0, fitted.stderr
    assert json.loads(fitted.out)["calibration_fit"]["provenance"]["pack_size"] == 3
    written = json.loads(cal.read_text(encoding="utf-8"))
    assert written["questions"]["q"]["provenance"]["pack_size"] == 3

    packed = _batch(server, qfile, inp, tmp_path / "again.jsonl", "--pack", "3",
                    "--calibration", str(cal))  # fmt: skip
    assert packed.code == 0, packed.stderr
    assert all("recalibrated" in r for r in _records(tmp_path / "again.jsonl", "jsonl"))

    alone = _batch(server, qfile, inp, tmp_path / "alone.jsonl", "--calibration", str(cal))
    assert alone.code == 2
    assert "pack size 3" in error_line(alone.stderr) and "pack size 1" in alone.stderr


def test_fitting_on_a_run_that_mixes_pack_sizes_is_refused_with_the_sizes(
    server: HostileServer, qfile: Path, tmp_path: Path
) -> None:
    """Item 1: "fitting on a run that mixes pack sizes is refused with the sizes found"."""
    server.answer = _varied
    inp = _inputs(tmp_path / "in.jsonl", 4)
    assert _batch(server, qfile, inp, tmp_path / "run.jsonl", "--pack", "3").code == 0
    fitted = _fit(tmp_path / "run.jsonl", _labels(tmp_path / "l.csv", 4), tmp_path / "c.json")
    assert fitted.code == 2
    line = error_line(fitted.stderr)
    assert "2 pack sizes (1, 3)" in line, line
    assert not (tmp_path / "c.json").exists()


# --- runs written before the fields existed --------------------------------------------------

#: Two records exactly as toolnexus batch wrote them before issue 31 (no packed/position/reasked).
OLD_JSONL = (
    '{"id":"s0","questions_sha256":"SHA","model":"m-1","calibrated":true,"cached":false,'
    '"usage":{"input_tokens":2,"output_tokens":1,"cost":null},"thresholds":{"yes":0.7,"no":0.3,'
    '"min_confidence":0.6},"answers":{"q":{"type":"noul","noul":0.05,"band":"no","flags":[]}},'
    '"flags":[],"invalid":null}\n'
    '{"id":"s1","questions_sha256":"SHA","error":{"code":"backend_unavailable",'
    '"message":"HTTP 503"}}\n'
)


def _sha(qfile: Path) -> str:
    from toolnexus.questionfile.load import load_question_set
    from toolnexus.run.ids import question_set_sha256

    return question_set_sha256(load_question_set(qfile)[1])


def _old_run(qfile: Path, tmp_path: Path, fmt: str) -> Path:
    text = OLD_JSONL.replace("SHA", _sha(qfile))
    out = tmp_path / f"old.{fmt}"
    if fmt == "jsonl":
        out.write_text(text, encoding="utf-8")
        return out
    from toolnexus.questionfile.load import load_question_set

    records = [json.loads(line) for line in text.splitlines()]
    if fmt == "csv":
        from toolnexus.records.csvcodec import (
            csv_header,
            csv_line,
        )
        from toolnexus.records.model import ASKED_KEYS

        columns = [c for c in csv_header(records[0]) if c not in ASKED_KEYS]
        out.write_text("".join(csv_line(columns, r) for r in [columns, *records]),
                       encoding="utf-8")  # fmt: skip
        return out
    import pyarrow as pa
    import pyarrow.parquet as pq

    from toolnexus.records.arrow import records_to_table

    table = records_to_table(records, load_question_set(qfile)[1])
    keep = [n for n in table.schema.names if n not in ("packed", "position", "reasked")]
    pq.write_table(pa.Table.from_arrays([table.column(n) for n in keep], names=keep), out)
    return out


@pytest.mark.parametrize(
    "fmt",
    [pytest.param("jsonl", id="jsonl"), pytest.param("csv", id="csv"),
     pytest.param("parquet", id="parquet")],
)  # fmt: skip
def test_a_run_written_before_the_fields_is_reported_and_resumed(
    server: HostileServer, qfile: Path, tmp_path: Path, fmt: str
) -> None:
    """Item 1 (brief): "report and --resume must still read runs written before these fields
    existed"; the old record keeps its bytes, and nothing is made up for it."""
    server.answer = _varied
    old = _old_run(qfile, tmp_path, fmt)
    before = old.read_bytes() if fmt == "jsonl" else b""
    reported = run_cli("report", str(old), "--format", "json")
    assert reported.code == 0, reported.stderr
    ran = _batch(server, qfile, _inputs(tmp_path / "in.jsonl", 3), old, "--resume",
                 "--retry-errors", "--format", fmt)  # fmt: skip
    assert ran.code == 0, ran.stderr
    if fmt == "jsonl":
        assert old.read_bytes().startswith(before.splitlines(keepends=True)[0])
    got = {r["id"]: r for r in _records(old, "jsonl" if fmt == "csv" else fmt)} if fmt != "csv" \
        else None  # fmt: skip
    if got is not None:
        assert "packed" not in got["s0"]
        assert _asked(got["s2"]) == (1, 0, False)
    else:
        assert len(old.read_text(encoding="utf-8").splitlines()) == 4  # header + s0, s1, s2
