"""Several states in one request (issue 20): the packed state, the derived questions, and the
split of one response into one ``Decision`` per state. Pure: no I/O, no HTTP.

The shape, and why:

- The packed **state** is ``{"states": [s0, s1, ...]}``: the states in order, each exactly as
  it would be sent alone. An object with one named array (not a bare array) gives every
  instruction a name to address a state by: ``states[3]``. ``{"rows": [...]}`` (Daft) would do
  as well; ``states`` is this library's word for what is judged.
- Every question of the set is asked once per state under the **derived key** ``"<k>:<key>"``
  (``k`` the state's position). Keys never reach the model (seed 001), so the key only has to be
  unique and reversible: the position is an integer and the caller's key follows the first
  ``:``, so any caller key, a ``:`` in it included, round-trips.
- A derived question's **instructions** address its state by position: a string gets the
  prefix ``"For states[k] only: "``; structured instructions (content parts) are sent as the
  two-item list ``["For states[k] only:", <the instructions as written>]``. Both forms can be
  read back exactly (:func:`unpack_questions_wire`), which is how ``toolnexus serve
  --synthetic`` answers a packed question exactly as it answers the question alone. The
  **criteria are the caller's, unchanged**, so every
  ``check-criteria`` finding still holds for the packed request.
- Seed 001: "Questions are independent. One answer is never context for another. A backend that
  cannot guarantee that reports calibrated=False". In a pack one state is context for another's
  answers, so every packed decision reports ``calibrated=False``.

Usage is split by :func:`split_usage`: input tokens in proportion to each state's share of the
request (its own canonical bytes plus an equal share of the questions), output tokens equally
(every state is asked the same questions), both by largest remainder so the parts sum exactly
to the response's totals; a reported cost is split like the input tokens, in integer
nano-units, so no float sum is ever involved.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from ..core import (
    Asset,
    ClassifierUsage,
    Decision,
    DecisionError,
    LiftedState,
    Question,
    answers_decoder,
    canonical_json,
    json_kind,
    parse_decision,
    questions_to_wire,
)
from ..core import observe as probe

__all__ = [
    "PACKED_CACHE_KIND",
    "PACK_CAP",
    "STATES_KEY",
    "derived_key",
    "largest_remainder",
    "pack_instructions",
    "pack_lifted",
    "pack_questions",
    "pack_state",
    "split_derived_key",
    "split_usage",
    "state_weights",
    "unpack_decisions",
    "unpack_instructions",
    "unpack_questions_wire",
]

#: The member of the packed state that holds the states, in order.
STATES_KEY = "states"
#: ``--pack auto`` never packs more states than this: pg-jev measured accuracy flat for packs of
#: 1-20 rows and falling at 40-80 (shared/reference/system-one-wire.md).
PACK_CAP = 20
#: The cache ``kind`` of a packed answer: distinct from seed 004's ``"decision"``, so a packed
#: answer is never served to an unpacked request, or the reverse.
PACKED_CACHE_KIND = "packed-decision"

_NANO = Decimal(10) ** 9
_NANO_INT = 10**9


def derived_key(index: int, key: str) -> str:
    """The key under which the question ``key`` is asked about the state at ``index``."""
    return f"{index}:{key}"


def split_derived_key(derived: str) -> tuple[int, str] | None:
    """``(index, key)`` of a derived key, or None when ``derived`` is not one."""
    head, sep, key = derived.partition(":")
    if not sep or not head.isascii() or not head.isdigit() or (len(head) > 1 and head[0] == "0"):
        return None
    return int(head), key


def _prefix(index: int) -> str:
    return f"For {STATES_KEY}[{index}] only: "


def pack_instructions(index: int, instructions: Any) -> Any:
    """The caller's instructions, addressed to ``states[index]``."""
    prefix = _prefix(index)
    if isinstance(instructions, str):
        return prefix + instructions
    return [prefix.rstrip(), instructions]


