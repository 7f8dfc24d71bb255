"""Plain value objects (issue 8 §5): 'A test deep-copies, pickles and asdicts every public value
type.' Every dataclass in ``toolnexus.__all__`` must have an example here (a new one fails
``test_every_public_dataclass_has_an_example`` until it gets one), plus ``Image`` and the errors,
which travel inside a ``StateResult``."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable
from typing import Any

import pytest

import toolnexus
from toolnexus import (
    BACKENDS,
    CacheStats,
    ChoiceAnswer,
    ClassifierOptions,
    ClassifierUsage,
    ConfigError,
    Decision,
    ErrorInfo,
    HTTPStatusError,
    Image,
    ImageLimits,
    NoulAnswer,
    NoulCriteria,
    NoulQuestion,
    RawAnswer,
    RawQuestion,
    RecordedDecision,
    ScoreAnswer,
    ScoreQuestion,
    StateResult,
    parse_decision,
    with_images,
)

#: Bindings to a live classifier, not values: they hold its connection pool.
NOT_VALUES = {"BoundState", "BoundStates"}

# A 1x1 PNG: the smallest real image.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)

SCORE_Q = ScoreQuestion("How urgent?", ["routine", "today", "outage"])
DECISION = parse_decision(
    {
        "model": "jev-1.13.0",
        "calibrated": True,
        "answers": {
            "refund": {"type": "noul", "noul": 0.93},
            "team": {
                "type": "choice",
                "choice": "billing",
                "probabilities": {"billing": 0.9, "technical": 0.1},
                "confidence": 0.8,
            },
            "urgency": {
                "type": "score",
                "score": 1.2,
                "legend": {"0": "routine", "1": "today", "2": "outage"},
                "probabilities": {"0": 0.1, "1": 0.6, "2": 0.3},
                "confidence": 0.7,
            },
            "box": {"type": "box", "x": 1},
        },
        "usage": {"input_tokens": 210, "output_tokens": 24, "cost": 0.001},
    },
    {"urgency": SCORE_Q, "box": RawQuestion("box", "Where?")},
)

EXAMPLES: dict[str, Callable[[], Any]] = {
    "Backend": lambda: BACKENDS[0],
    "CacheStats": lambda: CacheStats("c.db", 3, 1, 4096),
    "ChoiceAnswer": lambda: DECISION.choice("team"),
    "ChoiceQuestion": lambda: toolnexus.choice_over("Which desk?", [("billing", "money moved")]),
    "ClassifierOptions": lambda: ClassifierOptions(model="jev-1.13.0", retries=0),
    "BatchOptions": lambda: toolnexus.BatchOptions(concurrency=4),
    "RetryPolicy": lambda: toolnexus.RetryPolicy(
        retries=3, base=0.25, retryable_statuses=frozenset({520})
    ),
    "Timeout": lambda: toolnexus.Timeout(2.5),
    "ClassifierUsage": lambda: DECISION.usage,
    "Decision": lambda: DECISION,
    "ErrorInfo": lambda: ErrorInfo(
        attempt=1, kind="http status", retryable=True, wait=2.0, status=429, retry_after="2"
    ),
    "ImageLimits": ImageLimits,
    "NoulAnswer": lambda: DECISION.noul("refund"),
    "NoulCriteria": lambda: NoulCriteria(true="it holds", false="it does not"),
    "NoulQuestion": lambda: NoulQuestion("Is a refund requested?"),
    "RawAnswer": lambda: DECISION.raw("box"),
    "RawQuestion": lambda: RawQuestion("box", "Where?"),
    "RecordedDecision": lambda: RecordedDecision(
        state="charged twice", questions={"refund": NoulQuestion("?")}, answers={}
    ),
    "ScoreAnswer": lambda: DECISION.score("urgency"),
    "ScoreQuestion": lambda: SCORE_Q,
    "StateResult": lambda: StateResult(
        error=HTTPStatusError("classifier: HTTP 500", status=500, endpoint="e", request_id="r")
    ),
    "StateWithImages": lambda: with_images("Is <a> a room?", {"a": PNG}),
    "Asset": lambda: toolnexus.lift_images(Image(PNG)).assets[0],
    "LiftedState": lambda: toolnexus.lift_images({"photo": Image(PNG, alias="a")}),
    # The judge layer (issue 35): a policy with thresholds, what it decides, what it asks for.
    "Rule": lambda: toolnexus.Rule(question="refund", below=0.5, action="hold"),
    "Policy": lambda: toolnexus.Policy(
        rules=(toolnexus.Rule(question="refund", below=0.5, action="hold"),),
        default="permit",
        thresholds={"yes": 0.8, "no": 0.2},
    ),
    "GateResult": lambda: toolnexus.Policy(default="permit").decide(DECISION.answers),
    "Request": lambda: toolnexus.Policy().decide(DECISION.answers).request,
    "Bands": lambda: toolnexus.Bands(low=0.25, high=0.75),
    "JudgedAnswer": lambda: toolnexus.JudgedAnswer(DECISION.noul("refund"), band="yes"),
}


def _public_dataclasses() -> set[str]:
    return {
        name
        for name in toolnexus.__all__
        if isinstance(getattr(toolnexus, name), type)
        and dataclasses.is_dataclass(getattr(toolnexus, name))
    } - NOT_VALUES


def test_every_public_dataclass_has_an_example() -> None:
    assert _public_dataclasses() == set(EXAMPLES)


def _same(a: Any, b: Any) -> None:
    assert type(a) is type(b)
    if isinstance(a, StateResult):
        # Exceptions compare by identity: compare what they carry.
        assert (type(a.error), str(a.error), vars(a.error)) == (
            type(b.error),
            str(b.error),
            vars(b.error),
        )
    elif isinstance(a, toolnexus.LiftedState):
        # An Image compares by identity: compare what the request would carry.
        assert a.state == b.state and a.key_assets() == b.key_assets()
    elif isinstance(a, toolnexus.Asset):
        assert (a.placeholder, a.part, a.image.sha256) == (b.placeholder, b.part, b.image.sha256)
    elif isinstance(a, type(with_images("", {}))):
        assert a.state == b.state and a.images.keys() == b.images.keys()
        assert all(a.images[k].sha256 == b.images[k].sha256 for k in a.images)
    else:
        assert a == b


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_deepcopy_pickle_and_asdict(name: str) -> None:
    """issue 8 §5: ScoreAnswer.levels 'breaks copy.deepcopy, pickle and dataclasses.asdict'."""
    value = EXAMPLES[name]()
    _same(copy.deepcopy(value), value)
    _same(pickle.loads(pickle.dumps(value)), value)
    as_dict = dataclasses.asdict(value)
    assert set(as_dict) == {f.name for f in dataclasses.fields(value)}


def test_an_image_copies_and_pickles_with_its_bytes() -> None:
    image = Image(PNG, alias="a")
    for clone in (copy.deepcopy(image), pickle.loads(pickle.dumps(image))):
        assert clone.sha256 == image.sha256 and clone.alias == "a"


def test_score_answer_levels_is_a_plain_field_and_ordered_legend_a_method() -> None:
    """issue 8 §5: 'a plain field for the (label, probability) pairs and a method with its own
    name for the legend in level order'."""
    a = DECISION.score("urgency")
    assert type(a.levels) is tuple and not callable(a.levels)
    assert a.levels == (("routine", 0.1), ("today", 0.6), ("outage", 0.3))
    assert a.ordered_legend() == ["routine", "today", "outage"]
    assert dataclasses.asdict(a)["levels"] == a.levels
    assert dataclasses.replace(a, score=0.0).levels == a.levels


