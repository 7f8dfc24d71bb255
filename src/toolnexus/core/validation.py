"""``validate_decision`` and ``threshold_band`` (seed 004): reading a decoded Decision against its
questions. Pure. Apart from ``decision.py``: decoding never needs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeAlias

from .answers import Answer
from .consistency import CONSISTENCY_FLAGS
from .decision import Decision
from .errors import ConfigError, InvalidDecision
from .qtypes import registry
from .questions import Question

__all__ = [
    "DEFAULT_THRESHOLDS",
    "FLAGS",
    "Band",
    "Checked",
    "band_of",
    "merged_thresholds",
    "threshold_band",
    "validate_decision",
]

#: Every flag an answer or a decision can carry, in the order records list them: a choice
#: ``near_uniform``, a backend that is not ``calibrated``, an ``uncertain`` band
#: (``threshold_band``), an answer whose numbers disagree with each other
#: (``consistency.CONSISTENCY_FLAGS``), a reply without token counts (``usage-missing``), a
#: reply that fails ``validate_decision``. The names are also the ``--fail-on`` conditions.
#: The one list: records, the CLI and the report derive from it.
FLAGS = (
    "near-uniform",
    "uncalibrated",
    "uncertain",
    *CONSISTENCY_FLAGS,
    "usage-missing",
    "invalid",
)

#: Inclusive cut-points (seed 004 ``default-thresholds``): noul ``p >= yes`` is yes, ``p <= no``
#: is no; choice/score ``confidence >= min_confidence`` is yes. A threshold tuned against one
#: backend does not transfer to another.
DEFAULT_THRESHOLDS: Mapping[str, float] = MappingProxyType(
    {"yes": 0.8, "no": 0.2, "min_confidence": 0.6}
)


def validate_decision(
    questions: Mapping[str, Question], decision: Decision
) -> InvalidDecision | None:
    """``None`` when ``decision`` answers EXACTLY ``questions`` within their schema, else the
    error (returned, not raised): ``decision.validate(questions)``, with the arguments checked.
    The checks and their order are ``validity.validate_answers``."""
    if not isinstance(decision, Decision):
        raise ConfigError(
            f"classifier: validate_decision takes a Decision, got {type(decision).__name__}"
        )
    return decision.validate(questions)


@dataclass(frozen=True, slots=True)
class Checked:
    """A decision with ``validate_decision``'s verdict on it (``None``: valid), from a style that
    had to run it anyway (to decide whether to cache, or to fail on a bad llm reply). The
    classifier reuses the verdict: each answer is validated once (issue 8, the cold cache)."""

    decision: Decision
    invalid: InvalidDecision | None


Band: TypeAlias = registry.Band


def merged_thresholds(thresholds: Mapping[str, float] | None = None) -> dict[str, float]:
    """``thresholds`` merged over ``DEFAULT_THRESHOLDS``, each name and value checked: what
    ``threshold_band`` reads answers with (a caller banding many answers merges once)."""
    if thresholds is not None and not isinstance(thresholds, Mapping):
        raise ConfigError(
            f"classifier: thresholds must be a mapping, got {type(thresholds).__name__}"
        )
    t = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    for name, value in t.items():
        if name not in DEFAULT_THRESHOLDS:
            raise ConfigError(f"classifier: unknown threshold {name!r} (yes, no, min_confidence)")
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ConfigError(
                f"classifier: threshold {name} must be a number in 0..1, got {value!r}"
            )
    return t


def swapped_cut_points(t: Mapping[str, float]) -> str | None:
    """Why the merged cut-points ``t`` are not a pair, or None: ``no`` above ``yes`` (issue 42
    item 4). The one check of a pair wherever one is read (``--thresholds``, a thresholds
    file, a gate's ``thresholds:``, ``Policy``); ``threshold_band`` itself keeps seed 004's
    reading of any values. A probability at or above yes reads "yes" and at or below no reads
    "no": with no above yes, every answer reads sure and nothing escalates."""
    if t["no"] > t["yes"]:
        return f"no ({t['no']:g}) is above yes ({t['yes']:g}); give no <= yes, e.g. yes=0.8,no=0.2"
    return None


def band_of(answer: Answer, t: Mapping[str, float]) -> Band:
    """``threshold_band``'s reading with ``t`` already merged (``merged_thresholds``): the one
    copy of the inclusive rule."""
    qtype = registry.of_answer(answer)
    return qtype.band(answer, t) if qtype is not None else "uncertain"


def threshold_band(answer: Answer, thresholds: Mapping[str, float] | None = None) -> Band:
    """``"yes" | "no" | "uncertain"`` for one answer, INCLUSIVE cut-points (seed 004).

    noul: ``p >= yes`` is yes, else ``p <= no`` is no, else uncertain. choice/score:
    ``confidence >= min_confidence`` is yes, else uncertain. No near-uniform demotion.
    A raw answer is uncertain. ``thresholds`` merges over ``DEFAULT_THRESHOLDS``.
    """
    t = merged_thresholds(thresholds)
    qtype = registry.of_answer(answer)
    if qtype is None:
        raise ConfigError(
            f"classifier: threshold_band takes an answer, got {type(answer).__name__}"
        )
    return qtype.band(answer, t)
