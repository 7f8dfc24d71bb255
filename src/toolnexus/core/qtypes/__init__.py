"""Question types, one module each (issue 30 item 4): ``noul``, ``choice``, ``score`` and the
open-ended ``raw``, each registering its hooks with :mod:`.registry` (whose docstring lists
them). Importing this package registers the four built-in types. Pure.
"""

from __future__ import annotations

from . import registry
from .choice import CHOICE, ChoiceAnswer, ChoiceQuestion
from .noul import NOUL, NoulAnswer, NoulCriteria, NoulQuestion
from .raw import RAW, RawAnswer, RawQuestion
from .registry import QuestionType
from .rubric import ScoreQuestion
from .score import (
    SCORE,
    ScoreAnswer,
)

__all__ = [
    "CHOICE",
    "NOUL",
    "RAW",
    "SCORE",
    "ChoiceAnswer",
    "ChoiceQuestion",
    "NoulAnswer",
    "NoulCriteria",
    "NoulQuestion",
    "QuestionType",
    "RawAnswer",
    "RawQuestion",
    "ScoreAnswer",
    "ScoreQuestion",
    "registry",
]
