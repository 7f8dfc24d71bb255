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

from ..core import (
    Asset,
    Decision,
    DecisionError,
    InvalidDecision,
    Question,
    canonical_json,
    closed_schema,
    loads,
    parse_decision,
    question_to_wire,
    registry,
    validate_decision,
)
from ..transport import scrub, scrub_value

__all__ = [
    "SYSTEM_PROMPT",
    "build_messages",
    "decode_reply",
    "quote",
    "response_schema",
    "system_prompt",
]

#: How much of a reply or an error body a message quotes.
_QUOTE = 200

_PROMPT_HEAD = """\
You are a classifier. Read the STATE and answer every question about it. Answer each question \
independently: one answer is never context for another.

Reply with one JSON object and nothing else, shaped {"answers": {<question id>: <answer>}}, with \
exactly one answer for every question id and no other keys. The answer for each question type:"""
_PROMPT_TAIL = """\
Probabilities cover every option or level and sum to 1. Confidence says how well the state lets \
the question be answered at all (0 = no basis, 1 = unambiguous)."""
#: The types the library asks over a chat endpoint, each with its line (``qtypes``' llm hooks).
_PROMPTED = tuple(t.name for t in registry.registered() if t.llm is not None)


def _prompt(names: Sequence[str]) -> str:
    lines = [llm.prompt for name in names if (llm := registry.of(name).llm) is not None]
    return "\n".join([_PROMPT_HEAD, *lines, _PROMPT_TAIL])


SYSTEM_PROMPT = _prompt(_PROMPTED)


def system_prompt(questions: Mapping[str, Question]) -> str:
    """:data:`SYSTEM_PROMPT`, with the line of any other registered type the set asks."""
    more = sorted({q.type for q in questions.values()} - set(_PROMPTED))
    return _prompt([*_PROMPTED, *more]) if more else SYSTEM_PROMPT


def _ids(questions: Mapping[str, Question]) -> dict[str, str]:
    """Caller key -> the opaque id the model sees, in ASCII key order."""
    return {key: f"q{i}" for i, key in enumerate(sorted(questions), start=1)}


def _llm(q: Question) -> registry.LlmHooks:
    qtype = registry.of_question(q)
    # The llm style refuses a type without llm hooks before anything is built (llm.decide).
    assert qtype is not None and qtype.llm is not None
    return qtype.llm


def _question_for_model(q: Question) -> dict[str, Any]:
    return _llm(q).question(q, question_to_wire(q))


def _answer_schema(q: Question) -> dict[str, Any]:
    return _llm(q).schema(q)


def response_schema(questions: Mapping[str, Question]) -> dict[str, Any]:
    """The strict ``response_format`` for a question set, keyed by the opaque ids."""
    ids = _ids(questions)
    answers = closed_schema({ids[k]: _answer_schema(questions[k]) for k in sorted(questions)})
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "answers",
            "strict": True,
            "schema": closed_schema({"answers": answers}),
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
        {"role": "system", "content": system_prompt(questions)},
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
            _llm(q).reply(q, answer)
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
