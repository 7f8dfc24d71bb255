"""Decision and decoding. Pure. The answers themselves (and ``near_uniform``) are values in
``answers.py``; ``validate_decision`` and ``threshold_band`` are
``validation.py``.

Decoding never sorts, renormalises or rounds a probability; integers on the wire decode as
floats (gateways write ``0``/``1`` where the direct API writes ``0.0``/``1.0``). Anything that
cannot be decoded is a :class:`DecisionError`; no other exception escapes ``parse_decision``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import observe as probe
from .answers import (
    Answer,
    ClassifierUsage,
)
from .errors import AnswerAccessError, DecisionError, InvalidDecision
from .jsonlimits import JsonLimitError, loads
from .qtypes import registry
from .qtypes.choice import (
    ChoiceAnswer,
)
from .qtypes.noul import NoulAnswer
from .qtypes.raw import RawAnswer, RawQuestion
from .qtypes.score import ScoreAnswer
from .qtypes.values import json_kind
from .questions import Question
from .validity import validate_answers

__all__ = [
    "MAX_USAGE",
    "Decision",
    "answers_decoder",
    "decode_answers",
    "parse_decision",
]


def _absent(key: str) -> AnswerAccessError:
    return AnswerAccessError(f'classifier: no answer "{key}" in this decision', key)


@dataclass(frozen=True)
class Decision:
    """One answer per question under the caller's own keys.

    ``model`` is what actually answered, which may be more specific than what was asked for.
    ``calibrated`` is False for a backend that self-reports (the llm style); a threshold tuned
    against one backend does not transfer to another. ``cached`` is True when the decision came
    from a cache and nothing was sent.

    ``packed`` is how many states the request that answered it asked about (1: the state alone;
    N > 1: a packed request, issue 20, and then ``calibrated`` is False); ``reasked`` is True
    when a packed answer failed validation and the state was asked again, alone (``packed`` is
    then 1 and ``usage`` holds both requests' charges); ``position`` is the state's index in
    that request's ``states`` (0 for a state asked alone). None is a wire field.

    ``recalibrated`` (``create_classifier(calibration=FILE)``, issue 24): per question key with
    a map, the answer with recalibrated probabilities, beside the wire's ``answers`` (which are
    never changed); ``calibration_sha256`` names the file by the sha256 of its bytes.
    """

    model: str
    answers: Mapping[str, Answer]
    usage: ClassifierUsage = field(default_factory=ClassifierUsage)
    calibrated: bool = True
    cached: bool = False
    packed: int = 1
    position: int = 0
    reasked: bool = False
    recalibrated: Mapping[str, Answer] | None = None
    calibration_sha256: str | None = None

    def _get(self, key: str, want: str) -> Answer:
        answer = self.answers.get(key)
        if answer is None:
            raise _absent(key)
        if want == "raw":
            if not isinstance(answer, RawAnswer):
                raise AnswerAccessError(
                    f'classifier: answer "{key}" is a {answer.type} answer, not raw', key
                )
            return answer
        if isinstance(answer, RawAnswer) or answer.type != want:
            raise AnswerAccessError(
                f'classifier: answer "{key}" is a {answer.type} answer, not {want}', key
            )
        return answer

    def noul(self, key: str) -> NoulAnswer:
        """The noul answer at ``key``; an error naming the key when absent or of another type."""
        answer = self._get(key, "noul")
        assert isinstance(answer, NoulAnswer)
        return answer

    def choice(self, key: str) -> ChoiceAnswer:
        """The choice answer at ``key``; an error naming the key when absent or of another type."""
        answer = self._get(key, "choice")
        assert isinstance(answer, ChoiceAnswer)
        return answer

    def score(self, key: str) -> ScoreAnswer:
        """The score answer at ``key``; an error naming the key when absent or of another type."""
        answer = self._get(key, "score")
        assert isinstance(answer, ScoreAnswer)
        return answer

    def raw(self, key: str) -> RawAnswer:
        """The raw answer at ``key``: an error when absent or when it IS a modelled type."""
        answer = self._get(key, "raw")
        assert isinstance(answer, RawAnswer)
        return answer

    def to_wire(self) -> dict[str, Any]:
        """The decision as a wire body. Derived fields (near_uniform, level, label, cached) stay
        out; ``calibrated`` is written only when false, since absent means true."""
        out: dict[str, Any] = {
            "model": self.model,
            "answers": {k: a.to_wire() for k, a in self.answers.items()},
            "usage": self.usage.to_wire(),
        }
        if not self.calibrated:
            out["calibrated"] = False
        return out

    def validate(self, questions: Mapping[str, Question]) -> InvalidDecision | None:
        """Whether this decision answers EXACTLY ``questions`` within their schema (seed 004
        ``validate-decision``): ``None``, else the error, returned, not raised. ``evaluate``
        returns an invalid decision as it was decoded (and never caches it); this is how to
        ask."""
        return validate_answers(questions, self.answers)

    @classmethod
    def from_json(
        cls, data: bytes | bytearray | str, questions: Mapping[str, Question] | None = None
    ) -> Decision:
        """Decode a response body. With ``questions``, score answers are checked against the
        rubric the caller sent (seed 003) and labelled from it."""
        if not isinstance(data, bytes | bytearray | str):
            raise DecisionError(
                f"classifier: Decision.from_json takes bytes or str, got {json_kind(data)}"
            )
        try:
            obj = loads(data)
        except JsonLimitError as e:
            raise DecisionError(f"classifier: response refused: {e}") from None
        except (ValueError, UnicodeDecodeError) as e:
            raise DecisionError(f"classifier: response is not JSON: {e}") from None
        return parse_decision(obj, questions)


# --- decoding ---------------------------------------------------------------------------


def _decode_answer(obj: Any, key: str, question: Question | None) -> Answer:
    if probe.observer is not None:
        probe.observer("decode.dispatch", key)
    # ``type(obj) is dict`` first: a parsed reply's answers are dicts, and ``isinstance`` against
    # the Mapping ABC is a Python-level call, once per answer on a batch's hot path (issue 32).
    if type(obj) is not dict and not isinstance(obj, Mapping):
        raise DecisionError(
            f'classifier: answer "{key}" must be an object, got {json_kind(obj)}', key
        )
    atype = obj.get("type")
    if not isinstance(atype, str) or not atype:
        raise DecisionError(f'classifier: answer "{key}" has no type', key)
    # A raw question's own (unmodelled) type keeps its answer as received; any other answer
    # is decoded by its type's module, and a type nobody registered is raw.
    if (
        isinstance(question, RawQuestion)
        and question.type == atype
        and not registry.modelled(atype)
    ):
        return RawAnswer(atype, dict(obj))
    return registry.of(atype).decode(obj, key, question)  # type: ignore[no-any-return]


#: A usage figure (a token count, a cost) at most: the largest integer every JSON reader reads
#: exactly; a sum of such figures never overflows a double. Decoding and ``report`` both apply
#: it, so batch never writes a record its report refuses (a server once sent -5 tokens).
MAX_USAGE = 2**53


def _usage(obj: Any) -> ClassifierUsage:
    if obj is None:
        # Absent is not zero (issue 33): the official SDK refuses such a reply; we decode it
        # and say the counts are unknown, so a spend cap still charges the request.
        return ClassifierUsage(reported=False)
    if not isinstance(obj, Mapping):
        raise DecisionError(f"classifier: usage must be an object, got {json_kind(obj)}")

    missing = [name for name in ("input_tokens", "output_tokens") if obj.get(name) is None]

    def tokens(name: str) -> int:
        v = obj.get(name)
        if v is None:
            return 0
        if type(v) is int and 0 <= v <= MAX_USAGE:
            return v
        # A float is checked for finiteness; an int past 64 bits (a host's own dict) is refused
        # before math.isfinite, which raises OverflowError on it.
        if isinstance(v, bool) or not isinstance(v, float) or not math.isfinite(v):
            raise DecisionError(f"classifier: usage.{name} must be a number")
        if not 0 <= v <= MAX_USAGE:
            raise DecisionError(f"classifier: usage.{name} must be a count in 0..2**53")
        return int(v)

    cost = obj.get("cost")
    if cost is not None:
        if isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost):
            raise DecisionError("classifier: usage.cost must be a finite number")
        if not 0 <= cost <= MAX_USAGE:
            raise DecisionError("classifier: usage.cost must be in 0..2**53")
        cost = float(cost)
    return ClassifierUsage(
        tokens("input_tokens"), tokens("output_tokens"), cost, reported=not missing
    )


def decode_answers(
    answers: Mapping[Any, Any], questions: Mapping[str, Question] | None = None
) -> dict[str, Answer]:
    """A response's ``answers`` object (already parsed JSON) as typed answers under the same
    keys: :func:`parse_decision`'s answers, for a caller that builds its own Decision (a packed
    response's states, issue 32: one Decision per state, not two)."""
    qs = questions or {}
    out: dict[str, Answer] = {}
    for k, v in answers.items():
        key = k if type(k) is str else str(k)  # a parsed reply's keys are str already
        out[key] = _decode_answer(v, key, qs.get(key))
    return out


