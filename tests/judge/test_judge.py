"""SPEC §8B's judge layer (issue 35 item 1): ``ask`` / ``gate`` / ``Policy`` / ``Tape``.

The cases quote the spec's rules: first-match ``below`` / ``at_least`` / ``is`` rules; per rule
missing, then uncertain/unsure, then rule fit; exact reasons and Request ids with keys quoted
verbatim; ``skipUncertain`` (``skip_uncertain``); exclusive default bands 0.30 / 0.70; seed 004's
inclusive thresholds beside them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolnexus
import toolnexus.sync
from toolnexus import (
    DEFAULT_BANDS,
    NEEDS_INPUT,
    Bands,
    ChoiceAnswer,
    ChoiceQuestion,
    ConfigError,
    Decision,
    NoulAnswer,
    NoulQuestion,
    Policy,
    QuestionError,
    RawAnswer,
    Rule,
    ScoreAnswer,
    ScoreQuestion,
    Tape,
    TapeMiss,
)
from toolnexus.core.bands import read_answer
from toolnexus.core.policy import decide

LEVELS = ["needs product input", "needs investigation", "fixable from the report"]
QUESTIONS: dict[str, Any] = {
    "fixable": NoulQuestion("An agent can fix this bug from the report alone."),
    "component": ChoiceQuestion(
        "Which component owns the fix?",
        {
            "pricing": "coupon or discount calculation code",
            "checkout": "the HTTP checkout handler",
            "frontend": "the browser client only",
            "infra": "deployment, config or capacity",
        },
    ),
    "fixability": ScoreQuestion("How fixable is this bug from the report alone?", LEVELS),
}
#: §8B's shape: a noul ``below``, a choice ``is``, a score ``at_least``, in that order.
RULES = (
    Rule("fixable", "fail", below=0.3),
    Rule("component", "skip_to", is_="pricing", target="fix-pricing"),
    Rule("fixability", "skip_to", at_least=1.5, target="draft-pr"),
)
SURE_PRICING = {"pricing": 0.9, "checkout": 0.08, "frontend": 0.01, "infra": 0.01}


def noul(p: float) -> NoulAnswer:
    return NoulAnswer(p)


def choice(pick: str, confidence: float, probs: Mapping[str, float] = SURE_PRICING) -> ChoiceAnswer:
    return ChoiceAnswer(pick, dict(probs), confidence)


def score(value: float, confidence: float = 0.9) -> ScoreAnswer:
    return ScoreAnswer(
        score=value,
        legend={},
        probabilities={"0": 0.05, "1": 0.15, "2": 0.8},
        confidence=confidence,
    )


def answers(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "fixable": noul(0.9),
        "component": choice("checkout", 0.9),
        "fixability": score(0.4),
    }
    for k, v in over.items():
        if v is None:
            base.pop(k)
        else:
            base[k] = v
    return base


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


# --- the rules, in the spec's order ---------------------------------------------------------

CASES = [
    pytest.param(answers(fixable=noul(0.12)), "fail", "", False, "", id="first-match-noul-below"),
    pytest.param(
        answers(component=choice("pricing", 0.85), fixability=score(1.8)),
        "skip_to",
        "fix-pricing",
        False,
        "",
        id="first-match-choice-is-wins-over-later-score",
    ),
    pytest.param(
        answers(fixability=score(1.8)), "skip_to", "draft-pr", False, "", id="score-at-least"
    ),
    pytest.param(answers(), "", "", False, "", id="plain-gate-falls-through-with-empty-action"),
    pytest.param(
        answers(fixable=noul(0.55)),
        NEEDS_INPUT,
        "",
        True,
        'uncertain answer "fixable"',
        id="uncertain-noul-escalates",
    ),
    pytest.param(
        answers(component=choice("pricing", 0.7)),
        NEEDS_INPUT,
        "",
        True,
        'uncertain answer "component"',
        id="choice-confidence-exactly-high-is-unsure",
    ),
    pytest.param(
        answers(
            component=choice(
                "pricing", 0.8, {"pricing": 0.27, "checkout": 0.25, "frontend": 0.24, "infra": 0.24}
            )
        ),
        NEEDS_INPUT,
        "",
        True,
        'uncertain answer "component"',
        id="near-uniform-choice-is-unsure",
    ),
    pytest.param(
        answers(fixability=score(1.8, confidence=0.7)),
        NEEDS_INPUT,
        "",
        True,
        'uncertain answer "fixability"',
        id="score-confidence-exactly-high-is-unsure",
    ),
    pytest.param(
        answers(component=None),
        NEEDS_INPUT,
        "",
        True,
        'missing answer "component"',
        id="missing-answer-escalates",
    ),
]


@pytest.mark.parametrize(("given_answers", "action", "target", "escalated", "reason"), CASES)
def test_gate_rules_are_first_match_and_escalate_what_they_cannot_read(
    given_answers: dict[str, Any], action: str, target: str, escalated: bool, reason: str
) -> None:
    """§8B: "gate rules (below / at_least / is) are first-match. An uncertain, unsure or
    missing answer escalates to needs_input with a §10 Request"."""
    got = decide(RULES, given_answers)
    assert (got.action, got.target, got.escalated) == (action, target, escalated)
    if escalated:
        assert got.reason == reason
        assert got.request is not None and got.request.kind == "input"
        assert got.request.data["reason"] == reason
    else:
        assert got.request is None


