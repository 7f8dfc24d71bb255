"""The choice type (seed 001): one option out of a named set of 1..255, a probability per
option and a confidence on the question. Its question, its answer, ``near_uniform`` and every
hook, registered with the type registry. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ..errors import DecisionError, QuestionError
from . import registry
from .draws import Draws, cents, confidence
from .values import (
    check_instructions,
    closed_schema,
    distribution_problem,
    fixed,
    got,
    json_kind,
    number,
    number_schema,
    probabilities,
    tag_schema,
)

__all__ = [
    "CHOICE",
    "MAX_CHOICE_OPTIONS",
    "NEAR_UNIFORM_TOLERANCE",
    "ChoiceAnswer",
    "ChoiceQuestion",
    "ChoiceRecord",
    "near_uniform",
]

#: The client-side cap on a choice's named options (seed 001: 1..255).
MAX_CHOICE_OPTIONS = 255
#: The ABSOLUTE tolerance on max|p - 1/n|, compared INCLUSIVELY (seeds 000/004).
NEAR_UNIFORM_TOLERANCE = 0.05


def near_uniform(probabilities: Mapping[str, float]) -> bool:
    """``max over i of |p_i - 1/n| <= 0.05``, n = entries in the map, values AS RETURNED.

    n == 1 is trivially uniform; an empty map has no distribution at all and is ``False``.
    """
    n = len(probabilities)
    if n == 0:
        return False
    if n == 1:
        # Stated by seed 000, not derived: {"only": 0.02} deviates 0.98 from 1/1, yet a single
        # option is trivially uniform (there is nothing to rank against).
        return True
    mean = 1.0 / n
    return max(abs(float(p) - mean) for p in probabilities.values()) <= NEAR_UNIFORM_TOLERANCE


@dataclass(frozen=True)
class ChoiceQuestion:
    """One option out of a named set of 1..255. ``criteria`` maps an option id to what PICKING
    it would mean: the only thing that differentiates one option from another to the model."""

    instructions: Any
    criteria: Mapping[str, Any] = field(default_factory=dict)
    type: Literal["choice"] = "choice"

    def __post_init__(self) -> None:
        check_instructions("Choice", self.instructions)
        if not isinstance(self.criteria, Mapping):
            raise QuestionError(
                "classifier: ChoiceQuestion criteria must map option ids to descriptions, got "
                f"{type(self.criteria).__name__}"
            )


@dataclass(frozen=True)
class ChoiceAnswer:
    """The picked option, a probability per offered option, and a confidence that reports on
    the QUESTION, not the answer. ``near_uniform`` is DERIVED from ``probabilities`` and never
    read from the wire."""

    type: ClassVar[Literal["choice"]] = "choice"
    choice: str
    probabilities: Mapping[str, float]
    confidence: float
    near_uniform: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "near_uniform", near_uniform(self.probabilities))

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "choice",
            "choice": self.choice,
            "probabilities": dict(self.probabilities),
            "confidence": self.confidence,
        }


def _from_wire(obj: Mapping[str, Any], key: str, where: str) -> ChoiceQuestion:
    criteria = obj.get("criteria")
    if not isinstance(criteria, Mapping):
        raise QuestionError(
            f"classifier: {where}choice criteria must be an object of option: description",
            key,
        )
    return ChoiceQuestion(obj.get("instructions"), {str(k): v for k, v in criteria.items()})


def _to_wire(question: ChoiceQuestion) -> dict[str, Any]:
    return {
        "type": "choice",
        "instructions": question.instructions,
        "criteria": {str(k): v for k, v in question.criteria.items()},
    }


def _limits(key: str, question: ChoiceQuestion) -> None:
    n = len(question.criteria)
    if not 1 <= n <= MAX_CHOICE_OPTIONS:
        raise QuestionError(
            f"classifier: question {key!r}: a choice takes 1..{MAX_CHOICE_OPTIONS} "
            f"named options, got {n}",
            key,
        )


def _decode(obj: Mapping[str, Any], key: str, question: Any) -> ChoiceAnswer:
    choice = obj.get("choice")
    if not isinstance(choice, str):
        raise DecisionError(
            f'classifier: answer "{key}": choice must be a string, got {json_kind(choice)}',
            key,
        )
    return ChoiceAnswer(
        choice=choice,
        probabilities=probabilities(obj.get("probabilities", {}), key),
        confidence=number(obj.get("confidence"), "confidence", key),
    )


def _validate(question: Any, answer: ChoiceAnswer) -> str | None:
    if not isinstance(question, ChoiceQuestion):
        return None
    offered = set(question.criteria)
    if answer.choice not in offered:
        return f"chose {answer.choice!r}, which was not offered"
    problem = distribution_problem(answer.probabilities, offered, "option")
    if problem:
        return problem
    if not 0.0 <= answer.confidence <= 1.0:
        return f"confidence is {answer.confidence}, outside 0..1"
    return None


def _record(answer: ChoiceAnswer, out: dict[str, Any], flags: list[str]) -> None:
    out["near_uniform"] = answer.near_uniform
    if answer.near_uniform:
        flags.append("near-uniform")


def confident_band(answer: Any, t: Mapping[str, float]) -> registry.Band:
    """choice and score: ``confidence >= min_confidence`` is yes, else uncertain (seed 004)."""
    return "yes" if answer.confidence >= t["min_confidence"] else "uncertain"


def _sample(question: ChoiceQuestion) -> dict[str, Any]:
    opts = list(question.criteria)
    return {
        "type": "choice",
        "choice": opts[0],
        "probabilities": {o: 1.0 / len(opts) for o in opts},
        "confidence": 0.5,
    }


def _synthetic(question: Mapping[str, Any], rng: Draws) -> dict[str, Any]:
    # Drawn over the options in code-point order: a map's key order on the wire carries
    # no meaning (toolnexus sends it sorted, the SDK as written), so it changes nothing.
    options = sorted(str(k) for k in question["criteria"])
    drawn = cents(rng, len(options))
    best = max(range(len(options)), key=lambda i: (drawn[i], -i))
    return {
        "type": "choice",
        "choice": options[best],
        "confidence": confidence(drawn[best] / 100, len(options)),
        "probabilities": {o: c / 100 for o, c in zip(options, drawn, strict=True)},
    }


class ChoiceRecord(registry.AnswerRecord):
    """A choice answer's record: ``type``, ``choice``, ``probabilities``, ``confidence``,
    ``near_uniform``, ``band``, ``flags``."""

    __slots__ = ()

    @property
    def choice(self) -> str | None:
        """The option chosen."""
        value = self.get("choice")
        return value if isinstance(value, str) else None

    @property
    def probabilities(self) -> Mapping[str, Any]:
        """Option -> probability, as the wire gave them."""
        value = self.get("probabilities")
        return value if isinstance(value, Mapping) else {}

    @property
    def near_uniform(self) -> bool | None:
        """Whether the probabilities are all about equal (derived)."""
        value = self.get("near_uniform")
        return value if isinstance(value, bool) else None


def _text(record: ChoiceRecord) -> str:
    choice = record.choice
    p = record.probabilities.get(choice) if choice is not None else None
    return f"{choice} (p {fixed(p)})"


def _arrow(pa: Any) -> list[tuple[str, Any]]:
    return [
        ("choice", pa.string()),
        ("probabilities", pa.map_(pa.string(), pa.float64())),
        ("confidence", pa.float64()),
        ("near_uniform", pa.bool_()),
    ]


def _llm_schema(question: ChoiceQuestion) -> dict[str, Any]:
    options = [str(k) for k in question.criteria]
    return closed_schema(
        {
            "type": tag_schema("choice"),
            "choice": {"type": "string", "enum": options},
            "probabilities": closed_schema({o: number_schema() for o in options}),
            "confidence": number_schema(),
        }
    )


def _lint(obj: Mapping[str, Any], sink: registry.LintSink, where: str) -> None:
    criteria = obj.get("criteria")
    if not isinstance(criteria, dict):
        missing = "criteria" not in obj
        said = "missing" if missing else f"got {json_kind(criteria, yaml=True)}"
        sink.add(
            () if missing else ("criteria",),
            "TN020",
            f"{where}a choice needs criteria: a mapping of option id to what picking it "
            f"means ({said})",
            at_key=missing,
        )
        return
    for option, text in criteria.items():
        # Issue 33 item 4: null is a description the wire accepts (seed 004's degenerate
        # rule counts it as empty), so it loads and is sent as null, as written.
        if text is not None and not isinstance(text, str):
            sink.add(
                ("criteria", option),
                "TN020",
                f"{where}option {option!r} description must be a string or null, {got(text)}",
            )


_LLM = registry.LlmHooks(
    prompt='- "choice": the option whose description best fits; option ids are the keys of '
    '"options": {"type": "choice", "choice": <option id>, "probabilities": {<every option id>: '
    '<number 0..1>}, "confidence": <number 0..1>}',
    schema=_llm_schema,
    question=lambda q, wire: {
        "type": "choice",
        "instructions": wire["instructions"],
        "options": wire["criteria"],
    },
)


def _output_tokens(question: Mapping[str, Any]) -> int:
    # Fitted on the live captures (scheduler/budget.py): about 8 plus 10 per option (38 for 3
    # options, 331 for 32).
    criteria = question.get("criteria")
    options = len(criteria) if isinstance(criteria, Mapping) else 0
    return 8 + 10 * options


def _api_fields(q: Mapping[str, Any], loc: list[Any], sink: registry.ApiSink) -> None:
    """The API schema: ``criteria`` a non-empty object, each option's description text."""
    criteria = q.get("criteria")
    if "criteria" not in q:
        sink.error("missing", [*loc, "criteria"], "Field required", q)
    elif not isinstance(criteria, dict):
        sink.error("dict_type", [*loc, "criteria"], "Input should be a valid dictionary", criteria)
    elif not criteria:
        sink.error(
            "too_short",
            [*loc, "criteria"],
            "Dictionary should have at least 1 item after validation, not 0",
            criteria,
        )
    else:
        # The schema's option description: text or null (a number or boolean is refused).
        for option, description in criteria.items():
            sink.text(description, [*loc, "criteria", option])


