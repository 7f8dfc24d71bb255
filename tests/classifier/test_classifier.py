"""create_classifier, the offline styles, metric events, batches and bound states (seed 004)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolnexus import (
    BatchError,
    ChoiceAnswer,
    ChoiceQuestion,
    ClassifierError,
    ClassifierUnsupported,
    ConfigError,
    Decision,
    InvalidDecision,
    NoulAnswer,
    NoulQuestion,
    QuestionError,
    RecordedDecision,
    ScoreQuestion,
    StaticMiss,
    create_classifier,
    static_classifier,
    unsupported,
)

Q = {"refund": NoulQuestion("Is a refund requested?")}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def noul_stub(value: float = 0.9) -> Any:
    def evaluate(state: Any, questions: dict[str, Any]) -> Decision:
        return Decision("stub", {k: NoulAnswer(value) for k in questions})

    return evaluate


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        pytest.param({"style": "oracle"}, "unknown style 'oracle'", id="unknown-style"),
        pytest.param({"style": "custom"}, "requires evaluate", id="custom-needs-evaluate"),
        pytest.param({"style": "static"}, "requires decisions", id="static-needs-decisions"),
        pytest.param(
            {"style": "custom", "evaluate": noul_stub(), "retries": -1},
            "retries",
            id="negative-retries",
        ),
        pytest.param(
            {"style": "custom", "evaluate": noul_stub(), "timeout": 0}, "timeout", id="zero-timeout"
        ),
        pytest.param(
            {"style": "custom", "evaluate": noul_stub(), "retryable_statuses": [700]},
            "700",
            id="bad-status",
        ),
        pytest.param(
            {"style": "custom", "evaluate": noul_stub(), "cache": object()},
            r"get\(key\)",
            id="bad-cache",
        ),
        pytest.param(
            {"style": "custom", "evaluate": noul_stub(), "colour": "red"},
            "unknown option 'colour'",
            id="unknown-option",
        ),
        pytest.param(
            {"style": "static", "decisions": [{"state": "s"}]},
            "needs 'state' and 'questions'",
            id="static-entry-shape",
        ),
    ],
)
def test_construction_rejects(options: dict[str, Any], fragment: str) -> None:
    """seed 004: 'A style whose required option is missing, and an unknown style, are rejected
    HERE rather than at the first call.'"""
    with pytest.raises(ConfigError, match=fragment):
        create_classifier(**options)


def test_unsupported_message_exact() -> None:
    e = ClassifierUnsupported("openrouter", "typesafe/jev-1.13", "images")
    assert str(e) == "classifier: openrouter (typesafe/jev-1.13) does not support images"
    assert unsupported(e) and not unsupported(ClassifierError("x"))


def test_static_answers_shorthand_and_response_bytes() -> None:
    judge = static_classifier(
        [
            {"state": "a", "questions": Q, "answers": {"refund": {"type": "noul", "noul": 0.1}}},
            RecordedDecision(
                "b", Q, response=b'{"model":"m","answers":{"refund":{"type":"noul","noul":1}}}'
            ),
        ],
        model="jev-1.13.0",
    )
    assert run(judge.evaluate("a", Q)).noul("refund").noul == 0.1
    assert run(judge.evaluate("b", Q)).noul("refund").noul == 1.0
    assert judge.model == "jev-1.13.0"


def test_static_miss_is_an_error_never_a_guess() -> None:
    judge = static_classifier(
        [RecordedDecision("a", Q, answers={"refund": {"type": "noul", "noul": 0.1}})]
    )
    with pytest.raises(StaticMiss) as info:
        run(judge.evaluate("a different ticket", Q))
    assert "a different ticket" in str(info.value) and len(info.value.questions_sha256) == 64
    with pytest.raises(StaticMiss):  # same state, different question set
        run(judge.evaluate("a", {"refund": NoulQuestion("Is money owed?")}))


def test_custom_sync_and_async_and_mapping_results() -> None:
    async def async_eval(state: Any, questions: dict[str, Any]) -> Decision:
        return Decision("async", {k: NoulAnswer(0.5) for k in questions})

    def mapping_eval(state: Any, questions: dict[str, Any]) -> dict[str, Any]:
        return {"model": "map", "answers": {"refund": {"type": "noul", "noul": 0.25}}}

    assert (
        run(create_classifier(style="custom", evaluate=noul_stub()).evaluate("s", Q)).model
        == "stub"
    )
    assert (
        run(create_classifier(style="custom", evaluate=async_eval).evaluate("s", Q)).model
        == "async"
    )
    assert (
        run(create_classifier(style="custom", evaluate=mapping_eval).evaluate("s", Q))
        .noul("refund")
        .noul
        == 0.25
    )


def test_custom_failures_become_classifier_errors() -> None:
    def boom(state: Any, questions: Any) -> Decision:
        raise RuntimeError("backend exploded")

    with pytest.raises(
        ClassifierError, match="custom evaluate failed: RuntimeError: backend exploded"
    ):
        run(create_classifier(style="custom", evaluate=boom).evaluate("s", Q))
    with pytest.raises(ClassifierError, match="returned NoneType"):
        run(create_classifier(style="custom", evaluate=lambda s, q: None).evaluate("s", Q))


@pytest.mark.parametrize("state", [None, 3, 2.5, True])
def test_state_must_be_string_object_or_array(state: Any) -> None:
    judge = create_classifier(style="custom", evaluate=noul_stub())
    with pytest.raises(ClassifierError, match="a state must be a string, an object or an array"):
        run(judge.evaluate(state, Q))


