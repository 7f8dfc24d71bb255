"""Issue 24 end to end, offline, through the CLI: a ``toolnexus serve`` script plays a backend
whose probabilities are over-confident by a known temperature against labels drawn at the true
rates; ``report --fit-calibration`` on one half and ``batch --calibration`` on the other.

Acceptance: "after --fit-calibration on one half and --calibration on the other, held-out ece
and log_loss drop, and the fitted temperature is within 10% of the distortion". And item 5: "A
map fitted on one model, question set or way of asking ... is refused for another ... with one
line naming both"; "Records keep the wire's probabilities untouched ... and add the recalibrated
ones beside them"; "report on a recalibrated run measures the recalibrated probabilities, with
the wire's metrics beside them".
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from clirun import error_line, run_cli
from htmlcheck import check_self_contained
from serving import ThreadedServer
from toolnexus.records.codec import JsonlCodec
from toolnexus.records.csvcodec import (
    CsvCodec,
    csv_header,
)
from toolnexus.records.model import DecisionRecord
from toolnexus.serve import ServeOptions
from toolnexus.serve.script import ScriptedReply, ScriptedRequest

#: The distortion: the wire reports sigmoid(T * logit(q)) for a true rate q (noul), and
#: probabilities proportional to q ** T (choice): over-confident by T.
T = 2.0
N = 2400
HALF = N // 2
DESKS = ("billing", "shipping", "technical")
QUESTIONS = """\
questions:
  urgent:
    type: noul
    instructions: Does this ticket need a human today?
  desk:
    type: choice
    instructions: Which desk should own this ticket?
    criteria:
      billing: money moved
      shipping: a parcel is late
      technical: the product errors
