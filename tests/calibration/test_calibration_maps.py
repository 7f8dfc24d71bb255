"""The calibration map file (issue 24 §4-5): "The file names, per question, the question-set
digest, the served model and how the answers were asked (style, pack size), each map with its
parameters, and its cross-validated before/after ece, brier and log_loss"; applying: "A map
fitted on one model, question set or way of asking ... is refused for another (seed 000: a
threshold tuned against one backend does not transfer to another), with one line naming both.
Records keep the wire's probabilities untouched ... temperature scaling never changes the
argmax, so choice and level stay; the decision says ... by which file (its sha256)"."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.calibration.fit import fit_noul, fit_temperature_map
from toolnexus.calibration.maps import (
    CalibrationFile,
    CalibrationFileError,
    CalibrationMismatch,
    MapFit,
    Provenance,
    QuestionMap,
    dumps_calibration,
    load_calibration,
)
from toolnexus.core.errors import ClassifierError, ConfigError
from toolnexus.report.fitting import save_calibration

SHA = "3ed9b510b25b8953" * 4
PACK1 = Provenance(SHA, "typesafe/jev-1.13-20260917", "systemone", 1)
METRICS = {"ece": 0.1, "brier": 0.2, "log_loss": 0.6}


def _fit(kind: str, params: dict[str, Any]) -> MapFit:
    return MapFit(kind, params, 120, METRICS, {"ece": 0.02, "brier": 0.18, "log_loss": 0.5})


def _file() -> CalibrationFile:
    return CalibrationFile(
        {
            "risky": QuestionMap("noul", PACK1, _fit("platt", {"slope": 0.5, "intercept": 0.1})),
            "flat": QuestionMap(
                "noul", PACK1, _fit("isotonic", {"x": [0.1, 0.5, 0.9], "y": [0.2, 0.2, 0.7]})
            ),
            "desk": QuestionMap("choice", PACK1, _fit("temperature", {"temperature": 2.0})),
        },
        {"tiny": "12 labelled records, fewer than 50: no map fitted"},
    )


def test_a_file_round_trips_and_its_sha256_is_of_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "cal.json"
    sha = save_calibration(path, _file())
    data = path.read_bytes()
    assert sha == hashlib.sha256(data).hexdigest()
    assert data == dumps_calibration(_file()) and data.endswith(b"}\n")
    loaded = load_calibration(path)
    assert loaded.sha256 == sha and loaded.path == str(path)
    assert dumps_calibration(loaded.file) == data
    entry = json.loads(data)["questions"]["risky"]
    assert entry["provenance"] == {
        "questions_sha256": SHA, "model": "typesafe/jev-1.13-20260917",
        "style": "systemone", "pack_size": 1,
    }  # fmt: skip
    assert set(entry["before"]) == set(entry["after"]) == {"ece", "brier", "log_loss"}


def test_a_fitted_map_saves_and_loads(tmp_path: Path) -> None:
    """What ``fit`` returns is what the file holds (isotonic points, a temperature)."""
    ps = [i / 100 for i in range(100)] * 2
    ys = [int(i % 100 > 40) if i % 7 else 1 - int(i % 100 > 40) for i in range(200)]
    noul = fit_noul(ys, ps)
    rows = [{"a": 0.7, "b": 0.3}, {"a": 0.4, "b": 0.6}] * 40
    choice = fit_temperature_map(["a", "b", "b", "a"] * 20, rows, ("a", "b"))
    assert isinstance(noul, MapFit) and isinstance(choice, MapFit)
    cal = CalibrationFile({"n": QuestionMap("noul", PACK1, noul),
                           "c": QuestionMap("choice", PACK1, choice)})  # fmt: skip
    save_calibration(tmp_path / "cal.json", cal)
    loaded = load_calibration(tmp_path / "cal.json").file
    assert loaded.maps["n"].recalibrate_noul(0.33) == cal.maps["n"].recalibrate_noul(0.33)
    assert loaded.maps["c"].fit.params == cal.maps["c"].fit.params


@pytest.mark.parametrize(
    ("answers", "named"),
    [
        pytest.param(Provenance(SHA, "typesafe/jev-1.13-20260917", "systemone", 20),
                     ("pack size 1", "pack size 20"), id="pack-size"),
        pytest.param(Provenance(SHA, "gpt-judge", "llm", 1),
                     ("model typesafe/jev-1.13-20260917, style systemone",
                      "model gpt-judge, style llm"), id="model-and-style"),
        pytest.param(Provenance("0" * 64, "typesafe/jev-1.13-20260917", "systemone", 1),
                     ("questions sha256 3ed9b510b25b", "questions sha256 000000000000"),
                     id="question-set"),
    ],
)  # fmt: skip
def test_a_map_fitted_for_other_answers_is_refused_in_one_line_naming_both(
    tmp_path: Path, answers: Provenance, named: tuple[str, str]
) -> None:
    save_calibration(tmp_path / "cal.json", _file())
    loaded = load_calibration(tmp_path / "cal.json")
    with pytest.raises(CalibrationMismatch) as caught:
        loaded.map_for("risky", answers)
    message = str(caught.value)
    assert isinstance(caught.value, ConfigError) and isinstance(caught.value, ClassifierError)
    assert "\n" not in message and "cal.json" in message and "'risky'" in message
    assert f"fitted for {named[0]}" in message and f"these answers are {named[1]}" in message
    assert "does not transfer" in message


def test_a_map_for_the_same_answers_is_given_and_an_unmapped_key_is_none(tmp_path: Path) -> None:
    save_calibration(tmp_path / "cal.json", _file())
    loaded = load_calibration(tmp_path / "cal.json")
    assert loaded.map_for("risky", PACK1) is not None
    assert loaded.map_for("tiny", PACK1) is None


def _bad(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def _entry(**change: Any) -> dict[str, Any]:
    entry = _file().to_json()["questions"]["risky"]
    entry.update(change)
    return {"format": "toolnexus-calibration", "version": 1, "questions": {"risky": entry}}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(b"{not json", "cal.json:1: not a JSON calibration file", id="not-json"),
        pytest.param(_bad({"questions": {}}), "not a calibration file", id="no-format"),
        pytest.param(_bad({"format": "toolnexus-calibration", "version": 9, "questions": {}}),
                     "version 9", id="version"),
        pytest.param(_bad(_entry(kind="temperature")), "a noul map is platt or isotonic",
                     id="kind-for-type"),
        pytest.param(_bad(_entry(params={"slope": "steep", "intercept": 0})),
                     "params.slope must be a finite number", id="platt-params"),
        pytest.param(_bad(_entry(kind="isotonic", params={"x": [0.5, 0.2], "y": [0.1, 0.2]})),
                     "strictly increasing", id="isotonic-x"),
        pytest.param(_bad(_entry(kind="isotonic", params={"x": [0.2, 0.5], "y": [0.3, 0.1]})),
                     "non-decreasing", id="isotonic-y"),
        pytest.param(_bad(_entry(provenance={**PACK1.to_json(), "pack_size": 0})),
                     "pack_size must be a whole number >= 1", id="pack-size"),
        pytest.param(_bad(_entry(provenance={**PACK1.to_json(), "model": ""})),
                     "provenance.model must be a non-empty string", id="model"),
    ],
)  # fmt: skip
def test_a_broken_file_is_one_line_naming_file_and_key(
    tmp_path: Path, data: bytes, message: str
) -> None:
    path = tmp_path / "cal.json"
    path.write_bytes(data)
    with pytest.raises(CalibrationFileError) as caught:
        load_calibration(path)
    text = str(caught.value)
    assert message in text and str(path) in text and "\n" not in text
    assert text.startswith("classifier: ") and "--fit-calibration" in text


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(CalibrationFileError, match="cannot read the calibration file"):
        load_calibration(tmp_path / "absent.json")


def test_a_temperature_map_keeps_the_wire_and_adds_beside_it() -> None:
    """Wire untouched; recalibrated probabilities and a confidence recomputed from them by the
    wire's formula (issue 33 item 2: "a recalibrated answer's confidence is computed by the same
    formula from the recalibrated probabilities"), not their maximum."""
    qmap = _file().maps["desk"]
    answer = {"choice": "a", "probabilities": {"a": 0.9, "b": 0.1}, "confidence": 0.9}
    before = json.dumps(answer, sort_keys=True)
    extra = qmap.recalibrated(answer)
    assert json.dumps(answer, sort_keys=True) == before
    assert extra["probabilities"]["a"] == pytest.approx(0.75)  # sqrt(.9) / (sqrt(.9) + sqrt(.1))
    top = max(extra["probabilities"].values())
    assert extra["confidence"] == pytest.approx((top - 1 / 2) / (1 - 1 / 2))  # 0.5, not 0.75
    noul = _file().maps["risky"].recalibrated({"noul": 0.99})
    assert set(noul) == {"noul"} and noul["noul"] < 0.99


distributions = st.lists(st.integers(0, 100), min_size=2, max_size=10).filter(any)


@settings(max_examples=200)
@given(distributions, st.floats(0.05, 20.0))
def test_temperature_scaling_never_changes_the_argmax(weights: list[int], t: float) -> None:
    """So ``choice`` and ``level`` stay: the argmax of the recalibrated probabilities is the
    wire's argmax, ties included."""
    total = sum(weights)
    probs = {str(i): w / total for i, w in enumerate(weights)}
    qmap = QuestionMap("score", PACK1, _fit("temperature", {"temperature": t}))
    after = qmap.recalibrated({"probabilities": probs})["probabilities"]
    wire_top = max(probs.values())
    top = max(after.values())
    assert {k for k, v in after.items() if v == top} == {
        k for k, v in probs.items() if v == wire_top
    }
    assert sum(after.values()) == pytest.approx(1.0)
