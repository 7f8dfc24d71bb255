"""A run's spend budget from its caps (``RunConfig.max_cost`` / ``max_tokens`` /
``max_requests``): what the output already spent when the run resumes it, the budget a library
run is given when its ``admission`` holds none (``batch`` hands its own, sized by its dry run's
estimate), and :class:`ResendCounter`, which charges every retry to it through the transport's
attempt hook, since retries bill like requests."""

from __future__ import annotations

from ..scheduler.budget import Budget, Price, Spend
from .config import RunConfig

__all__ = ["ResendCounter", "budget_of", "recorded_spend"]


def budget_of(cfg: RunConfig) -> Budget | None:
    """The budget a run with caps gets when its ``admission`` holds none: its output tokens
    per request estimated from the question set, the output's earlier spend counted (the cap
    covers the output, as ``batch --resume``'s does)."""
    caps = cfg.caps
    if not caps.any or any(isinstance(member, Budget) for member in cfg.admission):
        return None
    from ..questions import questions_to_wire
    from ..scheduler.budget import estimate_output_tokens
    from .ids import question_set_sha256

    output = estimate_output_tokens(questions_to_wire(dict(cfg.questions)))
    already = recorded_spend(cfg, question_set_sha256(cfg.questions), cfg.price, output)
    return Budget(caps, cfg.price, output_tokens=output, already=already)


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
