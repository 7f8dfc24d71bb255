"""Issue 24 in ``toolnexus report``: every ``ece`` with its interval and noise floor, ``rps`` for
score questions, choice calibration beyond top-1, the noul threshold table, and the new
``--fail-on`` names. Runs are written here as batch records (the fields ``report`` reads)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from clirun import error_line, run_cli
from toolnexus.calibration.scores import rps_term
from toolnexus.cli.schema_cmd import schema_text

N = 300
DESKS = ("billing", "shipping", "technical")
SCHEMA = jsonschema.Draft202012Validator(json.loads(schema_text("report")))


def _split(rng: random.Random) -> list[float]:
    raw = [rng.uniform(0.1, 1.0) for _ in range(3)]
    values = [round(r / sum(raw), 2) for r in raw]
    values[0] = round(1.0 - values[1] - values[2], 2)
    return values


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[dict[str, Any]]]:
    """A labelled run: noul calibrated by construction (labels drawn at p), choice and score
    with probabilities unrelated to their labels (miscalibrated)."""
    d = tmp_path_factory.mktemp("reportcal")
    rng = random.Random(7)
    records, labels = [], ["id,urgent,desk,impact"]
    for i in range(N):
        p = round(rng.random(), 2)
        desk = dict(zip(DESKS, _split(rng), strict=True))
        impact = _split(rng)
        pick = max(desk, key=desk.__getitem__)
        level = max(range(3), key=impact.__getitem__)
        records.append({
            "id": f"r{i}", "model": "m", "calibrated": True,
            "answers": {
                "urgent": {"type": "noul", "noul": p, "band": "uncertain"},
                "desk": {"type": "choice", "choice": pick, "probabilities": desk,
                         "confidence": desk[pick]},
                "impact": {"type": "score", "score": sum(k * v for k, v in enumerate(impact)),
                           "level": level, "probabilities": {str(k): v for k, v in
                                                             enumerate(impact)},
                           "confidence": impact[level]},
            },
        })  # fmt: skip
        yes = rng.random() < p
        labels.append(f"r{i},{'yes' if yes else 'no'},{DESKS[i % 3]},{i % 3}")
    (d / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    (d / "labels.csv").write_text("\n".join(labels) + "\n", "utf-8")
    return d / "run.jsonl", d / "labels.csv", records


def _json(run: tuple[Path, Path, Any], *extra: str) -> dict[str, Any]:
    ran = run_cli("report", str(run[0]), "--labels", str(run[1]), "--format", "json", *extra)
    assert ran.code == 0, ran.stderr
    data: dict[str, Any] = json.loads(ran.out)
    SCHEMA.validate(data)
    return data


def test_every_ece_has_its_interval_and_floor_and_no_intervals_leaves_them_out(
    run: tuple[Path, Path, Any],
) -> None:
    """Issue 24 §1: "for every ece, a bootstrap interval ... and the noise floor"."""
    data = _json(run)
    for key in ("urgent", "desk", "impact"):
        m = data["questions"][key]["metrics"]
        u = m["ece_uncertainty"]
        assert u["low"] <= m["ece"] <= u["high"], key
        assert u["floor_median"] <= u["floor_p95"]
        assert u["above_floor"] == (m["ece"] > u["floor_p95"])
    # calibrated by construction: at or under the floor; the others are not
    assert not data["questions"]["urgent"]["metrics"]["ece_uncertainty"]["above_floor"]
    assert data["questions"]["desk"]["metrics"]["ece_uncertainty"]["above_floor"]
    assert _json(run) == data, "a fixed seed: the same figures every time"
    plain = _json(run, "--no-intervals")
    assert all("ece_uncertainty" not in q["metrics"] for q in plain["questions"].values())


def test_the_table_says_whether_an_ece_is_above_the_floor(run: tuple[Path, Path, Any]) -> None:
    ran = run_cli("report", str(run[0]), "--labels", str(run[1]), "--format", "table")
    assert ran.code == 0, ran.stderr
    text = " ".join(ran.out.split())  # a narrow terminal wraps the headings
    assert "floor p95" in text
    assert "indistinguishable from calibrated" in text and "above the floor" in text


def test_rps_is_the_mean_ranked_probability_score_of_the_labelled_levels(
    run: tuple[Path, Path, list[dict[str, Any]]],
) -> None:
    """Issue 24 §2: rps = 1/(K-1) sum_k (P_k - O_k)^2, the mean over records."""
    records = run[2]
    expected = sum(
        rps_term(i % 3, [r["answers"]["impact"]["probabilities"][str(k)] for k in range(3)])
        for i, r in enumerate(records)
    ) / len(records)
    assert _json(run)["questions"]["impact"]["metrics"]["rps"] == pytest.approx(expected)


def test_choice_has_one_vs_rest_per_option_and_accuracy_against_coverage(
    run: tuple[Path, Path, Any],
) -> None:
    """Issue 24 §3: per-option reliability and ece for options with >= 30 labels; accuracy
    against coverage on a grid of confidence floors."""
    m = _json(run)["questions"]["desk"]["metrics"]
    assert [o["option"] for o in m["per_option"]] == list(DESKS)
    assert all(o["labelled"] == N // 3 and o["ece"] is not None for o in m["per_option"])
    floors = [p["floor"] for p in m["accuracy_coverage"]]
    assert floors[0] == 0.0 and floors[-1] == 1.0
    assert m["accuracy_coverage"][0]["coverage"] == 1.0
    answered = [p["answered"] for p in m["accuracy_coverage"]]
    assert answered == sorted(answered, reverse=True)


def test_the_noul_threshold_table_is_in_the_json(run: tuple[Path, Path, Any]) -> None:
    table = _json(run)["questions"]["urgent"]["metrics"]["threshold_table"]
    assert len(table) == 21 and table[0]["coverage"] == 1.0


@pytest.mark.parametrize(
    ("condition", "code", "named"),
    [
        pytest.param("ece>floor", 1, "desk", id="ece-above-floor-met"),
        pytest.param("urgent.ece>floor", 0, None, id="calibrated-noul-not-above"),
        pytest.param("rps>0.05", 1, "impact", id="rps-met"),
        pytest.param("rps>0.9", 0, None, id="rps-not-met"),
    ],
)
def test_fail_on_takes_the_new_names(
    run: tuple[Path, Path, Any], condition: str, code: int, named: str | None
) -> None:
    """Issue 24 §8: "--fail-on accepts the new names (ece>floor means above the floor's 95th
    percentile)"."""
    ran = run_cli("report", str(run[0]), "--labels", str(run[1]), "--format", "json",
                  "--fail-on", condition)  # fmt: skip
    assert ran.code == code, ran.stderr
    if named:
        assert named in error_line(ran.stderr)