"""


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z))


def _world() -> list[dict[str, Any]]:
    """Per state: the true rates, the labels drawn at them, and what the wire reports."""
    rng = random.Random(24)
    out = []
    for _ in range(N):
        q = rng.uniform(0.1, 0.9)
        weights = [rng.uniform(0.2, 1.0) for _ in DESKS]
        total = sum(weights)
        rates = [w / total for w in weights]
        sharp = [r**T for r in rates]
        wire = [round(s / sum(sharp), 2) for s in sharp]
        wire[0] = round(1.0 - sum(wire[1:]), 2)
        out.append({
            "p": round(_sigmoid(T * math.log(q / (1 - q))), 2),
            "yes": rng.random() < q,
            "desk": rng.choices(DESKS, rates)[0],
            "probs": dict(zip(DESKS, wire, strict=True)),
        })  # fmt: skip
    return out


WORLD = _world()


def _script(req: ScriptedRequest) -> ScriptedReply | None:
    if req.endpoint != "systemone":
        return None
    i = int(req.json["state"].split()[-1])
    w = WORLD[i]
    answers = {
        "urgent": {"type": "noul", "noul": w["p"]},
        "desk": {
            "type": "choice",
            "choice": max(w["probs"], key=w["probs"].__getitem__),
            "confidence": max(w["probs"].values()),
            "probabilities": w["probs"],
        },
    }
    body = {"model": "jev-1.13.0", "answers": answers, "usage": {"input_tokens": 1,
            "output_tokens": 1}}  # fmt: skip
    return ScriptedReply(200, json.dumps(body).encode())


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    d = tmp_path_factory.mktemp("calwire")
    (d / "q.yaml").write_text(QUESTIONS, encoding="utf-8")
    (d / "q-other.yaml").write_text(QUESTIONS.replace("today?", "this week?"), encoding="utf-8")
    for name, ids in (("fit", range(HALF)), ("held", range(HALF, N))):
        with open(d / f"{name}.jsonl", "w", encoding="utf-8") as f:
            for i in ids:
                f.write(json.dumps({"id": f"s{i}", "text": f"ticket {i}"}) + "\n")
    with open(d / "labels.csv", "w", encoding="utf-8") as f:
        f.write("id,urgent,desk\n")
        for i, w in enumerate(WORLD):
            f.write(f"s{i},{'yes' if w['yes'] else 'no'},{w['desk']}\n")
    with ThreadedServer(ServeOptions(synthetic=True, script=_script)) as server:
        yield d, server.url


def _batch(d: Path, url: str, inputs: str, out: str, *extra: str) -> Any:
    return run_cli(
        "batch", str(d / "q.yaml"), str(d / inputs), "--id-field", "id", "--state-field", "text",
        "--ordered", "--base-url", url, "-o", str(d / out), *extra,
    )  # fmt: skip


@pytest.fixture(scope="module")
def fitted(world: tuple[Path, str]) -> tuple[Path, str, dict[str, Any]]:
    d, url = world
    assert _batch(d, url, "fit.jsonl", "fit-run.jsonl").code == 0
    ran = run_cli(
        "report", str(d / "fit-run.jsonl"), "--labels", str(d / "labels.csv"),
        "--fit-calibration", str(d / "cal.json"), "--format", "json",
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    return d, url, json.loads(ran.out)


@pytest.fixture(scope="module")
def held_cal(fitted: tuple[Path, str, dict[str, Any]]) -> Path:
    """The held-out half run once with the fitted map (1,200 states): the tests that read a
    recalibrated run share it, where each ran it again."""
    d, url, _ = fitted
    ran = _batch(d, url, "held.jsonl", "held-cal.jsonl", "--calibration", str(d / "cal.json"))
    assert ran.code == 0, ran.stderr
    return d / "held-cal.jsonl"


def test_the_fitted_maps_undo_the_known_temperature_within_ten_percent(
    fitted: tuple[Path, str, dict[str, Any]],
) -> None:
    """Acceptance: "the fitted temperature is within 10% of the distortion" (noul: Platt's
    slope on logit p is 1/T; choice: the temperature itself)."""
    d, _, report = fitted
    cal = json.loads((d / "cal.json").read_text(encoding="utf-8"))
    urgent, desk = cal["questions"]["urgent"], cal["questions"]["desk"]
    assert urgent["kind"] == "platt"
    assert 1.0 / urgent["params"]["slope"] == pytest.approx(T, rel=0.10)
    assert desk["params"]["temperature"] == pytest.approx(T, rel=0.10)
    assert urgent["provenance"]["model"] == "jev-1.13.0"
    assert (urgent["provenance"]["style"], urgent["provenance"]["pack_size"]) == ("systemone", 1)
    fit = report["calibration_fit"]
    assert fit["questions"]["urgent"]["kind"] == "platt"
    assert "assumed style systemone" in fit["provenance_note"]


def test_held_out_ece_and_log_loss_drop_and_the_wire_stays_beside(
    fitted: tuple[Path, str, dict[str, Any]], held_cal: Path
) -> None:
    """Acceptance: "held-out ece and log_loss drop"; records keep the wire's probabilities
    and the report measures the recalibrated ones with the wire's metrics beside them."""
    d, _, _ = fitted
    first = json.loads((d / "held-cal.jsonl").read_text(encoding="utf-8").splitlines()[0])
    i = int(first["id"][1:])
    assert first["answers"]["urgent"]["noul"] == WORLD[i]["p"]  # the wire's, untouched
    assert set(first["answers"]["urgent"]["recalibrated"]) == {"noul", "band"}
    assert first["answers"]["desk"]["probabilities"] == WORLD[i]["probs"]
    assert set(first["answers"]["desk"]["recalibrated"]) == {"probabilities", "confidence", "band"}
    assert first["recalibrated"]["file"] == str(d / "cal.json")
    ran = run_cli("report", str(d / "held-cal.jsonl"), "--labels", str(d / "labels.csv"),
                  "--format", "json")  # fmt: skip
    assert ran.code == 0, ran.stderr
    report = json.loads(ran.out)
    assert list(report["runs"][0]["recalibrated_by"].values()) == [HALF]
    for key in ("urgent", "desk"):
        q = report["questions"][key]
        wire = q["recalibrated"]["wire_metrics"]
        assert q["metrics"]["ece"] < wire["ece"], key
        assert q["metrics"]["log_loss"] < wire["log_loss"], key


def test_a_csv_run_carries_the_recalibrated_fields_losslessly(held_cal: Path) -> None:
    """The record model and the CSV/JSONL codecs carry the new fields losslessly."""
    line = held_cal.read_bytes().splitlines(keepends=True)[0]
    record = JsonlCodec().decode(line)
    assert isinstance(record, DecisionRecord) and record.recalibrated is not None
    assert JsonlCodec().encode(record) == line
    csv = CsvCodec(csv_header(record.to_object()))
    assert csv.decode(csv.encode(record)) == record