def _api_rule(q: Mapping[str, Any]) -> str | None:
    if len(q["criteria"]) > MAX_CHOICE_OPTIONS:
        return f"Too many choices. Must have at most {MAX_CHOICE_OPTIONS} choices."
    return None


def _describe(answer: ChoiceAnswer) -> str:
    """``assert_answer``'s line: the pick, its confidence, every option most probable first."""
    ranked = sorted(answer.probabilities.items(), key=lambda kv: (-kv[1], kv[0]))
    spread = ", ".join(f"{k} {v:.3g}" for k, v in ranked)
    uniform = "; near-uniform" if answer.near_uniform else ""
    return f"choice {answer.choice!r} (confidence {answer.confidence:.3g}{uniform}): {spread}"


CHOICE = registry.register(
    registry.QuestionType(
        name="choice",
        question=ChoiceQuestion,
        answer=ChoiceAnswer,
        from_wire=_from_wire,
        to_wire=_to_wire,
        decode=_decode,
        validate=_validate,
        sample=_sample,
        synthetic=_synthetic,
        text=_text,
        limits=_limits,
        record=_record,
        band=confident_band,
        arrow=_arrow,
        recalibrated=("probabilities", "confidence"),
        llm=_LLM,
        lint=_lint,
        where_fields={"choice": False, "confidence": True},
        value=lambda a: a.confidence,
        confidence=lambda a: a.confidence,
        option=lambda a: a.choice,
        option_field="choice",
        offers=lambda q: q.criteria,
        sure=lambda a, high: a.confidence > high and not a.near_uniform,
        describe=_describe,
        api_fields=_api_fields,
        api_rule=_api_rule,
        limits_code="TN010",
        floor_thresholds=lambda f: {"min_confidence": f / 100},
        answer_record=ChoiceRecord,
        output_tokens=_output_tokens,
    )
)
