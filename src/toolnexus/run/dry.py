"""A dry run (``toolnexus batch --dry-run``, and :func:`estimate` from a script): what a run
would send and spend, sending nothing (issue 23).

Every input is read and selected exactly as the run selects it (``--resume``, ``--shard``,
duplicate ids), each state is checked, the decision cache is looked up with the classifier's own
keys (a cached answer is not sent), and each request's body is built as the systemone style
builds it. The input tokens are the scheduler's central estimate of that body
(``scheduler.tokens``), shown beside its upper bound (what a spend cap reserves for it: issue 32
item 4), the output tokens :func:`~toolnexus.scheduler.budget.estimate_output_tokens`
of the question set, and the cost the ``--price`` given (none is built in). Nothing is written.

The question set is the same in every body, so its tally is counted once and each state's once
(``scheduler.tokens.PrefixTally``): the same count as the whole body's, at a fraction of the cost
(100,000 states in a few seconds; ``tests/run/test_batch_dry.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import Any

from ..core import (
    ClassifierError,
    Question,
    RunError,
    canonical_json,
    check_state,
    questions_to_wire,
)
from ..scheduler import PrefixTally, Price, TokenEstimate, estimate_output_tokens, estimate_tokens
from .codecs import iter_inputs
from .config import RunConfig
from .items import InputItem
from .safety import prior_of
from .select import select
from .summary import RunSummary

__all__ = ["DryRun", "check_dry", "describe", "estimate", "estimate_checked", "estimate_items"]


@dataclass
class DryRun:
    """What a run would do. ``requests`` is exact for what is known before sending (one per
    state to send: pack 1); the tokens are central estimates; ``cost`` is None without a
    price."""

    states: int = 0
    to_send: int = 0
    requests: int = 0
    cached: int = 0
    #: states the run would write as error records without sending (bad input, duplicate id)
    not_sendable: int = 0
    skipped: int = 0
    other_shards: int = 0
    pack: int = 1
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal | None = None
    #: the largest single request's upper-bound input tokens: what a budget reserves for it
    #: (a cap under it, with the output, admits nothing)
    largest_request: int = 0
    #: that request against the wire's limits (upper bounds, as the packer judges; issue 34):
    #: the whole body, its state plus the longest question, and the limit it passes, if any
    largest_request_upper: int = 0
    largest_state_and_question_upper: int = 0
    over_limit: str | None = None
    #: the sum of the requests' upper bounds (the central sum is ``input_tokens``)
    input_tokens_upper: int = 0

    def add(self, one: TokenEstimate, output_tokens: int) -> bool:
        """Count one request of estimate ``one`` and ``output_tokens``; whether it is the
        largest so far (by its upper bound)."""
        self.requests += 1
        self.input_tokens += one.central
        self.input_tokens_upper += one.upper
        self.output_tokens += output_tokens
        if one.upper > self.largest_request:
            self.largest_request = one.upper
            return True
        return False

    @property
    def output_per_request(self) -> int:
        return self.output_tokens // self.requests if self.requests else 0

    def to_object(self) -> dict[str, Any]:
        out = asdict(self)
        out["cost"] = None if self.cost is None else float(self.cost)
        return {"dry_run": True, **out}

    def text(self) -> str:
        cost = "no --price given" if self.cost is None else f"${self.cost:.6f}"
        lines = [
            f"states to send: {self.to_send} (of {self.states} read; {self.cached} cached, "
            f"{self.not_sendable} not sendable, {self.skipped} skipped, "
            f"{self.other_shards} in other shards)",
            f"requests: {self.requests} (pack {self.pack}; retries not included)",
            f"estimated tokens: {self.input_tokens} in (upper bound {self.input_tokens_upper}) "
            f"/ {self.output_tokens} out",
            f"estimated cost: {cost}",
        ]
        if self.requests:
            from ..scheduler import CONTEXT_TOKENS, STATE_AND_QUESTION_TOKENS

            verdict = (
                "within the limits"
                if self.over_limit is None
                else (f"OVER: {self.over_limit}; the server will refuse it")
            )
            lines.append(
                f"largest request: about {self.largest_request_upper} tokens of "
                f"{CONTEXT_TOKENS}, state plus longest question about "
                f"{self.largest_state_and_question_upper} of {STATE_AND_QUESTION_TOKENS} "
                f"(upper bounds): {verdict}"
            )
        return "\n".join(lines)

    def render(self, fmt: str) -> str:
        if fmt == "json":
            return json.dumps(self.to_object(), sort_keys=True)
        return self.text()


def estimate(
    config: RunConfig, *, prepare: Callable[[RunConfig], RunConfig] | None = None
) -> DryRun:
    """What :func:`~toolnexus.run.run_batch` would send for ``config``, and its estimated tokens
    and cost (``config.price``); sends nothing, writes nothing. Refused, as the run is, for an
    output it would refuse, and for a classifier that is not System One's. ``prepare``, as
    ``run_batch``'s, completes the config once it is checked."""
    from .safety import check_config, check_existing

    check_dry(config.classifier)
    # The refusals the real run would give before sending (issue 31 item 18): an --output that
    # already holds records without --resume, --retry-errors with nothing to retry, ...
    check_config(config)
    check_existing(config)
    if prepare is not None:
        config = prepare(config)
        check_dry(config.classifier)
    return estimate_checked(config)


