"""The score type (seeds 001, 003): a point on an ordered rubric of 2..10 levels, with the
structure to use it (level, label, description, levels). Its answer and every hook, registered
with the type registry; its question and the reading of its structure are ``rubric.py``.
Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..errors import ConfigError, DecisionError, QuestionError
from . import registry
from .choice import confident_band
from .draws import Draws, cents, confidence
from .rubric import (
    MAX_SCORE_LEVELS,
    MIN_SCORE_LEVELS,
    ScoreLevels,
    ScoreQuestion,
    score_structure,
)
from .values import (
    closed_schema,
    distribution_problem,
    fixed,
    json_kind,
    number,
    number_schema,
    probabilities,
    tag_schema,
)

__all__ = [
    "SCORE",
    "ScoreAnswer",
    "ScoreRecord",
]


@dataclass(frozen=True)
class ScoreAnswer:
    """A point on an ordered rubric, plus the structure to use it (seed 003).

    ``score`` is the probability-weighted mean of level indices (it may fall between levels);
    ``level`` is the argmax of ``probabilities`` (lowest index wins a tie). They can disagree and
    the disagreement is information: do not use ``round(score)`` as a level.
    ``legend`` and ``probabilities`` are keyed by level index as the wire writes it (``"0"``).
    ``levels`` pairs every level's label, in level order, with its probability (0.0 for a level
    the response left out); ``ordered_legend()`` is the labels alone (seed 000's ``levels()``).

    Built by hand (a custom style) with only ``score``, ``legend``, ``probabilities`` and
    ``confidence``, the derived fields are filled by the same decoder ``parse_decision`` uses.
    """

    type: ClassVar[Literal["score"]] = "score"
    score: float
    legend: Mapping[str, Any]
    probabilities: Mapping[str, float]
    confidence: float
    level: int = 0
    label: str = ""
    description: Any = None
    levels: ScoreLevels = ()

    def __post_init__(self) -> None:
        # Built by hand: derive level/label/description/levels with the decoder itself, as
        # decoding without a known question does. Decoding passes them in, so this is skipped.
        if self.levels or not self.probabilities:
            return
        try:
            level, label, description, levels = score_structure(
                "", dict(self.probabilities), dict(self.legend), None
            )
        except DecisionError as e:
            raise ConfigError(
                "classifier: ScoreAnswer: " + e.detail.removeprefix('answer "": ')
            ) from None
        object.__setattr__(self, "level", level)
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "levels", levels)

    def ordered_legend(self) -> list[str]:
        """Every level's label in LEVEL order ("2" before "10"), which the ``legend`` mapping
        itself loses (seed 000 ``levels()``, seed 004 ``levels``). Taken from ``levels``, so a
        reply without a legend still gives the question's labels, never ``[]``."""
        return [label for label, _ in self.levels]

    def normalized(self) -> float:
        """``score / top level index``, so scales of different sizes can be weighed together.
        A single-level scale returns 0.0. No clamping: a score outside the rubric gives a value
        outside 0..1 rather than an error."""
        top = len(self.levels) - 1
        if top <= 0:
            return 0.0
        return self.score / top

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "score",
            "score": self.score,
            "legend": dict(self.legend),
            "probabilities": dict(self.probabilities),
            "confidence": self.confidence,
        }


def _from_wire(obj: Mapping[str, Any], key: str, where: str) -> ScoreQuestion:
    criteria = obj.get("criteria")
    if not isinstance(criteria, list | tuple):
        raise QuestionError(
            f"classifier: {where}score criteria must be an ordered list of levels", key
        )
    for i, level in enumerate(criteria):
        if isinstance(level, Mapping):
            if not isinstance(level.get("label"), str):
                raise QuestionError(
                    f"classifier: {where}score level {i} needs a string 'label'", key
                )
        elif not isinstance(level, str):
            raise QuestionError(
                f"classifier: {where}score level {i} must be a string or {{label, description}}",
                key,
            )
    return ScoreQuestion(obj.get("instructions"), list(criteria))


def _to_wire(question: ScoreQuestion) -> dict[str, Any]:
    return {
        "type": "score",
        "instructions": question.instructions,
        "criteria": [dict(c) if isinstance(c, Mapping) else c for c in question.criteria],
    }