@pytest.mark.parametrize(
    ("p", "band"),
    [
        pytest.param(0.3, "uncertain", id="p-exactly-low-is-uncertain"),
        pytest.param(0.2999, "no", id="p-just-below-low-is-no"),
        pytest.param(0.7, "uncertain", id="p-exactly-high-is-uncertain"),
        pytest.param(0.7001, "yes", id="p-just-above-high-is-yes"),
        pytest.param(0.0, "no", id="p-zero"),
        pytest.param(1.0, "yes", id="p-one"),
    ],
)
def test_default_bands_are_exclusive_on_the_confident_side(p: float, band: str) -> None:
    """§8B: "Cut-points are exclusive on the confident side: p < low → no, p > high → yes,
    else uncertain" (default 0.30 / 0.70)."""
    assert read_answer(noul(p)).band == band
    assert Bands(0.3, 0.7) == DEFAULT_BANDS


@pytest.mark.parametrize(
    ("answer", "band", "sure"),
    [
        pytest.param(noul(0.8), "yes", None, id="noul-exactly-yes-cut-is-yes"),
        pytest.param(noul(0.2), "no", None, id="noul-exactly-no-cut-is-no"),
        pytest.param(noul(0.79), "uncertain", None, id="noul-between-cuts"),
        pytest.param(
            choice("pricing", 0.6), None, True, id="choice-exactly-min-confidence-is-sure"
        ),
        pytest.param(
            choice("pricing", 0.8, {"pricing": 0.5, "checkout": 0.5}),
            None,
            True,
            id="tied-near-uniform-choice-not-demoted-by-thresholds",
        ),
        pytest.param(RawAnswer("vector", {"type": "vector"}), None, False, id="raw-is-uncertain"),
    ],
)
def test_thresholds_read_inclusively_as_threshold_band_does(
    answer: Any, band: str | None, sure: bool | None
) -> None:
    """Seed 004: "INCLUSIVE: noul p >= yes => yes, else p <= no => no; choice/score confidence
    >= min-confidence => yes. No near-uniform demotion (that is the bands' rule)"."""
    judged = read_answer(answer, thresholds=toolnexus.DEFAULT_THRESHOLDS)
    assert (judged.band, judged.sure) == (band, sure)


def test_a_tie_is_near_uniform_and_unsure_under_the_bands() -> None:
    """§8B: "A choice is sure iff confidence > high and not nearUniform" — a 0.5 / 0.5 tie is
    near-uniform whatever its confidence."""
    assert read_answer(choice("pricing", 0.95, {"pricing": 0.5, "checkout": 0.5})).sure is False


