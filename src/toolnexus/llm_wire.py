"""What the llm style sends and how it reads the answer, without any HTTP: the system prompt,
the strict ``response_format`` schema, the messages (images as ``data:`` URL parts) and the
decoding of a chat-completions reply into a validated, uncalibrated Decision.

The caller's question keys are ADDRESSING, not content (seed 004): the model sees opaque ids
(``q1``, ``q2``, ... in ASCII key order) and the answers are mapped back, so a key may be a tool
name verbatim and two evaluations that differ only in their keys send the same content.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .assets import Asset
from .canonical import canonical_json
from .decision import Decision, parse_decision
from .errors import DecisionError, InvalidDecision
from .jsonlimits import loads
from .questions import (
    ChoiceQuestion,
    NoulQuestion,
    Question,
    ScoreQuestion,
    question_to_wire,
)
from .transport.redaction import scrub, scrub_value
from .validation import validate_decision

__all__ = ["SYSTEM_PROMPT", "build_messages", "decode_reply", "quote", "response_schema"]

#: How much of a reply or an error body a message quotes.
_QUOTE = 200

SYSTEM_PROMPT = """\
You are a classifier. Read the STATE and answer every question about it. Answer each question \
independently: one answer is never context for another.

Reply with one JSON object and nothing else, shaped {"answers": {<question id>: <answer>}}, with \
exactly one answer for every question id and no other keys. The answer for each question type:
- "noul": the probability that the statement in the instructions holds for the state, reading \
"criteria.true" and "criteria.false" as what each outcome means: \
{"type": "noul", "noul": <number 0..1>}
- "choice": the option whose description best fits; option ids are the keys of "options": \
{"type": "choice", "choice": <option id>, "probabilities": {<every option id>: <number 0..1>}, \
"confidence": <number 0..1>}
- "score": a rating on the ordered "levels", keyed by level index from "0" (lowest) upward: \
{"type": "score", "score": <probability-weighted mean level index>, \
"probabilities": {<every level index>: <number 0..1>}, "confidence": <number 0..1>}
Probabilities cover every option or level and sum to 1. Confidence says how well the state lets \
the question be answered at all (0 = no basis, 1 = unambiguous)."""


def _ids(questions: Mapping[str, Question]) -> dict[str, str]:
    """Caller key -> the opaque id the model sees, in ASCII key order."""
    return {key: f"q{i}" for i, key in enumerate(sorted(questions), start=1)}


def _question_for_model(q: Question) -> dict[str, Any]:
    wire = question_to_wire(q)
    if isinstance(q, ChoiceQuestion):
        return {"type": "choice", "instructions": wire["instructions"], "options": wire["criteria"]}
    if isinstance(q, ScoreQuestion):
        levels = {str(i): level for i, level in enumerate(wire["criteria"])}
        return {"type": "score", "instructions": wire["instructions"], "levels": levels}
    return wire


def _number() -> dict[str, Any]:
    # No minimum/maximum: several strict-mode endpoints reject them; validate_decision checks
    # the ranges instead.
    return {"type": "number"}


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    """A strict-mode object: every property required, nothing else allowed."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _answer_schema(q: Question) -> dict[str, Any]:
    # enum of one value rather than const: older strict-mode validators do not know const.
    if isinstance(q, NoulQuestion):
        return _closed({"type": {"type": "string", "enum": ["noul"]}, "noul": _number()})
    if isinstance(q, ChoiceQuestion):
        options = [str(k) for k in q.criteria]
        return _closed(
            {
                "type": {"type": "string", "enum": ["choice"]},
                "choice": {"type": "string", "enum": options},
                "probabilities": _closed({o: _number() for o in options}),
                "confidence": _number(),
            }
        )
    assert isinstance(q, ScoreQuestion)
    return _closed(
        {
            "type": {"type": "string", "enum": ["score"]},
            "score": _number(),
            "probabilities": _closed({str(i): _number() for i in range(len(q.criteria))}),
            "confidence": _number(),
        }
    )


def response_schema(questions: Mapping[str, Question]) -> dict[str, Any]:
    """The strict ``response_format`` for a question set, keyed by the opaque ids."""
    ids = _ids(questions)
    answers = _closed({ids[k]: _answer_schema(questions[k]) for k in sorted(questions)})
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "answers",
            "strict": True,
            "schema": _closed({"answers": answers}),
        },
    }