def estimate_checked(config: RunConfig) -> DryRun:
    """:func:`estimate` of a config already checked (``run_batch`` sizes its budget on it after
    its own checks: each runs once per run)."""
    from .ids import question_set_sha256

    sha = question_set_sha256(config.questions)
    summary = RunSummary()
    prior = prior_of(config, sha)
    items = select(iter_inputs(config.inputs, config.spec), config, prior, summary, set())
    result = estimate_items(
        items, config.questions, config.classifier, config.pack, cache=config.cache,
        price=config.price,
    )  # fmt: skip
    result.states += summary.skipped + summary.not_in_output + summary.other_shards
    result.skipped = summary.skipped + summary.not_in_output
    result.other_shards = summary.other_shards
    return result


def check_dry(classifier: Mapping[str, Any]) -> None:
    """A dry run estimates System One requests: refused for a replay or the llm style
    (``classifier``: the run's ``create_classifier`` keywords)."""
    if "decisions" in classifier or classifier.get("style", "systemone") != "systemone":
        raise RunError("--dry-run estimates System One requests; drop --replay or --llm-model")


def estimate_items(
    items: Iterable[InputItem],
    questions: Mapping[str, Any],
    classifier: Mapping[str, Any],
    pack: Any,
    *,
    cache: Any = None,
    price: Price | None = None,
) -> DryRun:
    """What sending ``items`` (read and selected by the caller: a run, ``filter``) would cost,
    packed as ``pack``, with the classifier ``classifier`` (``create_classifier``'s keywords)
    builds; sends nothing."""
    from ..classifier import create_classifier

    check_dry(classifier)
    options = dict(classifier)
    if cache is not None:
        options["cache"] = cache
    built = create_classifier(**options)
    # The classifier's own systemone style: its bodies and cache keys, nothing re-derived.
    style = built.pipeline.systemone
    assert style is not None  # a replay and the llm style are refused above
    qs: dict[str, Question] = built.prepare(questions)
    result = DryRun(pack=pack)
    output_per_request = estimate_output_tokens(questions_to_wire(qs))
    pieces = PrefixTally()
    packed: list[Any] = []
    wire = questions_to_wire(qs)
    largest: tuple[bytes, Any, Any, list[tuple[int, int]]] | None = None
    for item in items:
        result.states += 1
        if item.error is not None:
            result.not_sendable += 1
            continue
        try:
            check_state(item.state)
            request = style.plan(item.state, qs)
        except ClassifierError:
            result.not_sendable += 1
            continue
        if request is None:
            result.cached += 1
            continue
        result.to_send += 1
        if result.pack != 1:
            packed.append((item.state, request.lifted))
            continue
        sizes = [size for a in request.lifted.assets if (size := a.image.size) is not None]
        if request.multipart:
            one = estimate_tokens(request.json, sizes)
        else:
            one = pieces.estimate(request.json, canonical_json(request.lifted.state) + b"}")
        if result.add(one, output_per_request):
            largest = (request.json, request.lifted.state, wire, sizes)
    if packed:
        largest = _estimate_packs(result, packed, qs, style.model) or largest
    if largest is not None:
        _against_limits(result, *largest)
    if price is not None:
        result.cost = price.cost(result.input_tokens, result.output_tokens)
    return result


def _against_limits(
    result: DryRun, body: bytes, state: Any, wire: Any, sizes: list[tuple[int, int]]
) -> None:
    """The largest request against the wire's limits (``batch --dry-run``, issue 34 item 4)."""
    from ..config import budget_of

    budget = budget_of(body, canonical_json(state), wire, sizes)
    result.largest_request_upper = budget.request
    result.largest_state_and_question_upper = budget.state_and_question
    result.over_limit = budget.over()


def _estimate_packs(
    result: DryRun, sendable: list[tuple[Any, Any]], qs: dict[str, Question], model: str
) -> tuple[bytes, Any, Any, list[tuple[int, int]]] | None:
    """Requests and tokens of the packed requests ``packplan.plan_packs`` makes of the states
    to send, each estimated on its own packed body, exactly as it will be sent."""
    from ..evaluate import pack_lifted, pack_questions, packed_body, plan_packs

    states = [state for state, _ in sendable]
    largest = None
    for pack in plan_packs(states, qs, result.pack, model=model):
        wire = questions_to_wire(pack_questions(qs, len(pack)))
        merged = pack_lifted([sendable[i][1] for i in pack])
        sizes = [size for a in merged.assets if (size := a.image.size) is not None]
        body = packed_body(model, merged, wire)
        one = estimate_tokens(body, sizes)
        if result.add(one, estimate_output_tokens(wire)):
            largest = (body, merged.state, wire, sizes)
    return largest


def describe(result: DryRun) -> str:
    """The one line a refused cap quotes: the estimate it was held against."""
    cost = "" if result.cost is None else f", about ${result.cost:.6f}"
    return (
        f"{result.requests} requests, about {result.input_tokens} input and "
        f"{result.output_tokens} output tokens{cost}"
    )
