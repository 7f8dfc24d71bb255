"""Issue 47: ``report`` reproduces published calibration tables. Every figure, under every
definition option, against an independent computation written here (numpy loops, scikit-learn,
scipy): "each choice becomes explicit and selectable in report ... Today's behaviour stays the
default".

The run is generated: noul, choice and score answers over 240 records, probabilities rounded to
two decimals (so some correct answers carry exactly 0), noul values on the edges of 10 and of
15 bins, and exact 0 and 1.
"""

from __future__ import annotations

import csv
import json
import math
from typing import Any

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.metrics import accuracy_score, log_loss

from clirun import error_line, run_cli
from toolnexus.metrics.definitions import DEFAULT_DEFINITIONS, MetricDefinitions
from toolnexus.report.build import build_report, read_all_labels
from toolnexus.report.reader import read_run

N = 240
OPTIONS = ("billing", "shipping", "technical")
LEVELS = ("0", "1", "2")
LEGEND = {"0": "nothing", "1": "some of it", "2": "all of it"}
T_BOUNDS = (0.05, 20.0)


def _rows(rng: np.random.Generator, width: int) -> list[list[float]]:
    """Two-decimal rows; every fifth row puts exactly 0 on a class."""
    out = []
    for i in range(N):
        raw = rng.dirichlet([0.6] * width)
        if i % 5 == 0:
            raw[i % width] = 0.0
            raw = raw / raw.sum()
        out.append([round(float(v), 2) for v in raw])
    return out


def _noul(rng: np.random.Generator) -> list[float]:
    edges = [k / 10 for k in range(11)] + [k / 15 for k in range(16)]
    values = [round(float(v), 2) for v in rng.beta(0.7, 0.7, N)]
    for i, e in enumerate(edges):
        values[i * 7] = e  # values on the bin edges, 0 and 1 among them
    return values


def _truth(rng: np.random.Generator, rows: list[list[float]]) -> list[int]:
    """Labels drawn from a sharper version of each row: the model is over- or
    under-confident, never exactly calibrated."""
    out = []
    for r in rows:
        w = np.array(r) + 0.05
        out.append(int(rng.choice(len(r), p=w / w.sum())))
    return out


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    rng = np.random.default_rng(47)
    p = _noul(rng)
    y = [int(rng.random() < min(max(v * 0.8 + 0.1, 0.0), 1.0)) for v in p]
    choice_rows, score_rows = _rows(rng, 3), _rows(rng, 3)
    choice_y, score_y = _truth(rng, choice_rows), _truth(rng, score_rows)
    records, labels = [], []
    for i in range(N):
        c, s = choice_rows[i], score_rows[i]
        pick, level = int(np.argmax(c)), int(np.argmax(s))
        records.append(
            {
                "id": f"r{i}",
                "model": "m",
                "calibrated": True,
                "cached": False,
                "usage": {"input_tokens": 10, "output_tokens": 1, "cost": None},
                "answers": {
                    "urgent": {"type": "noul", "noul": p[i], "band": "uncertain",
                               "flags": []},
                    "desk": {"type": "choice", "choice": OPTIONS[pick],
                             "probabilities": dict(zip(OPTIONS, c, strict=True)),
                             "confidence": max(c), "near_uniform": False, "band": "yes",
                             "flags": []},
                    "impact": {"type": "score", "score": float(np.dot(s, [0, 1, 2])),
                               "legend": LEGEND,
                               "probabilities": dict(zip(LEVELS, s, strict=True)),
                               "confidence": max(s), "level": level,
                               "label": LEGEND[str(level)], "band": "yes", "flags": []},
                },
                "flags": [],
                "invalid": None,
            }
        )  # fmt: skip
        labels.append(
            {"id": f"r{i}", "urgent": "true" if y[i] else "false",
             "desk": OPTIONS[choice_y[i]], "impact": str(score_y[i])}
        )  # fmt: skip
    folder = tmp_path_factory.mktemp("definitions")
    run = folder / "run.jsonl"
    run.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    label_file = folder / "labels.csv"
    with label_file.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, ["id", "urgent", "desk", "impact"])
        writer.writeheader()
        writer.writerows(labels)
    noul_rows = np.column_stack([p, 1.0 - np.array(p)])
    return {
        "stats": read_run(str(run), read_all_labels(str(label_file)), jobs=1),
        "run": str(run),
        "labels": str(label_file),
        # per question: probability rows, label index, the pick (top) index
        "urgent": (noul_rows, np.array([0 if v else 1 for v in y]), np.array(y), np.array(p)),
        "desk": (np.array(choice_rows), np.array(choice_y)),
        "impact": (np.array(score_rows), np.array(score_y)),
    }


