"""The request pipeline (issue 30 item 3): "the classifier hands down a small public
request-pipeline object (style, metric emitter, model, limits); the metric event is built by one
function". ``batch`` drives the pipeline alone, and every ``classifier.evaluate`` event has one
shape, asked alone or per state of a pack."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from toolnexus import BatchOptions, NoulQuestion, static_classifier
from toolnexus.core.answers import ClassifierUsage
from toolnexus.core.decision import Decision
from toolnexus.core.errors import ClassifierError
from toolnexus.core.qtypes.noul import NoulAnswer
from toolnexus.evaluate.batch import evaluate_batch
from toolnexus.evaluate.pipeline import METRIC_EVALUATE, RequestPipeline, evaluate_event

Q = {"refund": NoulQuestion("Is money owed?")}
ALONE = ["event", "style", "model", "status", "ms", "input_tokens", "output_tokens"]
DECIDED = [*ALONE, "cached", "calibrated"]


@pytest.mark.parametrize(
    ("kwargs", "keys"),
    [
        pytest.param({"error": ClassifierError("no")}, [*ALONE, "error"], id="error"),
        pytest.param({}, DECIDED, id="alone"),
        pytest.param({"packed": 3}, [*DECIDED, "packed"], id="packed"),
        pytest.param({"cost": 0.5}, [*DECIDED, "cost"], id="alone-with-cost"),
    ],
)
def test_the_metric_event_is_built_by_one_function(kwargs: dict[str, Any], keys: list[str]) -> None:
    """'the metric event is built by one function': its members, in order, per case."""
    cost = kwargs.pop("cost", None)
    if "error" not in kwargs:
        usage = ClassifierUsage(3, 1, cost)
        kwargs["decision"] = Decision("m-2", {"refund": NoulAnswer(0.5)}, usage=usage)
    event = evaluate_event("static", "m-1", time.perf_counter(), **kwargs)
    assert list(event) == keys
    assert event["event"] == METRIC_EVALUATE
    assert event["model"] == ("m-1" if "error" in kwargs else "m-2")


def test_a_batch_drives_the_pipeline_the_classifier_hands_down() -> None:
    """'Calls go classifier -> batch/packing -> style -> transport and never back': the batch is
    given the pipeline (never the classifier) and its events are the pipeline's."""
    events: list[dict[str, Any]] = []
    c = static_classifier(
        [
            {"state": s, "questions": Q, "answers": {"refund": {"type": "noul", "noul": 0.25}}}
            for s in "ab"
        ],
        model="jev-1.13.0",
        on_metric=events.append,
    )
    assert isinstance(c.pipeline, RequestPipeline) and c.pipeline.model == c.model
    got = asyncio.run(evaluate_batch(c.pipeline, ["a", "b"], Q, BatchOptions(2)))
    assert [d.noul("refund").noul for d in got] == [0.25, 0.25]
    assert [list(e) for e in events] == [DECIDED, DECIDED]