def test_ece_above_floor_without_the_intervals_is_a_usage_error(
    run: tuple[Path, Path, Any],
) -> None:
    ran = run_cli("report", str(run[0]), "--labels", str(run[1]), "--no-intervals",
                  "--fail-on", "ece>floor")  # fmt: skip
    assert ran.code == 2
    assert "not --no-intervals" in error_line(ran.stderr)


def test_an_option_offered_only_to_unlabelled_answers_reads_zero_per_option(
    tmp_path: Path,
) -> None:
    """One-vs-rest over every option of the question: an option that no labelled answer was
    offered is left out with its count (0), not a crash."""
    rows = [
        ("u0", {"a": 0.2, "b": 0.3, "c": 0.5}, None),
        ("l1", {"a": 0.7, "b": 0.3}, "a"),
    ]
    (tmp_path / "run.jsonl").write_text("".join(
        json.dumps({"id": i, "model": "m", "calibrated": True, "answers": {"d": {
            "type": "choice", "choice": max(p, key=p.__getitem__), "probabilities": p,
            "confidence": max(p.values())}}}) + "\n" for i, p, _ in rows
    ), "utf-8")  # fmt: skip
    (tmp_path / "labels.csv").write_text("id,d\nl1,a\n", "utf-8")
    data = _json((tmp_path / "run.jsonl", tmp_path / "labels.csv", None))
    per_option = data["questions"]["d"]["metrics"]["per_option"]
    assert [(o["option"], o["labelled"]) for o in per_option] == [("a", 1), ("b", 0), ("c", 0)]


def test_by_default_the_intervals_stop_past_a_sample_size_and_intervals_forces_them(
    run: tuple[Path, Path, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24: 100,000 labelled records within 2.0x json.loads "or intervals opt-in behind a
    flag": by default they are computed where a bare ECE misleads (a small sample)."""
    from toolnexus.report import accumulators

    monkeypatch.setattr(accumulators, "AUTO_INTERVALS_MAX", N - 1)
    auto = _json(run)
    assert all("ece_uncertainty" not in q["metrics"] for q in auto["questions"].values())
    forced = _json(run, "--intervals")
    assert all("ece_uncertainty" in q["metrics"] for q in forced["questions"].values())