def unpack_instructions(index: int, instructions: Any) -> tuple[bool, Any]:
    """``(True, the caller's instructions)`` when ``instructions`` is what
    :func:`pack_instructions` made for ``index``, else ``(False, None)``."""
    prefix = _prefix(index)
    if isinstance(instructions, str):
        if instructions.startswith(prefix):
            return True, instructions[len(prefix) :]
        return False, None
    if (
        isinstance(instructions, list | tuple)
        and len(instructions) == 2
        and instructions[0] == prefix.rstrip()
    ):
        return True, instructions[1]
    return False, None


def unpack_questions_wire(
    questions: Mapping[str, Any], count: int
) -> list[tuple[str, int, Mapping[str, Any]]] | None:
    """The wire questions of a packed request as ``(derived key, state index, the question as
    asked alone)``, or None when ``questions`` is not a pack of ``count`` states (a key that is
    not derived, an index past the pack, instructions not addressed to their state)."""
    out: list[tuple[str, int, Mapping[str, Any]]] = []
    for derived, question in questions.items():
        where = split_derived_key(str(derived))
        if where is None or where[0] >= count or not isinstance(question, Mapping):
            return None
        ok, alone = unpack_instructions(where[0], question.get("instructions"))
        if not ok:
            return None
        out.append((str(derived), where[0], {**question, "instructions": alone}))
    return out


def pack_questions(questions: Mapping[str, Question], count: int) -> dict[str, Question]:
    """Every question of the set, once per state, under derived keys, in state order."""
    if probe.observer is not None:
        probe.observer("pack.questions", count)
    if count < 1:
        raise ValueError("a pack holds at least one state")
    packed: dict[str, Question] = {}
    for index in range(count):
        for key, question in questions.items():
            packed[derived_key(index, key)] = dataclasses.replace(
                question, instructions=pack_instructions(index, question.instructions)
            )
    return packed


def pack_state(states: Sequence[Any]) -> dict[str, list[Any]]:
    """The packed state: the states in order, each as it would be sent alone."""
    return {STATES_KEY: list(states)}