@pytest.mark.parametrize(
    ("change", "named"),
    [
        pytest.param("questions", "questions sha256", id="another-question-set"),
        pytest.param("model", "model other-model", id="another-model"),
        pytest.param("style", "style llm", id="another-way-of-asking"),
    ],
)
def test_a_map_for_other_answers_is_refused_with_one_line_naming_both(
    fitted: tuple[Path, str, dict[str, Any]], change: str, named: str
) -> None:
    """Seed 000: a threshold tuned against one backend does not transfer to another."""
    d, url, _ = fitted
    cal = json.loads((d / "cal.json").read_text(encoding="utf-8"))
    qfile = d / "q.yaml"
    if change == "questions":
        qfile = d / "q-other.yaml"
    else:
        for entry in cal["questions"].values():
            entry["provenance"][change] = "other-model" if change == "model" else "llm"
    (d / "other-cal.json").write_text(json.dumps(cal), encoding="utf-8")
    ran = run_cli(
        "batch", str(qfile), str(d / "held.jsonl"), "--id-field", "id", "--state-field", "text",
        "--base-url", url, "--calibration", str(d / "other-cal.json"),
        "-o", str(d / "refused.jsonl"), "--overwrite",
    )  # fmt: skip
    assert ran.code == 2, ran.stderr
    line = error_line(ran.stderr)
    assert "other-cal.json" in line and named in line and "does not transfer" in line


def test_written_thresholds_are_a_consistent_pair_that_batch_reads_back(
    fitted: tuple[Path, str, dict[str, Any]],
) -> None:
    """Issue 24 §6: "report --target-precision P --write-thresholds t.yaml writes, per
    question, a consistent pair of cut-points (no <= yes) in the form eval/batch --thresholds
    @t.yaml read"; issue 35 item 4: the pair written is chosen out of bag."""
    d, url, _ = fitted
    ran = run_cli(
        "report", str(d / "fit-run.jsonl"), "--labels", str(d / "labels.csv"),
        "--target-precision", "0.8", "--write-thresholds", str(d / "t.yaml"), "--format", "json",
    )  # fmt: skip
    assert ran.code == 0, ran.stderr
    assert json.loads(ran.out)["questions"]["urgent"]["metrics"]["thresholds"]["yes"] is not None
    written = yaml.safe_load((d / "t.yaml").read_text(encoding="utf-8"))["questions"]["urgent"]
    pair = {"yes": written[True], "no": written[False]}  # YAML 1.1 reads the keys as booleans
    assert pair["no"] <= pair["yes"]
    ran = _batch(d, url, "held.jsonl", "held-t.jsonl", "--thresholds", f"@{d / 't.yaml'}")
    assert ran.code == 0, ran.stderr
    for line in (d / "held-t.jsonl").read_text(encoding="utf-8").splitlines():
        a = json.loads(line)["answers"]["urgent"]
        expected = "yes" if a["noul"] >= pair["yes"] else "no" if a["noul"] <= pair["no"] else (
            "uncertain")  # fmt: skip
        assert a["band"] == expected


def test_a_thresholds_file_with_an_inverted_pair_is_refused(tmp_path: Path) -> None:
    """The rule that refuses inverted thresholds (issue 17) holds for @FILE, per question."""
    (tmp_path / "q.yaml").write_text(QUESTIONS, encoding="utf-8")
    (tmp_path / "t.yaml").write_text("questions:\n  urgent: {yes: 0.4, no: 0.6}\n", "utf-8")
    ran = run_cli("eval", str(tmp_path / "q.yaml"), "--state-text", "x", "--thresholds",
                  f"@{tmp_path / 't.yaml'}", "--replay", str(tmp_path))  # fmt: skip
    assert ran.code == 2
    assert "question 'urgent': no (0.6) is above yes (0.4)" in error_line(ran.stderr)


def test_the_html_of_a_recalibrated_run_draws_before_after_and_per_option(
    fitted: tuple[Path, str, dict[str, Any]], held_cal: Path
) -> None:
    """Issue 24 §7: the interval and floor on each reliability diagram, a before/after diagram
    when a map is applied, the RPS, per-option reliability for choice; static checks."""
    d, _, _ = fitted
    out = d / "report.html"
    ran = run_cli("report", str(d / "held-cal.jsonl"), "--labels", str(d / "labels.csv"),
                  "--format", "html", "-o", str(out))  # fmt: skip
    assert ran.code == 0, ran.stderr
    page = out.read_text(encoding="utf-8")
    # per question: distribution, reliability, before/after; choice: confusion, one-vs-rest
    assert check_self_contained(page) == 2 * 3 + 2
    assert page.count("floor p95") >= 2 and "before and after recalibration" in page
    assert "one-vs-rest reliability" in page and "the wire's beside them" in page


