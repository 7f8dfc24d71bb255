"""``batch --max-cost / --max-tokens / --max-requests``: the run library's budget
(``run.budget``: sized on the dry run's estimate, refused with exit 5, noted) with its notes
printed on stderr before the run starts, as they always were. The
:class:`~toolnexus.scheduler.budget.Budget` it returns is the admission member the batch's
scheduler asks before each request.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..run.budget import ResendCounter, recorded_spend, refusal, sized_budget
from ..scheduler.budget import Budget, Price
from .batch_dry import dry_run
from .batch_options import BatchConfig

__all__ = ["ResendCounter", "budget_for", "recorded_spend", "refusal"]


def _note(message: str) -> None:
    sys.stderr.write(f"toolnexus: note: {message}\n")


def budget_for(
    cfg: BatchConfig, questions: Path, settings: Any, cache: Any, price: Price | None
) -> Budget | None:
    """The run's budget when a cap is given (``run.budget.sized_budget``), its notes printed."""
    caps = cfg.run.caps
    if not caps.any:
        return None
    from dataclasses import replace

    from ..run.ids import question_set_sha256
    from .questionfile import load_question_set

    _, qs = load_question_set(questions)
    estimate = dry_run(cfg, questions, settings, cache=cache, price=price)
    run = replace(cfg.run, price=price)
    return sized_budget(run, question_set_sha256(qs), estimate, _note)