# --- the independent definitions ------------------------------------------------------------


def ref_ece(y: Any, p: Any, bins: int, scheme: str, edges: str) -> float:
    """ECE by an explicit loop over the bins, each membership written as its interval."""
    y, p = np.asarray(y, dtype=float), np.asarray(p, dtype=float)
    if scheme == "width":
        e = [k / bins for k in range(bins + 1)]
    else:
        e = sorted(set(np.quantile(p, [k / bins for k in range(bins + 1)]).tolist()))
    last = len(e) - 2
    total = 0.0
    for b in range(len(e) - 1):
        lo, hi = e[b], e[b + 1]
        if edges == "left":
            m = ((lo <= p) & (p < hi)) | ((b == last) & (p >= hi)) | ((b == 0) & (p < lo))
        else:
            m = ((lo < p) & (p <= hi)) | ((b == 0) & (p <= lo)) | ((b == last) & (p > hi))
        if m.any():
            total += m.sum() / len(p) * abs(y[m].mean() - p[m].mean())
    return total


def pairs_of(data: dict[str, Any], key: str, of: str) -> list[tuple[Any, Any]]:
    """What ``of`` bins for a question, written from the issue's words."""
    if key == "urgent":
        rows, _, y, p = data[key]
        if of in ("auto", "yes"):
            return [(y, p)]
        if of == "top":
            right = ((p >= 0.5) == (y == 1)).astype(float)
            return [(right, np.maximum(p, 1 - p))]
        return [(y, p), (1 - y, 1 - p)]
    rows, labels = data[key]
    if of == "class":
        return [((labels == k).astype(float), rows[:, k]) for k in range(rows.shape[1])]
    pick = rows.argmax(axis=1)
    return [((pick == labels).astype(float), rows[np.arange(len(rows)), pick])]


def ref_figure_ece(data: dict[str, Any], key: str, d: MetricDefinitions) -> float:
    pairs = pairs_of(data, key, d.ece_of)
    return float(np.mean([ref_ece(y, p, d.ece_bins, d.ece_scheme, d.ece_edges) for y, p in pairs]))


def rows_labels(data: dict[str, Any], key: str) -> tuple[Any, Any]:
    return data[key][0], data[key][1]


def ref_nll(rows: Any, labels: Any, floor: float | None, noul: Any = None) -> float:
    if floor is None:
        if noul is not None:  # log_loss's own form: p clipped, then 1 - p
            y, p = noul
            c = np.clip(p, 1e-15, 1 - 1e-15)
            return float(-np.mean(np.log(np.where(y == 1, c, 1 - c))))
        said = np.clip(rows[np.arange(len(rows)), labels], 1e-15, 1 - 1e-15)
        return float(-np.mean(np.log(said)))
    r = np.maximum(rows, floor)
    r = r / r.sum(axis=1, keepdims=True)
    return float(log_loss(labels, r, labels=list(range(rows.shape[1]))))


def ref_temperature(rows: Any, labels: Any, floor: float) -> float:
    r = np.maximum(rows, floor)
    z = np.log(r / r.sum(axis=1, keepdims=True))

    def loss(log_t: float) -> float:
        s = z / math.exp(log_t)
        top = s.max(axis=1, keepdims=True)
        lse = np.log(np.exp(s - top).sum(axis=1)) + top[:, 0]
        return float(np.mean(lse - s[np.arange(len(s)), labels]))

    bounds = (math.log(T_BOUNDS[0]), math.log(T_BOUNDS[1]))
    found = minimize_scalar(loss, bounds=bounds, method="bounded", options={"xatol": 1e-10})
    return math.exp(found.x)


def ref_floor(p: Any, d: MetricDefinitions, rows: Any = None) -> tuple[float, float, float]:
    """The documented draw: ``u = default_rng(seed).random((draws, n))``; an outcome is
    ``u < p``; a class draw counts the cumulative probabilities (all but the last) <= u."""
    u = np.random.default_rng(d.seed).random((d.floor_draws, len(p[0][1])))
    values = []
    for draw in u:
        if rows is None:
            ((_, q),) = p
            values.append(ref_ece(draw < q, q, d.ece_bins, d.ece_scheme, d.ece_edges))
        else:
            cum = np.cumsum(rows, axis=1)[:, :-1]
            drawn = (draw[:, None] >= cum).sum(axis=1)
            values.append(np.mean([
                ref_ece(drawn == k, q, d.ece_bins, d.ece_scheme, d.ece_edges)
                for k, (_, q) in enumerate(p)
            ]))  # fmt: skip
    return float(np.mean(values)), float(np.median(values)), float(np.percentile(values, 95))