def _limits(key: str, question: ScoreQuestion) -> None:
    n = len(question.criteria)
    if not MIN_SCORE_LEVELS <= n <= MAX_SCORE_LEVELS:
        raise QuestionError(
            f"classifier: question {key!r}: a score takes "
            f"{MIN_SCORE_LEVELS}..{MAX_SCORE_LEVELS} ordered levels, got {n}",
            key,
        )


def _decode(obj: Mapping[str, Any], key: str, question: Any) -> ScoreAnswer:
    score = number(obj.get("score"), "score", key)
    conf = number(obj.get("confidence", 0.0), "confidence", key)
    probs = probabilities(obj.get("probabilities"), key)
    if not probs:
        # A missing distribution would argmax to level 0 and report the lowest label with
        # full confidence (seed 003).
        raise DecisionError(f'classifier: answer "{key}": empty probabilities', key)
    legend_raw = obj.get("legend", {})
    if legend_raw is None:
        legend_raw = {}
    if not isinstance(legend_raw, Mapping):
        raise DecisionError(
            f'classifier: answer "{key}": legend must be an object, got {json_kind(legend_raw)}',
            key,
        )
    legend = {str(k): v for k, v in legend_raw.items()}
    level, label, description, levels = score_structure(key, probs, legend, question)
    return ScoreAnswer(
        score=score,
        legend=legend,
        probabilities=probs,
        confidence=conf,
        level=level,
        label=label,
        description=description,
        levels=levels,
    )


def _validate(question: Any, answer: ScoreAnswer) -> str | None:
    if not isinstance(question, ScoreQuestion):
        return None
    top = len(question.criteria) - 1
    if not 0.0 <= answer.score <= top:
        return f"score is {answer.score}, outside 0..{top}"
    offered = {str(i) for i in range(len(question.criteria))}
    problem = distribution_problem(answer.probabilities, offered, "level")
    if problem:
        return problem
    if not 0.0 <= answer.confidence <= 1.0:
        return f"confidence is {answer.confidence}, outside 0..1"
    return None


def _record(answer: ScoreAnswer, out: dict[str, Any], flags: list[str]) -> None:
    out["level"] = answer.level
    out["label"] = answer.label


def _sample(question: ScoreQuestion) -> dict[str, Any]:
    levels = list(question.criteria)
    return {
        "type": "score",
        "score": 0.0,
        "legend": {str(i): lv for i, lv in enumerate(levels)},
        "probabilities": {str(i): float(i == 0) for i in range(len(levels))},
        "confidence": 0.5,
    }


def _synthetic(question: Mapping[str, Any], rng: Draws) -> dict[str, Any]:
    levels = list(question["criteria"])
    drawn = cents(rng, len(levels))
    return {
        "type": "score",
        "score": round(sum(i * c for i, c in enumerate(drawn)) / 100, 2),
        "confidence": confidence(max(drawn) / 100, len(levels)),
        "legend": {str(i): level for i, level in enumerate(levels)},
        "probabilities": {str(i): c / 100 for i, c in enumerate(drawn)},
    }


class ScoreRecord(registry.AnswerRecord):
    """A score answer's record: ``type``, ``score``, ``legend``, ``probabilities``,
    ``confidence``, ``level``, ``label``, ``band``, ``flags``."""

    __slots__ = ()

    # ``_record`` writes level and label for every score, null outside the legend's levels
    written_null = registry.AnswerRecord.written_null | {"level", "label"}

    @property
    def score(self) -> float | None:
        """The wire score."""
        return registry.number(self.get("score"))

    @property
    def level(self) -> int | None:
        """The index of the level the score falls in (derived)."""
        value = self.get("level")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def label(self) -> Any:
        """That level's legend entry (derived; a structured level is not a string)."""
        return self.get("label")


def _text(record: ScoreRecord) -> str:
    return f"{fixed(record.score)}, level {record.level}: {record.label}"


def _arrow(pa: Any) -> list[tuple[str, Any]]:
    return [
        ("score", pa.float64()),
        ("legend", pa.map_(pa.string(), pa.string())),
        ("probabilities", pa.map_(pa.string(), pa.float64())),
        ("confidence", pa.float64()),
        ("level", pa.int32()),
        ("label", pa.string()),
    ]


def _llm_schema(question: ScoreQuestion) -> dict[str, Any]:
    return closed_schema(
        {
            "type": tag_schema("score"),
            "score": number_schema(),
            "probabilities": closed_schema(
                {str(i): number_schema() for i in range(len(question.criteria))}
            ),
            "confidence": number_schema(),
        }
    )