def test_no_questions_and_limits_before_anything_is_sent() -> None:
    calls: list[Any] = []

    def evaluate(state: Any, questions: Any) -> Decision:
        calls.append(state)
        return Decision("m", {})

    judge = create_classifier(style="custom", evaluate=evaluate)
    with pytest.raises(QuestionError, match="no questions"):
        run(judge.evaluate("s", {}))
    with pytest.raises(QuestionError, match="'u'"):
        run(judge.evaluate("s", {"u": ScoreQuestion("?", ["one"])}))
    assert calls == []


def test_metric_events_ok_and_error() -> None:
    """seed 004: classifier.evaluate events (latency, tokens, model, status), error set only on
    a failed evaluate."""
    events: list[dict[str, Any]] = []

    def evaluate(state: Any, questions: Any) -> Decision:
        if state == "bad":
            raise ClassifierError("classifier: nope")
        return Decision("served-1", {"refund": NoulAnswer(0.9)})

    judge = create_classifier(
        style="custom", evaluate=evaluate, on_metric=events.append, model="asked"
    )
    run(judge.evaluate("ok", Q))
    with pytest.raises(ClassifierError):
        run(judge.evaluate("bad", Q))
    ok, err = events
    assert ok["event"] == err["event"] == "classifier.evaluate"
    assert (ok["status"], ok["model"], "error" in ok) == ("ok", "served-1", False)
    assert {"ms", "input_tokens", "output_tokens"} <= set(ok)
    assert (err["status"], err["model"], err["error"]) == ("error", "asked", "classifier: nope")


def test_degenerate_warning_once_per_key_per_classifier() -> None:
    events: list[dict[str, Any]] = []
    bad = {"desk": ChoiceQuestion("?", {"billing": "billing", "tech": "tech"})}

    def evaluate(state: Any, questions: Any) -> Decision:
        return Decision("m", {"desk": ChoiceAnswer("billing", {"billing": 1.0, "tech": 0.0}, 1.0)})

    first = create_classifier(style="custom", evaluate=evaluate, on_metric=events.append)
    second = create_classifier(style="custom", evaluate=evaluate, on_metric=events.append)
    for judge in (first, first, second):
        run(judge.evaluate("s", bad))
    warnings = [e for e in events if e["event"] == "classifier.warning"]
    assert [w["question"] for w in warnings] == ["desk", "desk"]  # once per classifier


def _flaky(fail: set[str]) -> Any:
    async def evaluate(state: Any, questions: Any) -> Decision:
        await asyncio.sleep(0)
        if state in fail:
            raise ClassifierError(f"classifier: state {state} failed")
        return Decision("m", {k: NoulAnswer(0.5) for k in questions})

    return evaluate


def test_evaluate_batch_in_state_order() -> None:
    judge = create_classifier(style="custom", evaluate=_flaky(set()))
    states = [f"s{i}" for i in range(40)]
    assert len(run(judge.evaluate_batch(states, Q, concurrency=3))) == 40


def test_evaluate_batch_fails_closed_naming_the_lowest_index() -> None:
    """SPEC 8B Batch: 'the lowest failing state's index is named (deterministic under
    concurrency) and no decisions are returned. No states is an error and sends nothing.'"""
    judge = create_classifier(style="custom", evaluate=_flaky({"s7", "s3", "s12"}))
    with pytest.raises(BatchError) as info:
        run(judge.evaluate_batch([f"s{i}" for i in range(20)], Q, concurrency=8))
    assert info.value.index == 3 and str(info.value).startswith("classifier: state 3: ")
    with pytest.raises(ClassifierError, match="no states"):
        run(judge.evaluate_batch([], Q))


def test_evaluate_batch_respects_concurrency() -> None:
    in_flight = peak = 0

    async def evaluate(state: Any, questions: Any) -> Decision:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0)
        in_flight -= 1
        return Decision("m", {"refund": NoulAnswer(0.5)})

    judge = create_classifier(style="custom", evaluate=evaluate)
    run(judge.evaluate_batch(list("abcdefghij"), Q, concurrency=4))
    assert peak == 4


def test_bound_state_validates_fail_closed() -> None:
    """seed 004 evaluate-state: 'the reply validated FAIL-CLOSED ... an invalid reply is an error,
    reported on the metric event.'"""
    events: list[dict[str, Any]] = []

    def evaluate(state: Any, questions: Any) -> Decision:
        return Decision("m", {"refund": NoulAnswer(1.7)})

    judge = create_classifier(style="custom", evaluate=evaluate, on_metric=events.append)
    assert run(judge.evaluate("s", Q)).noul("refund").noul == 1.7  # evaluate returns it unchanged
    with pytest.raises(InvalidDecision, match=r'"refund" noul is 1\.7'):
        run(judge.state("s").evaluate(refund=Q["refund"]))
    assert events[-1]["status"] == "error" and "invalid decision" in events[-1]["error"]


def test_bound_states_per_state_results_never_fail_the_batch() -> None:
    judge = create_classifier(style="custom", evaluate=_flaky({"b"}))
    results = run(judge.states(["a", "b", 3, "c"]).evaluate(refund=Q["refund"]))
    assert [r.ok for r in results] == [True, False, False, True]
    assert "state b failed" in str(results[1].error)
    assert "a state must be" in str(results[2].error)
    assert run(judge.states([]).evaluate(refund=Q["refund"])) == []
    with pytest.raises(QuestionError):  # a question-set error is raised once, before any request
        run(judge.states(["a"]).evaluate(u=ScoreQuestion("?", ["x"])))


def test_options_repr_never_shows_header_values() -> None:
    """Secrets: 'No credential value and no expanded header value appears in any log, metric,
    error message or returned value' — a literal header value included."""
    judge = create_classifier(
        style="custom", evaluate=noul_stub(), headers={"X-Gateway-Key": "sk-literal-SECRET"}
    )
    assert "SECRET" not in repr(judge.options) and "SECRET" not in repr(judge)