# --- the tests ------------------------------------------------------------------------------

ECE_CASES = [
    pytest.param(bins, scheme, edges, of, id=f"{bins}-{scheme}-{edges}-{of}")
    for bins in (10, 15)
    for scheme in ("width", "mass")
    for edges in ("left", "right")
    for of in ("auto", "top", "class", "yes")
]


@pytest.mark.parametrize(("bins", "scheme", "edges", "of"), ECE_CASES)
def test_every_ece_matches_an_independent_loop(
    data: dict[str, Any], bins: int, scheme: str, edges: str, of: str
) -> None:
    """--ece-bins N, --ece-scheme width|mass (tied probabilities in one bin), --ece-edges
    left|right and --ece-of auto|top|class|yes each give the ECE the issue defines."""
    d = MetricDefinitions(ece_bins=bins, ece_scheme=scheme, ece_edges=edges, ece_of=of)
    for key in ("urgent", "desk", "impact"):
        want = ref_figure_ece(data, key, d)
        question = data["stats"].question_report(key, None, False, d)
        assert question.metrics is not None
        assert question.metrics.ece == pytest.approx(want, abs=1e-12), key
        assert sum(b.n for b in question.reliability) == N


def test_the_default_is_todays_report(data: dict[str, Any]) -> None:
    """Today's behaviour stays the default: the historic ECE (10 width bins, [lo, hi)), noul
    p(yes) and top-1 elsewhere, and nll equal to log_loss, digit for digit."""
    plain = build_report([data["run"]], labels_path=data["labels"], intervals=False)
    assert plain.definitions == DEFAULT_DEFINITIONS
    for key in ("urgent", "desk", "impact"):
        m = plain.questions[key].metrics
        assert m is not None
        assert m.nll == m.log_loss
        assert m.ece == pytest.approx(ref_figure_ece(data, key, DEFAULT_DEFINITIONS), abs=1e-12)
        rows, labels = rows_labels(data, key)
        noul = (data[key][2], data[key][3]) if key == "urgent" else None
        assert m.log_loss == pytest.approx(ref_nll(rows, labels, None, noul), abs=1e-12)


@pytest.mark.parametrize("floor", [pytest.param(None, id="none"), pytest.param(1e-6, id="1e-6"),
                                   pytest.param(0.005, id="0.005")])  # fmt: skip
def test_nll_and_accuracy_at_three_floors(data: dict[str, Any], floor: float | None) -> None:
    """--log-floor P: probabilities floored at P and renormalised before any log; nll equals
    log_loss when no floor is given, and log_loss stays as it is."""
    d = MetricDefinitions(log_floor=floor)
    for key in ("urgent", "desk", "impact"):
        m = data["stats"].question_report(key, None, False, d).metrics
        before = data["stats"].question_report(key, None, False).metrics
        assert m is not None and before is not None
        rows, labels = rows_labels(data, key)
        noul = (data[key][2], data[key][3]) if key == "urgent" else None
        assert m.nll == pytest.approx(ref_nll(rows, labels, floor, noul), abs=1e-12), key
        assert m.log_loss == before.log_loss
        if key == "urgent":
            want = accuracy_score(data[key][2], (data[key][3] >= 0.5).astype(int))
        else:
            want = accuracy_score(labels, rows.argmax(axis=1))
        assert m.accuracy == pytest.approx(want, abs=1e-15)


@pytest.mark.parametrize("floor", [pytest.param(1e-6, id="1e-6"), pytest.param(0.005, id="0.005")])
def test_refit_temperature_per_type(data: dict[str, Any], floor: float) -> None:
    """--fit-temperature: for every type, noul included, the single T minimising the NLL at
    the chosen floor (scipy's bounded search on the same interval)."""
    d = MetricDefinitions(log_floor=floor, fit_temperature=True)
    for key in ("urgent", "desk", "impact"):
        m = data["stats"].question_report(key, None, False, d).metrics
        assert m is not None and m.temperature is not None
        rows, labels = rows_labels(data, key)
        assert m.temperature == pytest.approx(ref_temperature(rows, labels, floor), rel=1e-6)