def _llm_question(question: ScoreQuestion, wire: dict[str, Any]) -> dict[str, Any]:
    levels = {str(i): level for i, level in enumerate(wire["criteria"])}
    return {"type": "score", "instructions": wire["instructions"], "levels": levels}


def _llm_reply(question: ScoreQuestion, answer: dict[str, Any]) -> None:
    # The model is not asked for the legend: the question's levels are it.
    answer["legend"] = {str(i): lv for i, lv in enumerate(question.criteria)}


def _lint(obj: Mapping[str, Any], sink: registry.LintSink, where: str) -> None:
    criteria = obj.get("criteria")
    if not isinstance(criteria, list):
        missing = "criteria" not in obj
        said = "missing" if missing else f"got {json_kind(criteria, yaml=True)}"
        sink.add(
            () if missing else ("criteria",),
            "TN020",
            f"{where}a score needs criteria: an ordered list of levels ({said})",
            at_key=missing,
        )
        return
    for i, level in enumerate(criteria):
        lpath = ("criteria", i)
        if isinstance(level, dict):
            sink.unknown_fields(level, lpath, ("label", "description"), f"{where}level {i}: ")
            label = level.get("label")
            if not isinstance(label, str) or not label.strip():
                sink.add(
                    (*lpath, "label") if "label" in level else lpath,
                    "TN020",
                    f"{where}level {i} needs a non-empty string label",
                )
        elif not isinstance(level, str):
            sink.add(
                lpath,
                "TN020",
                f"{where}level {i} must be a string or {{label, description}}, "
                f"got {json_kind(level, yaml=True)}",
            )


_LLM = registry.LlmHooks(
    prompt='- "score": a rating on the ordered "levels", keyed by level index from "0" (lowest) '
    'upward: {"type": "score", "score": <probability-weighted mean level index>, '
    '"probabilities": {<every level index>: <number 0..1>}, "confidence": <number 0..1>}',
    schema=_llm_schema,
    question=_llm_question,
    reply=_llm_reply,
)


def _api_fields(q: Mapping[str, Any], loc: list[Any], sink: registry.ApiSink) -> None:
    """The API schema: ``criteria`` a non-empty list of levels, each text, never null (the
    official SDK cannot parse a null legend, and the API refuses it: issue 33)."""
    criteria = q.get("criteria")
    if "criteria" not in q:
        sink.error("missing", [*loc, "criteria"], "Field required", q)
    elif not isinstance(criteria, list):
        sink.error("list_type", [*loc, "criteria"], "Input should be a valid list", criteria)
    elif not criteria:
        sink.error(
            "too_short",
            [*loc, "criteria"],
            "List should have at least 1 item after validation, not 0",
            criteria,
        )
    else:
        for i, level in enumerate(criteria):
            sink.text(level, [*loc, "criteria", i], nullable=False)


def _api_rule(q: Mapping[str, Any]) -> str | None:
    if len(q["criteria"]) > MAX_SCORE_LEVELS:
        return f"Too many score levels. Must have at most {MAX_SCORE_LEVELS} levels."
    return None


def _describe(answer: ScoreAnswer) -> str:
    """``assert_answer``'s line: the value, its level, every level's probability."""
    levels = ", ".join(f"{i} {label} {p:.3g}" for i, (label, p) in enumerate(answer.levels))
    return (
        f"score {answer.score:.3g}, level {answer.level} {answer.label!r} "
        f"(confidence {answer.confidence:.3g}): {levels}"
    )


SCORE = registry.register(
    registry.QuestionType(
        name="score",
        question=ScoreQuestion,
        answer=ScoreAnswer,
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
        where_fields={"score": True, "level": True, "label": False, "confidence": True},
        value=lambda a: a.score,
        gauge=lambda a: a.score,
        gauged=True,
        floor_thresholds=lambda f: {"min_confidence": f / 100},
        confidence=lambda a: a.confidence,
        level=lambda a: (a.level, a.label),
        sure=lambda a, high: a.confidence > high,
        describe=_describe,
        api_fields=_api_fields,
        api_rule=_api_rule,
        answer_record=ScoreRecord,
        output_tokens=lambda q: 17,  # fitted: 17-18 whatever its levels (budget.py)
    )
)
