"""The typed report (issue 16 item 4): "``build_report`` returns a typed ``Report`` (runs,
per-question reports, comparison) that the table, JSON, HTML and ``--fail-on`` read by
attribute; each metric has one definition, a function over ``(y_true, y_prob)`` arrays with
scikit-learn's argument order and names (the calibration issue's bootstrap re-evaluates them on
resamples), used by the accumulators"."""

from __future__ import annotations

import dataclasses
import json
import random
from dataclasses import dataclass, field

import numpy as np
import pytest
from sklearn import metrics as sk

from paths import TESTS
from toolnexus.metrics.arrays import ProbabilityRows
from toolnexus.metrics.measures import (
    EPS,
    brier_score_loss,
    expected_calibration_error,
    log_loss,
    multiclass_brier_score,
    multiclass_log_loss,
    roc_auc_score,
)
from toolnexus.report.build import build_report
from toolnexus.report.jsonshape import (
    OMIT_NONE,
    to_json,
)
from toolnexus.report.labels import read_labels
from toolnexus.report.model import (
    ChoiceMetrics,
    Comparison,
    NoulMetrics,
    QuestionReport,
    Report,
    RunSummary,
    ScoreDistribution,
    ScoreMetrics,
)
from toolnexus.report.reader import read_run

INPUTS = TESTS / "golden" / "report-inputs"
RUN, AFTER, LABELS = (str(INPUTS / n) for n in ("run.jsonl", "after.jsonl", "labels.csv"))


def test_build_report_returns_the_typed_model() -> None:
    report = build_report([RUN, AFTER], labels_path=LABELS, target_precision=0.6)
    assert isinstance(report, Report)
    assert all(isinstance(run, RunSummary) for run in report.runs)
    assert all(isinstance(q, QuestionReport) for q in report.questions.values())
    assert isinstance(report.comparison, Comparison)
    urgent, desk, impact = (report.questions[k] for k in ("urgent", "desk", "impact"))
    assert isinstance(urgent.metrics, NoulMetrics) and urgent.metrics.threshold is not None
    assert isinstance(desk.metrics, ChoiceMetrics)
    assert isinstance(impact.metrics, ScoreMetrics)
    assert isinstance(impact.distribution, ScoreDistribution)
    assert report.judged is report.comparison.after_questions
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.records = 0  # type: ignore[misc]


def test_the_json_is_the_fields_in_order() -> None:
    """One definition of the JSON shape: a class's fields are its object's keys."""
    report = build_report([RUN], labels_path=LABELS)
    data = report.to_json()
    assert list(data) == [
        "records", "labelled", "runs", "questions", "comparison", "questions_run", "definitions",
    ]  # fmt: skip
    q = report.questions["desk"]
    shown = [
        f.name
        for f in dataclasses.fields(q)
        if f.metadata.get("json") != "skip"
        and not (f.metadata.get("json") == "omit_none" and getattr(q, f.name) is None)
        and not (f.metadata.get("json") == "omit_zero" and getattr(q, f.name) == 0)
    ]
    assert list(data["questions"]["desk"]) == shown
    assert "threshold" not in data["questions"]["urgent"]["metrics"]  # omitted while None
    assert json.loads(json.dumps(data)) == data


def test_a_later_per_question_figure_plugs_in_without_moving_the_json() -> None:
    """The calibration work adds fields such as ``ece_interval``: left out while ``None``, so
    reports that do not compute them keep their bytes."""

    @dataclass(frozen=True)
    class WithInterval(NoulMetrics):
        ece_interval: tuple[float, float] | None = field(default=None, metadata=OMIT_NONE)

    m = build_report([RUN], labels_path=LABELS).questions["urgent"].metrics
    assert isinstance(m, NoulMetrics)
    plain = WithInterval(**{f.name: getattr(m, f.name) for f in dataclasses.fields(m)})
    assert to_json(plain) == to_json(m)
    wider = dataclasses.replace(plain, ece_interval=(0.1, 0.4))
    assert to_json(wider) == {**to_json(m), "ece_interval": [0.1, 0.4]}


def test_the_accumulators_figures_are_the_metric_functions_over_their_arrays() -> None:
    """Each metric has one definition: the accumulator's figure is the function over the arrays
    it keeps, to the last digit, and a bootstrap resample of those arrays goes through the same
    function (checked against scikit-learn)."""
    stats = read_run(RUN, read_labels(LABELS))
    noul = stats.questions["urgent"]
    m = noul.metrics()
    assert m.brier == brier_score_loss(noul.y_true, noul.y_prob)
    assert m.log_loss == log_loss(noul.y_true, noul.y_prob)
    assert m.auroc == roc_auc_score(noul.y_true, noul.y_prob)
    assert m.ece == expected_calibration_error(noul.y_true, noul.y_prob)
    desk = stats.questions["desk"]
    rows = ProbabilityRows(desk.y_prob_values, desk.y_prob_ends)
    dm = desk.metrics()
    assert dm.brier == multiclass_brier_score(desk.y_true, rows)
    assert dm.log_loss == multiclass_log_loss(desk.y_true, rows)

    rng = random.Random(16)
    picks = [rng.randrange(len(noul.y_true)) for _ in range(len(noul.y_true))]
    y_true = [noul.y_true[i] for i in picks]
    y_prob = [noul.y_prob[i] for i in picks]
    assert brier_score_loss(y_true, y_prob) == pytest.approx(sk.brier_score_loss(y_true, y_prob))
    clipped = np.clip(np.array(y_prob), EPS, 1 - EPS)
    assert log_loss(y_true, y_prob) == pytest.approx(sk.log_loss(y_true, clipped, labels=[0, 1]))
    y_true = [desk.y_true[i] for i in picks]
    y_prob = [list(rows[i]) for i in picks]
    k = len(desk.classes)
    padded = np.array([row + [0.0] * (k - len(row)) for row in y_prob])
    assert multiclass_brier_score(y_true, y_prob) == pytest.approx(
        sk.brier_score_loss(y_true, padded, labels=list(range(k)), scale_by_half=False)
    )


@pytest.mark.parametrize(
    "ends",
    [
        pytest.param([3, 6, 9], id="one-width"),
        pytest.param([2, 5, 9], id="ragged"),
        pytest.param([], id="empty"),
    ],
)
def test_probability_rows_read_alike_every_way(ends: list[int]) -> None:
    from array import array

    values = array("d", [i / 10 for i in range(ends[-1] if ends else 0)])
    rows = ProbabilityRows(values, array("q", ends))
    starts = [0, *ends][: len(ends)]
    expected = [list(values[a:b]) for a, b in zip(starts, ends, strict=True)]
    assert [list(r) for r in rows] == expected
    assert [list(rows[i]) for i in range(len(rows))] == expected
    assert [list(r) for r in rows[::-1]] == expected[::-1]


def test_the_report_counts_every_decision_flag_but_invalid_and_fail_on_names_the_same() -> None:
    """Issue 16: "the flag list three times" is written once: ``validation.FLAGS`` names every
    flag; the report's per-question flags are those but ``invalid`` (counted as invalid
    answers), in the renderer's order, and ``--fail-on`` takes exactly those names."""
    from toolnexus.core.validation import FLAGS
    from toolnexus.report.accumulators import REPORT_FLAGS
    from toolnexus.report.conditions import NAMES

    assert sorted(REPORT_FLAGS) == sorted(f for f in FLAGS if f != "invalid")
    assert [n for n in NAMES if n in FLAGS and n != "invalid"] == list(REPORT_FLAGS)