@pytest.mark.parametrize(
    ("bins", "scheme", "edges", "of"),
    [
        pytest.param(15, "width", "right", "top", id="15-width-right-top"),
        pytest.param(10, "mass", "left", "class", id="10-mass-left-class"),
        pytest.param(15, "width", "left", "yes", id="15-width-left-yes"),
    ],
)
def test_noise_floor_mean_median_p95_for_a_fixed_seed(
    data: dict[str, Any], bins: int, scheme: str, edges: str, of: str
) -> None:
    """The noise floor's mean beside its median and p95, --floor-draws N and --seed S."""
    d = MetricDefinitions(ece_bins=bins, ece_scheme=scheme, ece_edges=edges, ece_of=of,
                          floor_draws=40, seed=5)  # fmt: skip
    for key in ("urgent", "desk"):
        m = data["stats"].question_report(key, None, True, d).metrics
        assert m is not None and m.ece_uncertainty is not None
        u = m.ece_uncertainty
        pairs = pairs_of(data, key, of)
        rows = None
        if of == "class":
            rows = data[key][0]
        mean, median, p95 = ref_floor(pairs, d, rows)
        assert (u.floor_mean, u.floor_median, u.floor_p95) == pytest.approx(
            (mean, median, p95), abs=1e-12
        ), key
        assert (u.floor_draws, u.seed) == (40, 5)


def test_the_historic_floor_takes_draws_and_seed(data: dict[str, Any]) -> None:
    """--floor-draws and --seed reach the default bins' floor too, and its mean is shown."""
    a = MetricDefinitions(floor_draws=200, seed=1)
    m = data["stats"].question_report("urgent", None, True, a).metrics
    assert m is not None and m.ece_uncertainty is not None
    u = m.ece_uncertainty
    assert (u.floor_draws, u.seed) == (200, 1)
    assert 0.0 < u.floor_mean < u.floor_p95


@pytest.mark.parametrize("floor", [pytest.param(None, id="none"), pytest.param(1e-6, id="1e-6")])
def test_the_pooled_row(data: dict[str, Any], floor: float | None) -> None:
    """--pool: one block over all labelled answers of all questions (accuracy, NLL, ECE with
    its floor; noul enters as a two-class distribution under top)."""
    d = MetricDefinitions(ece_bins=15, ece_edges="right", log_floor=floor, pool=True,
                          floor_draws=40, fit_temperature=True)  # fmt: skip
    report = build_report([data["run"]], labels_path=data["labels"], intervals=True,
                          definitions=d)  # fmt: skip
    pooled = report.pooled
    assert pooled is not None
    right, top, terms = [], [], []
    for key in ("urgent", "desk", "impact"):
        ((y, p),) = pairs_of(data, key, "top")
        right.append(y)
        top.append(p)
        rows, labels = rows_labels(data, key)
        noul = (data[key][2], data[key][3]) if key == "urgent" else None
        terms.append(ref_nll(rows, labels, floor, noul) * len(rows))
    y_all, p_all = np.concatenate(right), np.concatenate(top)
    assert pooled.labelled == 3 * N
    assert pooled.accuracy == pytest.approx(y_all.mean(), abs=1e-15)
    assert pooled.nll == pytest.approx(sum(terms) / (3 * N), abs=1e-12)
    assert pooled.ece == pytest.approx(ref_ece(y_all, p_all, 15, "width", "right"), abs=1e-12)
    assert pooled.ece_uncertainty is not None
    mean, _, _ = ref_floor([(y_all, p_all)], d)
    assert pooled.ece_uncertainty.floor_mean == pytest.approx(mean, abs=1e-12)
    assert pooled.temperature is not None
    data_json = report.to_json()
    assert data_json["pooled"]["ece_of"] == "top"
    assert data_json["definitions"]["ece_bins"] == 15


def test_every_definition_is_a_report_option() -> None:
    """ONE typed value the CLI's options are built from: each field of MetricDefinitions is a
    `report` option with its flag."""
    from dataclasses import fields

    from toolnexus.cli.report_cmd import definition_flags

    flags = definition_flags()
    assert [f.name for f in fields(flags)] == [f.name for f in fields(MetricDefinitions)]
    assert MetricDefinitions(ece_bins=15, pool=True).flags() == ["--ece-bins 15", "--pool"]