# --- exact reasons, Request ids, verbatim quoting --------------------------------------------


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        pytest.param("fixable", 'missing answer "fixable"', id="plain-key"),
        pytest.param('a"b', 'missing answer "a"b"', id="quote-in-key-never-escaped"),
        pytest.param('a"b\\c', 'missing answer "a"b\\c"', id="quote-and-backslash-verbatim"),
    ],
)
def test_missing_answer_reason_and_request_id_quote_the_key_verbatim(key: str, reason: str) -> None:
    """§8B: "A missing answer's reason is exactly missing answer "<key>" (... never escaped: a
    key a"b gives missing answer "a"b")"; "A rule escalation's Request id is exactly
    gate:<i>:<key>"."""
    got = decide([Rule(key, "fail", below=0.3)], answers(fixable=None))
    assert got.reason == reason
    assert got.request is not None
    assert got.request.id == f"gate:0:{key}"
    assert got.request.data["question"] == key


def test_request_id_counts_rules_as_given_even_when_skipped() -> None:
    """§8B: "i = the rule's 0-based index in the rules as given, even when skipUncertain
    skipped earlier rules"."""
    policy = Policy(rules=RULES, skip_uncertain=True)
    got = policy.decide(answers(fixable=noul(0.5), component=None))
    assert got.request is not None
    assert got.request.id == "gate:1:component"
    assert got.reason == 'missing answer "component"'


def test_the_request_carries_the_answers_on_the_wire() -> None:
    """§8B: "no value or confidence in the reason, the answers travel in data.answers"."""
    given_answers = answers(fixable=noul(0.55))
    got = decide(RULES, given_answers)
    assert got.request is not None
    assert got.request.data["answers"] == {k: a.to_wire() for k, a in given_answers.items()}
    assert "0.55" not in got.reason


def test_policy_default() -> None:
    """§8B Policy: "a non-empty default is the no-rule-fired action; empty escalates (reason:
    "no rule fired")"; "the no-rule-fired escalation's id is gate:default, its data.question
    is the empty string"."""
    assert Policy(RULES, default="triage").decide(answers()).action == "triage"
    got = Policy(RULES).decide(answers())
    assert got.escalated and got.action == NEEDS_INPUT and got.reason == "no rule fired"
    assert got.request is not None
    assert (got.request.id, got.request.data["question"]) == ("gate:default", "")


# --- skip_uncertain, and the order missing → uncertain → fit ---------------------------------


def test_skip_uncertain_skips_a_present_uncertain_answer_and_a_later_rule_fires() -> None:
    """§8B: "skipUncertain skips uncertain rules instead of escalating on the first"."""
    got = Policy(RULES, skip_uncertain=True).decide(
        answers(fixable=noul(0.5), component=choice("pricing", 0.85))
    )
    assert (got.action, got.target, got.rule) == ("skip_to", "fix-pricing", 1)


def test_skip_uncertain_skips_an_unsure_choice() -> None:
    got = Policy(RULES, skip_uncertain=True).decide(
        answers(component=choice("pricing", 0.7), fixability=score(1.8))
    )
    assert (got.action, got.target) == ("skip_to", "draft-pr")


def test_skip_uncertain_never_skips_a_missing_answer() -> None:
    """§8B: "It skips only a present uncertain/unsure answer; a missing answer still
    escalates"."""
    got = Policy(RULES, skip_uncertain=True).decide(answers(fixable=None))
    assert got.reason == 'missing answer "fixable"'


def test_uncertain_is_checked_before_rule_fit() -> None:
    """§8B: "Per rule, the checks run in this order: missing answer, then uncertain/unsure
    answer, then rule fit. So skipUncertain skips an uncertain answer even under a mis-typed
    rule"."""
    misfit_first = [Rule("fixable", "go", is_="pricing"), RULES[2]]
    skipped = Policy(misfit_first, skip_uncertain=True).decide(
        answers(fixable=noul(0.5), fixability=score(1.8))
    )
    assert (skipped.action, skipped.target) == ("skip_to", "draft-pr")
    not_skipped = decide(misfit_first, answers(fixable=noul(0.5)))
    assert not_skipped.reason == 'uncertain answer "fixable"'


