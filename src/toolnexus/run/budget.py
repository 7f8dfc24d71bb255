"""A run's spend budget from its caps (``RunConfig.max_cost`` / ``max_tokens`` /
``max_requests``, issue 23): sized, refused and noted here for ``run_batch`` and ``toolnexus
batch`` alike, which only prints the notes.

Before the first request, the dry run's estimate (``run.dry``) is held against the caps, on top
of what the output already spent when the run resumes it (the records' usage, cached ones
excluded): a cap that not even one request fits under is refused (``RunError``, exit 5) with the
estimate; a cap the whole estimate passes is said once (a ``RunNote`` to ``on_progress``), and
the run goes on until the budget stops it. :class:`ResendCounter` charges every retry to the
budget through the transport's attempt hook, since retries bill like requests.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from decimal import Decimal
from typing import TYPE_CHECKING

from ..core import EXIT_BUDGET, RunError, Surface, option
from ..scheduler import OUTPUT_MARGIN, Budget, Caps, Price, Spend
from .config import RunConfig

if TYPE_CHECKING:
    from ..core import Question
    from .dry import DryRun

__all__ = [
    "ResendCounter",
    "budget_of",
    "counting_resends",
    "output_per_request",
    "passes",
    "recorded_spend",
    "refusal",
    "require_price",
    "sized_budget",
    "unestimated_budget",
]

#: Says one note to the user (``on_progress`` for a library run, stderr for ``batch``).
Note = Callable[[str], object]


def budget_of(cfg: RunConfig, note: Note | None = None) -> Budget | None:
    """The budget a run with caps gets when its ``admission`` holds none, as ``batch`` sizes
    it (``cfg`` already checked by the run: ``check_config``, ``check_existing``): the
    cost-source note, the estimate held against the caps (refused or noted), the output's
    earlier spend counted. A classifier the dry run cannot estimate (a replay, the llm style)
    gets its output tokens per request from the question set, unrefused."""
    caps = cfg.caps
    if not caps.any or any(isinstance(member, Budget) for member in cfg.admission):
        return None
    say = note if note is not None else (lambda message: None)
    require_price(caps, cfg.price, cfg.surface)
    from .dry import check_dry, estimate_checked
    from .ids import question_set_sha256

    try:
        check_dry(cfg.classifier)
    except RunError:
        return _unestimated(cfg)
    return sized_budget(cfg, question_set_sha256(cfg.questions), estimate_checked(cfg), say)


def _unestimated(cfg: RunConfig) -> Budget:
    from .ids import question_set_sha256

    output = output_per_request(cfg.questions)
    already = recorded_spend(cfg, question_set_sha256(cfg.questions), cfg.price, output)
    return unestimated_budget(cfg.caps, cfg.price, cfg.questions, cfg.surface, already)


def output_per_request(questions: Mapping[str, Question]) -> int:
    """The output tokens one request of ``questions`` (prepared) is reserved."""
    from ..core import questions_to_wire
    from ..scheduler import estimate_output_tokens

    return estimate_output_tokens(questions_to_wire(dict(questions)))


def unestimated_budget(
    caps: Caps,
    price: Price | None,
    questions: Mapping[str, Question],
    surface: Surface,
    already: Spend | None = None,
) -> Budget:
    """The budget of a run with no estimate up front (a replay, the llm style; ``filter``'s
    stream, whose end is not known; an MCP session): nothing refused before the first request,
    the cap stops the run. Each request reserves the output tokens of ``questions``."""
    output = output_per_request(questions)
    return Budget(caps, price, output_tokens=output, already=already or Spend(), surface=surface)


def counting_resends(budget: Budget | None) -> AbstractContextManager[object]:
    """Every resend charged to ``budget``'s request count (a :class:`ResendCounter` on the
    transport's attempt hook, inherited by every task started inside); nothing when None."""
    import contextlib

    if budget is None:
        return contextlib.nullcontext()
    from ..transport import observing

    return observing(ResendCounter(budget))


def sized_budget(cfg: RunConfig, sha: str, estimate: DryRun, note: Note) -> Budget:
    """The budget of a run whose dry run is ``estimate`` (``sha``: its question set's digest):
    refused with :class:`RunError` (exit 5) when a cap admits not one request, noted when the
    whole estimate passes a cap."""
    from .dry import describe

    caps, price = cfg.caps, cfg.price
    unreported = estimate.largest_request + estimate.output_per_request
    already = recorded_spend(cfg, sha, price, unreported)
    why = refusal(caps, already, estimate, price, cfg.surface)
    if why is not None:
        raise RunError(why, EXIT_BUDGET)
    passed = passes(caps, already, estimate, cfg.surface)
    if passed is not None:
        note(
            f"the estimate ({describe(estimate)}) passes {passed}: the run stops scheduling "
            "at the cap"
        )
    return Budget(
        caps,
        price,
        output_tokens=estimate.output_per_request,
        already=already,
        surface=cfg.surface,
    )


