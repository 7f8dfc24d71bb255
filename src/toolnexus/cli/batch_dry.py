"""``toolnexus batch --dry-run`` and the flags around it: the run library's dry run
(``run.dry.estimate``) over the question file and the backend options, ``--price`` parsed, and
the question set's own over-limit warning said before a run. ``filter --dry-run`` estimates its
lines with the same ``run.dry.estimate_items``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..questions import Question
from ..run.dry import DryRun, describe
from ..run.items import InputItem
from ..scheduler.budget import Price
from .batch_options import BatchConfig
from .errors import CliError

__all__ = ["DryRun", "check_dry", "describe", "dry_run", "estimate_items", "price_of"]


def check_dry(settings: Any) -> None:
    """A dry run estimates System One requests: refused for a replay or the llm style."""
    if settings.replay is not None or settings.style != "systemone":
        raise CliError("--dry-run estimates System One requests; drop --replay or --llm-model")


def dry_run(
    cfg: BatchConfig,
    questions_path: Path,
    settings: Any,
    *,
    cache: Any = None,
    price: Price | None = None,
) -> DryRun:
    """What ``batch`` would send for ``cfg``; sends nothing, writes nothing."""
    from dataclasses import replace

    from ..run.dry import estimate
    from ..run.safety import check_config, check_existing
    from .backend import classifier_options
    from .questionfile import load_question_set

    check_dry(settings)
    # Every flag and the output before the question file, as ever.
    check_config(cfg.run)
    check_existing(cfg.run)
    file_model, questions = load_question_set(questions_path)
    options = classifier_options(settings, file_model=file_model)
    run = replace(cfg.run, questions=questions, classifier=options, cache=cache, price=price)
    return estimate(run)


def estimate_items(
    items: Iterable[InputItem],
    questions: Mapping[str, Any],
    file_model: str | None,
    settings: Any,
    pack: Any,
    *,
    cache: Any = None,
    price: Price | None = None,
) -> DryRun:
    """``run.dry.estimate_items`` with the classifier the backend options build (``filter``)."""
    from ..run.dry import estimate_items as estimate
    from .backend import classifier_options

    check_dry(settings)
    options = classifier_options(settings, file_model=file_model)
    return estimate(items, questions, options, pack, cache=cache, price=price)


def warn_if_over_limits(settings: Any, model: str, questions: dict[str, Question]) -> bool:
    """``batch``: one warning before anything is sent when the question set alone passes the
    wire's token limits, so every request of the run would (issue 34 item 4); whether it was
    printed (then the run's over-limit watch only counts)."""
    if settings.style != "systemone":
        return False
    import sys

    from .lintbudget import over_limit_warning

    warning = over_limit_warning(model or "jev-latest", questions, with_state=False)
    if warning is not None:
        sys.stderr.write(warning)
    return warning is not None


def price_of(text: str | None) -> Price | None:
    """``--price`` (or ``TOOLNEXUS_PRICE``) parsed, or None."""
    if text is None or not text.strip():
        return None
    from ..errors import ConfigError
    from ..scheduler.budget import parse_price

    try:
        return parse_price(text)
    except ConfigError as e:
        raise CliError(e.detail.removeprefix("classifier: ")) from None