def build_messages(
    state: Any, questions: Mapping[str, Question], assets: Sequence[Asset] = ()
) -> list[dict[str, Any]]:
    """The system prompt and one user message carrying the state and the questions.

    With images (``assets``, lifted from the state), the user message is a list of content
    parts: the same JSON text, then for each image a text part naming its placeholder (which is
    what the state says in its place) and the image itself as a ``data:`` URL."""
    ids = _ids(questions)
    user = {
        "state": state,
        "questions": {ids[k]: _question_for_model(questions[k]) for k in sorted(questions)},
    }
    text = canonical_json(user).decode("utf-8")
    content: str | list[dict[str, Any]] = text
    if assets:
        parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
        for asset in assets:
            parts.append({"type": "text", "text": f"Image {asset.placeholder}:"})
            parts.append({"type": "image_url", "image_url": {"url": asset.image.data_url()}})
        content = parts
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": content},
    ]


def quote(text: str, secrets: Sequence[str] = ()) -> str:
    """The first 200 characters of ``text``, repr-quoted, with every secret scrubbed first (so a
    cut can never leave a prefix of one), by the transport's own rule."""
    text = scrub(text, secrets)
    return repr(text[:_QUOTE] + ("…" if len(text) > _QUOTE else ""))


def decode_reply(
    response: Any,
    questions: Mapping[str, Question],
    fallback_model: str,
    secrets: Sequence[str] = (),
) -> Decision:
    """A chat-completions response as a validated, uncalibrated Decision.

    The reply content goes through the core decoder with the served ``model``, score legends
    filled from the question levels, and the chat usage mapped (prompt_tokens -> input_tokens,
    completion_tokens -> output_tokens, ``usage.cost`` only when the endpoint reports it).
    Every ``secrets`` value is scrubbed from any quoted reply.
    """
    if not isinstance(response, Mapping):
        raise DecisionError("classifier: llm: chat response is not a JSON object")
    content, refusal = _content(response)
    if content is None:
        why = f"refused: {quote(refusal, secrets)}" if refusal else "no message content"
        raise DecisionError(f"classifier: llm: chat reply has {why}")
    try:
        # Scrubbed as decoded: a host's own chat client never passed the transport's byte
        # scrub, and content is JSON inside JSON, where a key may hide in escapes (issue 29).
        reply = scrub_value(loads(content), secrets)
    except ValueError:
        reply = None
    if not isinstance(reply, Mapping) or not isinstance(reply.get("answers"), Mapping):
        raise DecisionError(
            'classifier: llm: reply is not a JSON object with "answers": ' + quote(content, secrets)
        )
    by_id = {qid: key for key, qid in _ids(questions).items()}
    answers: dict[str, Any] = {}
    for qid, answer in reply["answers"].items():
        key = by_id.get(str(qid))
        if key is None:
            # Never looked up among the caller's keys: an id the model invented must not land on
            # a caller key that happens to be spelled the same.
            raise InvalidDecision(
                f"classifier: invalid decision: unexpected answer {json.dumps(str(qid))} "
                f"(not a question id); llm reply: {quote(content, secrets)}",
                str(qid),
            )
        q = questions[key]
        if isinstance(answer, Mapping):
            answer = dict(answer)
            # Plain JSON mode has no schema to force the type tag; the question knows it.
            answer.setdefault("type", q.type)
            if isinstance(q, ScoreQuestion):
                answer["legend"] = {str(i): lv for i, lv in enumerate(q.criteria)}
        answers[key] = answer
    model = scrub_value(response.get("model"), secrets)
    body = {
        "model": model if isinstance(model, str) and model else fallback_model,
        "answers": answers,
        "usage": _usage(response.get("usage")),
        "calibrated": False,
    }
    try:
        decision = parse_decision(body, questions)
    except DecisionError as e:
        raise DecisionError(f"{e.message}; llm reply: {quote(content, secrets)}", e.key) from None
    invalid = validate_decision(questions, decision)
    if invalid is not None:
        raise InvalidDecision(
            f"{invalid.message}; llm reply: {quote(content, secrets)}", invalid.key
        )
    return decision


def _content(response: Mapping[str, Any]) -> tuple[str | None, str | None]:
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return None, None
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        return None, None
    content, refusal = message.get("content"), message.get("refusal")
    return (
        content if isinstance(content, str) else None,
        refusal if isinstance(refusal, str) else None,
    )


def _usage(usage: Any) -> dict[str, Any]:
    if not isinstance(usage, Mapping):
        return {}
    out: dict[str, Any] = {
        "input_tokens": usage.get("prompt_tokens") or 0,
        "output_tokens": usage.get("completion_tokens") or 0,
    }
    if usage.get("cost") is not None:
        out["cost"] = usage["cost"]
    return out