def answers_decoder(
    questions: Mapping[str, Question],
) -> Callable[[Mapping[Any, Any]], dict[str, Answer]]:
    """``decode_answers(answers, questions)`` for many ``answers`` over one question set (a
    packed reply's states, issue 32 pack CPU). An answer that is an object of its question's
    own modelled type goes straight to that type's decoder, found once per set, not once per
    answer; any other answer goes through the one decoder, so the result and its errors are
    the same. Build it where it is used: a later change to a mutable ``questions`` is not
    seen."""
    direct: dict[str, tuple[Question, str, Callable[..., Answer]]] = {}
    for key, question in questions.items():
        name = question.type
        if registry.modelled(name):
            direct[key] = (question, name, registry.of(name).decode)

    def decode(answers: Mapping[Any, Any]) -> dict[str, Answer]:
        out: dict[str, Answer] = {}
        for k, v in answers.items():
            key = k if type(k) is str else str(k)
            known = direct.get(key)
            if known is not None and type(v) is dict and v.get("type") == known[1]:
                out[key] = known[2](v, key, known[0])
            else:
                out[key] = _decode_answer(v, key, questions.get(key))
        return out

    return decode


def parse_decision(obj: Any, questions: Mapping[str, Question] | None = None) -> Decision:
    """A recorded or live response body (already parsed JSON) as a Decision.

    ``calibrated`` absent or null decodes as True; only the literal ``false`` is False.
    """
    if not isinstance(obj, Mapping):
        raise DecisionError(f"classifier: response must be an object, got {json_kind(obj)}")
    model = obj.get("model")
    if not isinstance(model, str):
        raise DecisionError(f"classifier: response model must be a string, got {json_kind(model)}")
    answers_raw = obj.get("answers")
    if not isinstance(answers_raw, Mapping):
        raise DecisionError(
            f"classifier: response answers must be an object, got {json_kind(answers_raw)}"
        )
    return Decision(
        model=model,
        answers=decode_answers(answers_raw, questions),
        usage=_usage(obj.get("usage")),
        calibrated=obj.get("calibrated") is not False,
    )
