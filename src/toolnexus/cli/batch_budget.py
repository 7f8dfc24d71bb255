"""``batch --max-cost / --max-tokens / --max-requests``: the run's spend budget (issue 23).

Before the first request, the dry run's estimate (``batch_dry``) is held against the caps, on
top of what ``--output`` already spent when resuming (the records' usage, cached ones
excluded): a cap that not even one request fits under is refused (exit 5) with the estimate;
a cap the whole estimate passes is said once on stderr, and the run goes on until the budget
stops it. The :class:`~toolnexus.scheduler.budget.Budget` it returns is the admission member
the batch's scheduler asks before each request; :class:`ResendCounter` tells it of every retry
through the transport's attempt hook, since retries bill like requests.
"""

from __future__ import annotations

import math
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..run.budget import ResendCounter, recorded_spend
from ..scheduler.budget import OUTPUT_MARGIN, Budget, Caps, Price, Spend
from .batch_dry import DryRun, describe, dry_run
from .batch_options import BatchConfig
from .errors import EXIT_BUDGET, CliError

__all__ = ["ResendCounter", "budget_for", "note_cost_source", "recorded_spend", "refusal"]


def refusal(caps: Caps, already: Spend, estimate: DryRun, price: Price | None) -> str | None:
    """Why the run is refused before its first request, or None: a cap under what is already
    spent plus the largest single request's estimate admits nothing at all."""
    if not estimate.requests:
        return None
    # What the budget reserves for the largest request: its upper bound, and the output with
    # the budget's margin (scheduler.budget).
    output = math.ceil(OUTPUT_MARGIN * estimate.output_per_request)
    one_tokens = estimate.largest_request + output
    one_cost = price.cost(estimate.largest_request, output) if price else Decimal(0)
    why = None
    if caps.max_requests is not None and already.requests + 1 > caps.max_requests:
        why = f"--max-requests {caps.max_requests} ({already.requests} already sent)"
    elif caps.max_tokens is not None and already.tokens + one_tokens > caps.max_tokens:
        why = f"--max-tokens {caps.max_tokens} ({already.tokens} already spent)"
    elif caps.max_cost is not None and already.cost + one_cost > caps.max_cost:
        why = f"--max-cost {caps.max_cost} (${already.cost:.6f} already spent)"
    if why is None:
        return None
    return (
        f"{why} admits not one request of this run; its estimate: {describe(estimate)}. "
        "Raise the cap (--dry-run shows the estimate)"
    )


def _passes(caps: Caps, already: Spend, estimate: DryRun) -> str | None:
    if not estimate.requests:
        return None  # nothing left to send passes no cap (issue 31 item 11)
    if caps.max_requests is not None and already.requests + estimate.requests > caps.max_requests:
        return f"--max-requests {caps.max_requests}"
    tokens = estimate.input_tokens + estimate.output_tokens
    if caps.max_tokens is not None and already.tokens + tokens > caps.max_tokens:
        return f"--max-tokens {caps.max_tokens}"
    cost = estimate.cost
    if caps.max_cost is not None and cost is not None and already.cost + cost > caps.max_cost:
        return f"--max-cost {caps.max_cost}"
    return None


def note_cost_source(caps: Caps, price: Price | None, settings: Any) -> None:
    """Say on stderr what ``--max-cost`` counts when no ``--price`` is given (batch, filter)."""
    if caps.max_cost is not None and price is None and settings.replay is None:
        sys.stderr.write(
            "toolnexus: note: --max-cost counts the usage.cost the server reports; with no "
            "--price, a server that reports none is charged nothing\n"
        )


def budget_for(
    cfg: BatchConfig, questions: Path, settings: Any, cache: Any, price: Price | None
) -> Budget | None:
    """The run's budget when a cap is given (after the checks in the module docstring)."""
    caps = cfg.run.caps
    if not caps.any:
        return None
    from ..run.ids import question_set_sha256
    from .questionfile import load_question_set

    note_cost_source(caps, price, settings)
    _, qs = load_question_set(questions)
    estimate = dry_run(cfg, questions, settings, cache=cache, price=price)
    unreported = estimate.largest_request + estimate.output_per_request
    already = recorded_spend(cfg.run, question_set_sha256(qs), price, unreported)
    why = refusal(caps, already, estimate, price)
    if why is not None:
        raise CliError(why, EXIT_BUDGET)
    passes = _passes(caps, already, estimate)
    if passes is not None:
        sys.stderr.write(
            f"toolnexus: note: the estimate ({describe(estimate)}) passes {passes}: the run "
            "stops scheduling at the cap\n"
        )
    return Budget(caps, price, output_tokens=estimate.output_per_request, already=already)