@pytest.mark.parametrize(
    ("rule", "answer"),
    [
        pytest.param(Rule("fixable", "go", is_="pricing"), noul(0.9), id="is-on-a-noul"),
        pytest.param(Rule("fixable", "go", is_="pricing"), score(1.8), id="is-on-a-score"),
        pytest.param(
            Rule("fixable", "go", below=0.5), choice("pricing", 0.9), id="below-on-a-choice"
        ),
        pytest.param(Rule("fixable", "go"), noul(0.9), id="no-condition"),
    ],
)
def test_a_rule_that_does_not_fit_escalates_and_is_never_skipped(rule: Rule, answer: Any) -> None:
    """§8B: "A rule that does not fit its answer's type (is on a noul/score, below/at_least on
    a choice, or no condition) escalates with a port-specific reason and is never skipped"."""
    for skip in (False, True):
        got = Policy([rule], default="permit", skip_uncertain=skip).decide({"fixable": answer})
        assert got.escalated and got.request is not None
        assert got.request.id == "gate:0:fixable"
        assert got.reason.startswith("rule 0 does not fit answer")


@pytest.mark.parametrize(
    ("answer", "questions"),
    [
        pytest.param(noul(1.5), None, id="noul-above-one"),
        pytest.param(noul(-0.1), None, id="noul-below-zero"),
        pytest.param(choice("billing", 0.9), QUESTIONS, id="choice-not-offered"),
    ],
)
def test_an_invalid_answer_escalates_and_is_never_skipped(answer: Any, questions: Any) -> None:
    """A gate never authorises: an answer outside its schema (validate_decision's per-answer
    checks) is read as nothing, escalating with ``invalid answer "<key>"`` even under
    skip_uncertain."""
    key = "component" if isinstance(answer, ChoiceAnswer) else "fixable"
    rule = Rule(key, "go", is_="billing") if key == "component" else Rule(key, "go", at_least=0.9)
    got = Policy([rule], default="permit", skip_uncertain=True).decide(
        {key: answer}, questions=questions
    )
    assert (got.escalated, got.reason) == (True, f'invalid answer "{key}"')


# --- the issue's example: seed 004's inclusive thresholds in a policy -------------------------

MERGE = Policy(
    rules=[
        {"question": "addresses_task", "below": 0.5, "action": "hold"},
        {"question": "evidence_supports", "below": 0.5, "action": "hold"},
        {"question": "unrelated_changes", "at_least": 0.5, "action": "hold"},
        {"question": "needs_clarification", "at_least": 0.5, "action": "clarify"},
    ],
    default="permit",
    thresholds={"yes": 0.8, "no": 0.2},
)


@pytest.mark.parametrize(
    ("ps", "action", "reason"),
    [
        pytest.param(
            (0.8, 0.9, 0.2, 0.1), "permit", "no rule fired", id="all-favourable-at-the-cuts"
        ),
        pytest.param(
            (0.2, 0.9, 0.1, 0.1), "hold", '"addresses_task" below 0.5', id="no-at-the-no-cut-holds"
        ),
        pytest.param(
            (0.9, 0.9, 0.1, 0.85), "clarify", '"needs_clarification" at_least 0.5', id="clarify"
        ),
        pytest.param(
            (0.79, 0.9, 0.1, 0.1),
            NEEDS_INPUT,
            'uncertain answer "addresses_task"',
            id="between-cuts-escalates",
        ),
    ],
)
def test_the_issue_merge_gate_means_what_it_says(
    ps: tuple[float, ...], action: str, reason: str
) -> None:
    """Issue 35 item 2: thresholds {"yes": 0.8, "no": 0.2} are seed 004's inclusive cut-points:
    p = 0.8 reads yes and p = 0.2 reads no."""
    keys = ("addresses_task", "evidence_supports", "unrelated_changes", "needs_clarification")
    got = MERGE.decide({k: noul(p) for k, p in zip(keys, ps, strict=True)})
    assert (got.action, got.reason) == (action, reason)


