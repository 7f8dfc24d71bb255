"""Token budgets against the wire's limits (TN030 over, TN031 near), and a sample state's own
traps (TN041), for ``check-criteria``; and the one-line run-time warning ``eval`` and ``batch``
print before sending a request that will pass a limit (issue 34 item 4).

The estimate is ``scheduler.tokens.estimate_tokens``'s upper bound, the one the packer sizes
packs with, so the lint, the dry run and the packer agree. That package pulls asyncio (about 40
ms, most of ``check-criteria``'s start-up budget), so a question set too small to come near a
limit does not import it: :data:`GATE_BYTES` is that size, and a test holds it against the
public ``estimate_tokens`` (if the estimator's internals change, the test says so).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..config import Budget, budget_of
from ..core import questions_to_wire
from ..questionfile import Finding

if TYPE_CHECKING:
    from ..core import Located, Question

__all__ = [
    "GATE_BYTES",
    "NEAR",
    "budget_findings",
    "over_limit_warning",
    "request_budget",
    "source_bound",
    "state_findings",
]

#: A share of a limit at or above which TN031 warns: the state must fit in what is left.
NEAR = 0.8
#: Canonical question-set bytes under which no estimate can reach NEAR of the smaller limit
#: (checked by tests/lint/test_check_rules.py against the public estimator, worst-case text).
GATE_BYTES = 8_000

# A bound on the estimator's upper bound (``scheduler.tokens``) of an ASCII body, in a few
# passes in C instead of its pre-split into pieces (most of the rules' cost on a large set):
# a piece never spans two byte classes (letters, digits, whitespace, the rest) but for one
# leading space, and a digit run is cut every 3 digits, so ``pieces <= 1 + class changes +
# digits // 3``; a piece of b bytes counts ``ceil(b / 3) <= (b + 2) / 3`` units, so
# ``units <= (bytes + 2 * pieces) / 3``. The constants are the estimator's (a test holds them,
# and the bound against ``estimate_tokens``); repeated here so a set far under the limits never
# imports the scheduler (asyncio).
_OVERHEAD, _PER_PIECE, _MARGIN, _BYTES_OVERHEAD = 189.0, 2.03, 1.15, 218
#: The smaller of the wire's two limits (``scheduler.tokens.STATE_AND_QUESTION_TOKENS``).
_SMALLER_LIMIT = 32_000
# A bound on the canonical bytes of a question set from its YAML source, so a small file is
# cleared without building and encoding its wire form (most of what the budget cost per file).
# Without an alias (``*name``: the only way one node is written once and sent twice) every sent
# byte comes from the source: the worst expansions are a flow key with no value (``{a,b}``: 2
# bytes become ``"a":null,``, 4.5x), an escape (``"\0"``: 2 bytes become ``\u0000``, 3x), and
# a float (``1.e+15`` becomes ``1000000000000000.0``, 3x). A question's wire form may add what
# its source does not write: a noul's ``criteria: {}`` sends both sides (22 bytes).
# tests/lint/test_check_rules_shortcuts.py holds the bound against the wire bytes of those cases.
_PER_SOURCE_BYTE = 6
_PER_QUESTION = 64
_SPACES = b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "
_CLASSES = bytes(
    b"a"[0] if chr(c).isascii() and chr(c).isalpha()
    else b"0"[0] if 48 <= c <= 57
    else b" "[0] if c in _SPACES
    else b"."[0]
    for c in range(256)
)  # fmt: skip


def upper_at_most(body: bytes) -> int | None:
    """A number never under ``estimate_tokens(body).upper`` (no images) for an ASCII
    ``body``; None for any other (the estimator cuts those by Unicode classes)."""
    if not body.isascii():
        return None
    classes = body.translate(_CLASSES)
    # Class changes: the nonzero bytes of the classes XOR themselves shifted by one (a byte
    # search for each of the 12 pairs was slower than the pre-split it replaces).
    shifted = int.from_bytes(classes, "big") ^ int.from_bytes(classes[1:] + classes[-1:], "big")
    changes = len(classes) - shifted.to_bytes(len(classes), "big").count(0)
    pieces = 1 + changes + classes.count(b"0") // 3
    units = (len(body) + 2 * pieces) / 3
    by_pieces = math.ceil(_MARGIN * (_OVERHEAD + _PER_PIECE * units)) + 1
    return max(_BYTES_OVERHEAD + len(body), by_pieces)


def source_bound(text: str, questions: int) -> int | None:
    """A number never under the canonical wire bytes of the ``questions`` question set read
    from the YAML ``text``, or None when ``text`` may hold an alias."""
    if "*" in text:
        return None
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    return _PER_SOURCE_BYTE * size + _PER_QUESTION * questions


def request_budget(
    model: str, questions: Mapping[str, Question], state: Any = None, *, with_state: bool = True
) -> Budget:
    """The budget of the request ``model`` + ``questions`` (+ ``state``, images lifted into
    assets as the classifier sends them)."""
    from ..core import canonical_json

    wire = questions_to_wire(questions)
    body: dict[str, Any] = {"model": model, "questions": wire}
    sizes: list[tuple[int, int]] = []
    state_bytes = b""
    if with_state:
        from ..core import ImageLimits, lift_with_questions

        lifted = lift_with_questions(state, questions)
        # An image the classifier refuses is never sent: that refusal, not a budget, is the news.
        ImageLimits().check_request(lifted.assets)
        body["state"] = lifted.state
        if lifted.assets:
            body["assets"] = lifted.wire_assets()
        sizes = [size for a in lifted.assets if (size := a.image.size) is not None]
        state_bytes = canonical_json(lifted.state)
    return budget_of(canonical_json(body), state_bytes, wire, sizes)


def over_limit_warning(
    model: str, questions: Mapping[str, Question], state: Any = None, *, with_state: bool = True
) -> str | None:
    """The one warning line ``eval`` and ``batch`` print before sending a request that will
    pass the wire's token limits (issue 34 item 4), or None. Without ``state`` (``batch``,
    before reading its input) the question set alone is judged: over a limit, every request
    of the run is."""
    from ..core import ClassifierError

    try:
        over = request_budget(model, questions, state, with_state=with_state).over()
    except ClassifierError:
        return None  # a state the classifier refuses: it says why, before anything is sent
    if over is None:
        return None
    what = "the request" if with_state else "every request (the question set alone)"
    return (
        f"toolnexus: warning: {what} will pass the wire's token limits ({over}); the server "
        "will refuse it: shorten the state or the instructions, or split the question set "
        "(check-criteria --state FILE shows the budget)\n"
    )


def budget_findings(
    path: str,
    doc: Located,
    model: str,
    questions: Mapping[str, Question],
    state: tuple[str, Any] | None = None,
    source: str | None = None,
) -> list[Finding]:
    """TN030/TN031 for the question set (its own share), or with ``state`` = (name, value) for
    the whole request. ``source`` is the YAML text ``doc`` was read from, when there is one."""
    if not questions:
        return []
    if state is None:
        bound = None if source is None else source_bound(source, len(questions))
        if bound is not None and bound <= GATE_BYTES:
            return []
        wire = questions_to_wire(questions)
        # canonical_json's bytes (the same encoder settings, but NaN, which it refuses and
        # request_budget reports), without importing canonical (hashlib) on every commit.
        text = json.dumps(wire, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        wire_bytes = text.encode("utf-8")
        if len(wire_bytes) <= GATE_BYTES:
            return []
        # The request the set alone makes; the longest question's bytes are part of it, so
        # its estimate is under this bound too. Under NEAR of the smaller limit: no finding.
        head = '{"model":' + json.dumps(model, ensure_ascii=False) + ',"questions":'
        body = head.encode("utf-8") + wire_bytes + b"}"
        bound = upper_at_most(body) if b"NaN" not in body and b"Infinity" not in body else None
        if bound is not None and bound < NEAR * _SMALLER_LIMIT:
            return []
    from ..scheduler import CONTEXT_TOKENS, STATE_AND_QUESTION_TOKENS

    budget = request_budget(
        model, questions, None if state is None else state[1], with_state=state is not None
    )
    what = "the question set alone" if state is None else f"with state {state[0]}"
    out: list[Finding] = []
    checks = (
        (budget.request, CONTEXT_TOKENS, ("questions",), "the request"),
        (
            budget.state_and_question,
            STATE_AND_QUESTION_TOKENS,
            ("questions", budget.longest),
            "the state plus the longest question" if state else "the longest question",
        ),
    )
    for tokens, limit, node, words in checks:
        at = doc.key_at(node)
        if tokens > limit:
            out.append(
                Finding(
                    path,
                    *at,
                    "TN030",
                    f"{words} ({what}) is about {tokens:,} tokens, over the "
                    f"wire's {limit:,}: the server refuses it; shorten or split the set",
                )
            )
        elif tokens >= NEAR * limit:
            out.append(
                Finding(
                    path,
                    *at,
                    "TN031",
                    f"{words} ({what}) is about {tokens:,} tokens, "
                    f"{tokens / limit:.0%} of the wire's {limit:,}",
                )
            )
    return out


def state_findings(name: str, text: str) -> list[Finding]:
    """TN041 for a YAML state: values YAML 1.1 reads as a boolean or number."""
    from ..core import YamlSyntaxError, read_yaml

    try:
        doc = read_yaml(text)
    except YamlSyntaxError:
        return []  # load_state reports it, with its own line
    return [Finding(name, p.line, p.col, p.code, f"state: {p.message}") for p in doc.yaml11]