def test_invalid_answers_are_left_out_and_counted(data: dict[str, Any], tmp_path: Any) -> None:
    """Refused and invalid answers are left out of probability metrics and counted beside
    them: a run whose first 30 labelled answers are flagged invalid measures what the run
    without those 30 records measures."""
    from pathlib import Path

    lines = Path(data["run"]).read_text(encoding="utf-8").splitlines()
    flagged = []
    for i, line in enumerate(lines):
        record = json.loads(line)
        if i < 30:
            for answer in record["answers"].values():
                answer["flags"] = ["invalid"]
        flagged.append(json.dumps(record))
    run, rest = tmp_path / "flagged.jsonl", tmp_path / "rest.jsonl"
    run.write_text("\n".join(flagged) + "\n", encoding="utf-8")
    rest.write_text("\n".join(lines[30:]) + "\n", encoding="utf-8")
    d = MetricDefinitions(pool=True, log_floor=1e-6)
    got = build_report([str(run)], labels_path=data["labels"], intervals=False, definitions=d)
    want = build_report([str(rest)], labels_path=data["labels"], intervals=False,
                        definitions=d)  # fmt: skip
    for key in ("urgent", "desk", "impact"):
        q = got.questions[key]
        assert (q.invalid, q.labelled_invalid, q.labelled) == (30, 30, N - 30)
        assert q.metrics == want.questions[key].metrics
        assert got.to_json()["questions"][key]["labelled_invalid"] == 30
    assert got.pooled is not None and got.pooled.invalid == 90
    assert want.pooled is not None and got.pooled.nll == want.pooled.nll
    assert "labelled_invalid" not in want.to_json()["questions"]["desk"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        pytest.param(["--ece-scheme", "quantile"], "--ece-scheme takes width or mass", id="scheme"),
        pytest.param(["--ece-edges", "both"], "--ece-edges takes left or right", id="edges"),
        pytest.param(["--ece-of", "all"], "--ece-of takes auto or top or class or yes", id="of"),
        pytest.param(["--ece-bins", "0"], "--ece-bins takes 1..1000 bins", id="bins"),
        pytest.param(["--log-floor", "0.7"], "--log-floor takes a probability", id="floor"),
        pytest.param(["--floor-draws", "0"], "--floor-draws takes 1..1000000", id="draws"),
        pytest.param(["--seed", "-1"], "--seed takes a non-negative integer", id="seed"),
    ],
)
def test_a_bad_definition_is_one_line_and_exit_2(
    data: dict[str, Any], args: list[str], words: str
) -> None:
    ran = run_cli("report", data["run"], "--labels", data["labels"], *args)
    assert ran.code == 2
    assert words in error_line(ran.stderr)


def test_pool_and_temperature_need_labels(data: dict[str, Any]) -> None:
    ran = run_cli("report", data["run"], "--pool")
    assert ran.code == 2 and "need --labels" in error_line(ran.stderr)


def test_the_cli_reports_every_definition_and_fails_on_nll(data: dict[str, Any]) -> None:
    """`--fail-on` accepts both names (nll, log_loss); the table and the JSON name the
    definitions; the pooled row and the temperatures are shown."""
    options = ["--ece-bins", "15", "--ece-edges", "right", "--ece-of", "top", "--log-floor",
               "1e-6", "--fit-temperature", "--pool", "--no-intervals"]  # fmt: skip
    fail_on = "impact.nll>0.5,impact.log_loss>100"
    ran = run_cli("report", data["run"], "--labels", data["labels"], *options,
                  "--format", "json", "--fail-on", fail_on)  # fmt: skip
    assert ran.code == 1, ran.stderr
    assert "impact" in ran.stderr and "nll" in ran.stderr and "log_loss" not in ran.stderr
    got = json.loads(ran.out)
    assert got["definitions"] == {
        "ece_bins": 15, "ece_scheme": "width", "ece_edges": "right", "ece_of": "top",
        "log_floor": 1e-6, "floor_draws": 1000, "seed": 0, "fit_temperature": True,
        "pool": True,
    }  # fmt: skip
    assert got["pooled"]["labelled"] == 3 * N
    table = run_cli("report", data["run"], "--labels", data["labels"], *options,
                    "--format", "table")  # fmt: skip
    assert table.code == 0, table.stderr
    text = " ".join(table.out.split())
    assert "definitions: ece 15 width bins, right edges, of top; log floor 1e-06" in text
    assert "all questions pooled: 720 labelled" in text


def test_a_class_not_offered_to_a_record_takes_no_floor() -> None:
    """--log-floor floors the offered classes (and the label's) and renormalises: a record
    offered two of three options does not give the third the floor's mass."""
    from toolnexus.metrics.definitions import label_probability, padded

    rows = padded([[0.6, 0.4], [0.2, 0.3, 0.5]], 3)
    assert label_probability(rows, [0, 2], 0.1).tolist() == pytest.approx([0.6, 0.5])
    assert label_probability(rows, [2, 0], 0.1).tolist() == pytest.approx([0.1 / 1.1, 0.2])