# --- construction errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: Rule("k", "a", below=0.3, at_least=0.5), id="two-conditions"),
        pytest.param(lambda: Rule("k", "", below=0.3), id="empty-action"),
        pytest.param(lambda: Rule("k", "a", below=True), id="bool-number"),
        pytest.param(
            lambda: Rule.from_mapping({"question": "k", "action": "a", "over": 1}),
            id="unknown-field",
        ),
        pytest.param(lambda: Bands(0.8, 0.2), id="low-above-high"),
        pytest.param(
            lambda: Policy(bands=Bands(), thresholds={"yes": 0.8}), id="bands-and-thresholds"
        ),
        pytest.param(lambda: Policy(thresholds={"maybe": 0.5}), id="unknown-threshold"),
        pytest.param(lambda: Policy(rules="k below 0.3"), id="rules-as-a-string"),
    ],
)
def test_bad_policies_are_config_errors(build: Any) -> None:
    with pytest.raises(ConfigError):
        build()


# --- ask / gate over a classifier, async and sync ----------------------------------------------


def _stub(wire_answers: dict[str, Any], calls: list[Any]) -> Any:
    async def evaluate(state: Any, questions: Any) -> Decision:
        calls.append(state)
        return Decision(model="stub", answers=wire_answers)

    return evaluate


def test_ask_reads_each_answer_and_gate_applies_a_policy_async() -> None:
    calls: list[Any] = []
    judge = toolnexus.create_classifier(
        style="custom", evaluate=_stub(answers(fixable=noul(0.12)), calls)
    )
    read = _run(toolnexus.ask(judge, "s", QUESTIONS))
    assert read["fixable"].band == "no" and read["fixable"].value() == 0.12
    assert read["component"].sure is True and read["component"].choice() == "checkout"
    assert read["fixability"].value() == 0.4
    got = _run(toolnexus.gate(judge, "s", QUESTIONS, Policy(RULES, default="go")))
    assert got.action == "fail"
    assert len(calls) == 2


def test_gate_takes_the_spec_ordered_list_and_refuses_a_duplicate_name_before_any_request() -> None:
    """§8B: "questions = [...] // ordered list; duplicate name = error naming the key, before
    any request"."""
    calls: list[Any] = []
    judge = toolnexus.create_classifier(style="custom", evaluate=_stub(answers(), calls))
    listed = list(QUESTIONS.items())
    assert _run(toolnexus.gate(judge, "s", listed, RULES)).action == ""
    with pytest.raises(QuestionError, match='"fixable" appears twice'):
        _run(toolnexus.gate(judge, "s", [*listed, listed[0]], RULES))
    assert len(calls) == 1


def test_sync_ask_gate_and_tape() -> None:
    calls: list[Any] = []
    live = toolnexus.sync.create_classifier(
        style="custom", evaluate=_stub(answers(fixable=noul(0.5)), calls)
    )
    assert (
        toolnexus.sync.ask(live, "s", QUESTIONS, {"low": 0.2, "high": 0.4})["fixable"].band == "yes"
    )
    tape = toolnexus.sync.Tape(live)
    assert toolnexus.sync.gate(tape.call("triage"), "s", QUESTIONS, RULES).escalated
    replay = toolnexus.sync.Tape(recorded=tape.recorded)
    assert toolnexus.sync.gate(replay.call("triage"), "other state", QUESTIONS, RULES).reason == (
        'uncertain answer "fixable"'
    )
    assert len(calls) == 2
    with pytest.raises(ConfigError):
        toolnexus.sync.ask(
            toolnexus.create_classifier(style="custom", evaluate=_stub({}, [])), "s", QUESTIONS
        )


def test_tape_replays_by_call_name_and_a_miss_sends_nothing() -> None:
    """§8B: "Obtaining a replaying classifier for an unrecorded name never fails; the miss is
    reported when that classifier is evaluated, as an error whose message is tape: no
    recorded decision for call "<name>", and no request is sent"."""
    calls: list[Any] = []
    live = toolnexus.create_classifier(style="custom", evaluate=_stub(answers(), calls))
    tape = Tape(live)
    _run(tape.call("first").evaluate("state A", QUESTIONS))
    replay = Tape(recorded=tape.recorded)
    d = _run(replay.call("first").evaluate("a different state", QUESTIONS))
    assert d.answers == answers()
    missing = replay.call('no "such" call')  # never fails here
    with pytest.raises(TapeMiss) as caught:
        _run(missing.evaluate("state A", QUESTIONS))
    assert str(caught.value).endswith('tape: no recorded decision for call "no "such" call"')
    assert caught.value.call == 'no "such" call'
    assert len(calls) == 1