def require_price(caps: Caps, price: Price | None, surface: Surface = "batch") -> None:
    """``--max-cost`` without ``--price`` (or ``$TOOLNEXUS_PRICE``) refused before anything is
    sent: the library's one check (``scheduler.budget.check_price``) as the run's
    :class:`RunError`, exit 2 (``run_batch``, ``batch``, ``filter`` and ``mcp`` call it)."""
    from ..core import ConfigError
    from ..scheduler import check_price

    try:
        check_price(caps.max_cost, price, surface)
    except ConfigError as e:
        raise RunError(e.detail) from None


def refusal(
    caps: Caps,
    already: Spend,
    estimate: DryRun,
    price: Price | None,
    surface: Surface = "batch",
) -> str | None:
    """Why the run is refused before its first request, or None: a cap under what is already
    spent plus the largest single request's estimate admits nothing at all. The cap is named
    as ``surface`` spells it (issue 43 item 7)."""
    if not estimate.requests:
        return None
    from .dry import describe

    # What the budget reserves for the largest request: its upper bound, and the output with
    # the budget's margin (scheduler.budget).
    output = math.ceil(OUTPUT_MARGIN * estimate.output_per_request)
    one_tokens = estimate.largest_request + output
    one_cost = price.cost(estimate.largest_request, output) if price else Decimal(0)
    why = None
    if caps.max_requests is not None and already.requests + 1 > caps.max_requests:
        why = f"{_cap(caps, 'max_requests', surface)} ({already.requests} already sent)"
    elif caps.max_tokens is not None and already.tokens + one_tokens > caps.max_tokens:
        why = f"{_cap(caps, 'max_tokens', surface)} ({already.tokens} already spent)"
    elif caps.max_cost is not None and already.cost + one_cost > caps.max_cost:
        why = f"{_cap(caps, 'max_cost', surface)} (${already.cost:.6f} already spent)"
    if why is None:
        return None
    dry = "toolnexus.run.estimate" if surface == "library" else "--dry-run"
    return (
        f"{why} admits not one request of this run; its estimate: {describe(estimate)}. "
        f"Raise the cap ({dry} shows the estimate)"
    )


def _cap(caps: Caps, name: str, surface: Surface) -> str:
    value = getattr(caps, name)
    return option(name, surface, value if surface == "library" else str(value))


def passes(caps: Caps, already: Spend, estimate: DryRun, surface: Surface = "batch") -> str | None:
    """The cap the whole estimate passes (``--max-requests N``, ``max_requests=N`` to a
    script), or None."""
    if not estimate.requests:
        return None  # nothing left to send passes no cap (issue 31 item 11)
    if caps.max_requests is not None and already.requests + estimate.requests > caps.max_requests:
        return _cap(caps, "max_requests", surface)
    tokens = estimate.input_tokens + estimate.output_tokens
    if caps.max_tokens is not None and already.tokens + tokens > caps.max_tokens:
        return _cap(caps, "max_tokens", surface)
    cost = estimate.cost
    if caps.max_cost is not None and cost is not None and already.cost + cost > caps.max_cost:
        return _cap(caps, "max_cost", surface)
    return None


class ResendCounter:
    """A transport observer (``transport/observe.py``) that charges each resend to a budget's
    request count; it follows no attempt itself."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget

    def attempt(self, resend_count: int) -> None:
        if resend_count:
            self.budget.resent()

    def waited(self, seconds: float, resend_count: int) -> None:
        return None


def recorded_spend(cfg: RunConfig, sha: str, price: Price | None, per_unreported: int = 0) -> Spend:
    """What ``output`` already spent, when this run resumes it: the cap covers the output.
    A decision whose reply reported no token counts is charged ``per_unreported`` tokens, or
    the mean of the decisions that did report, whichever is larger: never 0 (issue 33 item 1:
    "budgets charge it at its estimate, never 0", on --resume as in the run)."""
    from .safety import prior_of

    prior = prior_of(cfg, sha)
    if prior is None:
        return Spend()
    tokens = prior.spent_input_tokens + prior.spent_output_tokens
    if prior.spent_unreported:
        reported = prior.spent_requests - prior.spent_unreported
        mean = -(-tokens // reported) if reported else 0
        tokens += prior.spent_unreported * max(per_unreported, mean)
    cost = prior.spent_cost
    unknown = False
    if prior.spent_without_cost:
        # Tokens of the records that reported no cost are priced, when a price is given.
        if price is None:
            unknown = True
        elif not cost:
            cost = price.cost(prior.spent_input_tokens, prior.spent_output_tokens)
    return Spend(cost, tokens, prior.spent_requests, unknown)