def test_ordered_legend_without_a_legend_is_the_questions_labels() -> None:
    """issue 8 §5: today 'a.levels() returns [] when the reply has no legend'."""
    d = parse_decision(
        {
            "model": "m",
            "answers": {"urgency": {"type": "score", "score": 2.0, "probabilities": {"2": 1.0}}},
        },
        {"urgency": SCORE_Q},
    )
    assert d.score("urgency").ordered_legend() == ["routine", "today", "outage"]


def test_a_hand_built_score_answer_is_derived_by_the_decoder() -> None:
    """'Decode logic exists once': a hand-built answer gets the same structure as a decoded
    one, and the same rules (a key that is not a level index is rejected, not dropped)."""
    built = ScoreAnswer(
        score=1.2,
        legend={"0": "routine", "1": "today", "2": "outage"},
        probabilities={"0": 0.1, "1": 0.6, "2": 0.3},
        confidence=0.7,
    )
    decoded = DECISION.score("urgency")
    assert (built.level, built.label, built.levels) == (
        decoded.level,
        decoded.label,
        decoded.levels,
    )
    with pytest.raises(ConfigError, match="probability key 'low' is not a level index"):
        ScoreAnswer(score=0.0, legend={}, probabilities={"low": 1.0}, confidence=1.0)


def test_answers_keep_their_types_through_a_copy() -> None:
    d = copy.deepcopy(DECISION)
    assert isinstance(d.answers["refund"], NoulAnswer)
    assert isinstance(d.answers["team"], ChoiceAnswer) and d.choice("team").near_uniform is False
    assert isinstance(d.answers["box"], RawAnswer)
    assert isinstance(d, Decision) and isinstance(d.usage, ClassifierUsage)