def test_eval_takes_the_calibration_too(fitted: tuple[Path, str, dict[str, Any]]) -> None:
    """Issue 24 §5: "eval and batch take --calibration cal.json"."""
    d, url, _ = fitted
    ran = run_cli("eval", str(d / "q.yaml"), "--state-text", "ticket 7", "--base-url", url,
                  "--calibration", str(d / "cal.json"), "--format", "json")  # fmt: skip
    assert ran.code == 0, ran.stderr
    record = json.loads(ran.out)
    assert record["answers"]["urgent"]["noul"] == WORLD[7]["p"]
    assert record["answers"]["urgent"]["recalibrated"]["noul"] != WORLD[7]["p"]
    sha = hashlib.sha256((d / "cal.json").read_bytes()).hexdigest()
    assert record["recalibrated"] == {"file": str(d / "cal.json"), "sha256": sha}


def test_the_library_takes_calibration_and_puts_recalibrated_answers_beside_the_wire(
    fitted: tuple[Path, str, dict[str, Any]],
) -> None:
    """Issue 24 §5: "the library calibration=": a Decision keeps its wire answers and carries
    the recalibrated ones beside them, with the file's sha256; a map for another question set
    is refused with one line; a file that is not a calibration fails at build."""
    import asyncio

    from toolnexus import create_classifier
    from toolnexus.calibration.maps import (
        CalibrationFileError,
        CalibrationMismatch,
        load_calibration,
    )
    from toolnexus.calibration.transforms import platt_apply
    from toolnexus.questionfile.load import load_question_set

    d, url, _ = fitted
    _, questions = load_question_set(d / "q.yaml")
    _, other = load_question_set(d / "q-other.yaml")
    cal = load_calibration(d / "cal.json")
    slope, intercept = (cal.file.maps["urgent"].fit.params[k] for k in ("slope", "intercept"))

    async def go(qs: Any) -> Any:
        async with create_classifier(base_url=url, calibration=str(d / "cal.json")) as c:
            return await c.evaluate("ticket 9", qs)

    decision = asyncio.run(go(questions))
    assert decision.noul("urgent").noul == WORLD[9]["p"]
    assert decision.recalibrated["urgent"].noul == platt_apply(WORLD[9]["p"], slope, intercept)
    assert decision.recalibrated["desk"].choice == decision.choice("desk").choice
    assert decision.calibration_sha256 == cal.sha256
    with pytest.raises(CalibrationMismatch, match="questions sha256"):
        asyncio.run(go(other))
    with pytest.raises(CalibrationFileError, match="not a JSON calibration file"):
        create_classifier(base_url=url, calibration=str(d / "q.yaml"))


def test_a_parquet_run_carries_the_recalibrated_values_typed(
    fitted: tuple[Path, str, dict[str, Any]], held_cal: Path
) -> None:
    """Issue 21 item 2: the Parquet answers hold 'recalibrated values included once they
    exist', as typed columns; the run reads back as the JSONL run of the same states."""
    pq = pytest.importorskip("pyarrow.parquet", reason="platform: the parquet extra is missing")
    from toolnexus.records.arrow import iter_parquet_run

    d, url, _ = fitted
    cal = ("--calibration", str(d / "cal.json"), "--overwrite")
    ran = _batch(d, url, "held.jsonl", "held-cal.parquet", *cal, "--format", "parquet")
    assert ran.code == 0, ran.stderr
    row = pq.read_table(d / "held-cal.parquet").slice(0, 1).to_pylist()[0]
    assert set(row["answers"]["urgent"]["recalibrated"]) == {"noul", "band"}
    assert row["answers"]["desk"]["json"] is None and row["extra"] is None
    assert row["recalibrated"]["file"] == str(d / "cal.json")
    jsonl = [json.loads(x) for x in held_cal.read_text().splitlines()]
    assert list(iter_parquet_run(d / "held-cal.parquet")) == jsonl