def _renamed(node: Any, renames: Mapping[str, str]) -> Any:
    """``node`` with every placeholder of ``renames`` replaced inside its strings."""
    if isinstance(node, str):
        for old, new in renames.items():
            node = node.replace(old, new)
        return node
    if isinstance(node, Mapping):
        return {k: _renamed(v, renames) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return [_renamed(v, renames) for v in node]
    return node


#: A lifted state's parts, read in C over a whole pack (no Python step per state).
_ASSETS, _STATE = operator.attrgetter("assets"), operator.attrgetter("state")


def pack_lifted(states: Sequence[LiftedState]) -> LiftedState:
    """The packed state of states whose images are already lifted, with their assets merged.

    Images keep their own identity: when two states use one placeholder for different bytes
    (both say ``<before>``), the later state's image is renamed ``<before@k>`` (``k`` its
    position; ``@`` is never part of a caller's alias, so the new name cannot collide) in that
    state's text. The same bytes under the same placeholder are sent once. A question's criteria
    that mention a placeholder keep meaning the first state's image. Parts are numbered again in
    order of first appearance (``asset-0``, ``asset-1``, ...), as for one state.
    """
    if not any(map(_ASSETS, states)):
        # Text and objects without images (a batch's common pack): nothing to merge or rename.
        return LiftedState(pack_state(list(map(_STATE, states))))
    taken: dict[str, str] = {}  # placeholder -> sha256 of the image it stands for
    merged: list[Asset] = []
    packed: list[Any] = []
    for index, lifted in enumerate(states):
        renames: dict[str, str] = {}
        for asset in lifted.assets:
            placeholder, sha = asset.placeholder, asset.image.sha256
            if taken.get(placeholder, sha) != sha:
                stem = placeholder[1:-1] if placeholder.startswith("<") else placeholder
                placeholder = f"<{stem}@{index}>"
                renames[asset.placeholder] = placeholder
            if placeholder in taken:
                continue
            taken[placeholder] = sha
            merged.append(Asset(placeholder, asset.image, f"asset-{len(merged)}"))
        packed.append(_renamed(lifted.state, renames) if renames else lifted.state)
    return LiftedState(pack_state(packed), tuple(merged))


def largest_remainder(total: int, weights: Sequence[int]) -> list[int]:
    """``total`` split in proportion to ``weights`` into integers that sum to ``total``.

    Each part gets its floor; the units left go to the largest remainders, ties to the earlier
    position, so the split is deterministic. All-zero weights split equally.
    """
    if not weights:
        return []
    if total < 0:
        raise ValueError("cannot split a negative total")
    # ``min`` and ``sum`` in C, not a generator per weight: this runs twice per packed reply,
    # over every state (issue 32 pack CPU).
    if min(weights) < 0:
        raise ValueError("weights must not be negative")
    ws = list(weights) if sum(weights) > 0 else [1] * len(weights)
    whole = sum(ws)
    parts = [total * w // whole for w in ws]
    rest = total - sum(parts)
    if rest:
        # Largest remainder first, ties to the earlier position: a stable sort in reverse
        # keeps equal remainders in position order.
        remainders = [total * w % whole for w in ws]
        for i in sorted(range(len(ws)), key=remainders.__getitem__, reverse=True)[:rest]:
            parts[i] += 1
    return parts


def state_weights(states: Sequence[Any], questions: Mapping[str, Question]) -> list[int]:
    """Each state's share of a packed request's input: its own canonical bytes plus the bytes
    of the questions asked about it (the same for every state)."""
    wire = questions_to_wire(questions)
    if probe.observer is not None:
        probe.observer("pack.weigh", wire)
    asked = len(canonical_json(wire))
    return [_canonical_size(s) + asked for s in states]


def _canonical_size(state: Any) -> int:
    """``len(canonical_json(state))``. A string of printable ASCII without a quote or a
    backslash is written as itself between two quotes (nothing in it is escaped), so its size
    is known without encoding it: a batch's common state, once per state (issue 32 pack CPU)."""
    plain = type(state) is str and state.isascii() and state.isprintable()
    if plain and '"' not in state and "\\" not in state:
        return len(state) + 2
    if probe.observer is not None:
        probe.observer("pack.weigh", state)
    return len(canonical_json(state))


def split_usage(usage: ClassifierUsage, weights: Sequence[int]) -> list[ClassifierUsage]:
    """One response's usage as one part per state; the parts sum exactly to ``usage``."""
    n = len(weights)
    inputs = largest_remainder(usage.input_tokens, weights)
    outputs = largest_remainder(usage.output_tokens, [1] * n)
    if usage.cost is None:
        costs: list[float | None] = [None] * n
    else:
        nanos = int((Decimal(repr(usage.cost)) * _NANO).to_integral_value())
        # ``int / int`` is correctly rounded in Python, as ``float(Decimal(p) / 10**9)`` is
        # (the quotient is exact in 28 digits), so each part is the same double without a
        # Decimal per state; a negative cost negates each part (-0.0 for an empty one, as before).
        sign = -1.0 if nanos < 0 else 1.0
        costs = [sign * (p / _NANO_INT) for p in largest_remainder(abs(nanos), weights)]
    # Equal parts are one value: usages are frozen, and states of similar size get equal
    # shares, so a pack holds a few usages, not one per state kept for the collector to walk
    # until the run ends (issue 32 pack CPU). Within one split every cost has the same sign,
    # so 0.0 and -0.0 never meet under one key.
    made: dict[tuple[int, int, float | None], ClassifierUsage] = {}
    parts: list[ClassifierUsage] = []
    reported = usage.reported
    for key in zip(inputs, outputs, costs, strict=True):
        part = made.get(key)
        if part is None:
            part = made[key] = ClassifierUsage(*key, reported=reported)
        parts.append(part)
    return parts


#: The derived keys of the last few (question set, pack size): every reply of a batch is read
#: against the same ones (kept by the set's identity, held so its id cannot be reused).
_ASKED: dict[tuple[int, int], tuple[Mapping[str, Question], dict[str, tuple[int, str]]]] = {}


def _asked(questions: Mapping[str, Question], count: int) -> dict[str, tuple[int, str]]:
    """Every derived key a pack of ``count`` asks, with its ``(index, key)``: exactly the keys
    :func:`split_derived_key` reads back to an index under ``count`` and a key of
    ``questions`` (its canonical spelling is the only one it accepts), looked up instead of
    parsed for each answer of each reply."""
    hit = _ASKED.get((id(questions), count))
    if hit is None or hit[0] is not questions:
        if len(_ASKED) >= 8:
            _ASKED.clear()
        table = {derived_key(i, k): (i, k) for i in range(count) for k in questions}
        hit = (questions, table)
        _ASKED[(id(questions), count)] = hit
    return hit[1]


def unpack_decisions(
    body: Any,
    questions: Mapping[str, Question],
    weights: Sequence[int],
) -> list[Decision | DecisionError]:
    """A packed response as one result per state, in state order: the decision exactly as if
    the state had been asked alone (the caller's keys, typed answers, ``near_uniform`` derived
    on decode), but ``calibrated=False``, its share of the usage, ``packed`` the pack's size and
    ``position`` its index in ``states``; or the ``DecisionError`` that state's answers gave.
    One state's bad answers never fail its neighbours.

    A response that is not a packed decision at all (no model, no answers object, a bad
    usage) raises ``DecisionError``: the whole request failed.
    """
    count = len(weights)
    if not isinstance(body, Mapping):
        raise DecisionError(f"classifier: response must be an object, got {json_kind(body)}")
    answers = body.get("answers")
    if not isinstance(answers, Mapping):
        raise DecisionError(
            f"classifier: response answers must be an object, got {json_kind(answers)}"
        )
    # The whole body is checked once (model, usage) through the one decoder, without answers.
    head = parse_decision({**body, "answers": {}}, {})
    per_state: list[dict[str, Any]] = [{} for _ in range(count)]
    asked = _asked(questions, count)
    for derived, answer in answers.items():
        where = asked.get(derived if type(derived) is str else str(derived))
        if where is None:
            # Not asked of any state in this pack: the unpacked decoder has no use for it either.
            continue
        per_state[where[0]][where[1]] = answer
    usages = split_usage(head.usage, weights)
    decode = answers_decoder(questions)  # each state's answers, as decode_answers reads them
    results: list[Decision | DecisionError] = []
    for index in range(count):
        # Only asked keys were kept: as many as the questions means none is missing.
        if len(per_state[index]) == len(questions):
            missing: list[str] = []
        else:
            missing = [k for k in questions if k not in per_state[index]]
        if missing:
            results.append(
                DecisionError(
                    f"classifier: the packed response has no answer {missing[0]!r} for "
                    f"{STATES_KEY}[{index}]",
                    key=missing[0],
                )
            )
            continue
        try:
            answers_of = decode(per_state[index])
        except DecisionError as e:
            results.append(
                DecisionError(f"{e.detail} (in {STATES_KEY}[{index}] of a packed response)", e.key)
            )
            continue
        # One Decision per state, built with every packed fact at once: this runs per state on
        # a batch's hot path, where a second Decision (a ``dataclasses.replace``) cost about a
        # sixth of a packed run's client CPU (issue 32).
        results.append(
            Decision(
                model=head.model,
                answers=answers_of,
                usage=usages[index],
                calibrated=False,
                packed=count,
                position=index,
            )
        )
    return results