# --- a property test against a direct reimplementation ---------------------------------------


def _reference(
    rules: list[Rule],
    given_answers: dict[str, Any],
    low: float,
    high: float,
    skip: bool,
    default: str,
) -> tuple[str, str, bool, str]:
    """§8B written out again, as plainly as possible."""
    for i, r in enumerate(rules):
        a = given_answers.get(r.question)
        if a is None:
            return (NEEDS_INPUT, "", True, f"gate:{i}:{r.question}")
        if isinstance(a, NoulAnswer):
            sure = a.noul < low or a.noul > high
            value: Any = a.noul
        elif isinstance(a, ChoiceAnswer):
            sure = a.confidence > high and not toolnexus.near_uniform(a.probabilities)
            value = None
        else:
            sure = a.confidence > high
            value = a.score
        if not sure:
            if skip:
                continue
            return (NEEDS_INPUT, "", True, f"gate:{i}:{r.question}")
        if r.is_ is not None:
            if not isinstance(a, ChoiceAnswer):
                return (NEEDS_INPUT, "", True, f"gate:{i}:{r.question}")
            if a.choice == r.is_:
                return (r.action, r.target, False, "")
        elif value is None:
            return (NEEDS_INPUT, "", True, f"gate:{i}:{r.question}")
        elif (r.below is not None and value < r.below) or (
            r.at_least is not None and value >= r.at_least
        ):
            return (r.action, r.target, False, "")
    if default:
        return (default, "", False, "")
    return (NEEDS_INPUT, "", True, "gate:default")


KEYS = ["a", "b", "c"]
HUNDREDTHS = st.integers(0, 100).map(lambda n: n / 100)
ANSWER = st.one_of(
    HUNDREDTHS.map(NoulAnswer),
    st.tuples(st.sampled_from(["x", "y"]), HUNDREDTHS, HUNDREDTHS).map(
        lambda t: ChoiceAnswer(t[0], {"x": t[1], "y": round(1 - t[1], 2)}, t[2])
    ),
    st.tuples(st.integers(0, 200).map(lambda n: n / 100), HUNDREDTHS).map(
        lambda t: ScoreAnswer(
            score=t[0], legend={}, probabilities={"0": 0.5, "1": 0.5}, confidence=t[1]
        )
    ),
)
RULE = st.tuples(
    st.sampled_from(KEYS),
    st.sampled_from(["below", "at_least", "is_"]),
    st.one_of(HUNDREDTHS, st.sampled_from([1.5, 2.0])),
    st.sampled_from(["x", "y"]),
    st.sampled_from(["hold", "go"]),
).map(lambda t: Rule(t[0], t[4], target=t[0], **{t[1]: (t[3] if t[1] == "is_" else t[2])}))


@settings(max_examples=150, deadline=None)
@given(
    rules=st.lists(RULE, max_size=4),
    given_answers=st.dictionaries(st.sampled_from(KEYS), ANSWER),
    cuts=st.tuples(HUNDREDTHS, HUNDREDTHS).map(sorted),
    skip=st.booleans(),
    default=st.sampled_from(["", "permit"]),
)
def test_decide_agrees_with_a_direct_reimplementation(
    rules: list[Rule], given_answers: dict[str, Any], cuts: list[float], skip: bool, default: str
) -> None:
    """Issue 35 acceptance: "gate evaluation ... by property tests against a direct
    reimplementation", on two-decimal values (the wire's), so the cuts are hit exactly."""
    low, high = cuts
    got = Policy(rules, default=default, bands=Bands(low, high), skip_uncertain=skip).decide(
        given_answers
    )
    want = _reference(rules, given_answers, low, high, skip, default)
    assert (got.action, got.target, got.escalated, got.request.id if got.request else "") == want
