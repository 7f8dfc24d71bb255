"""The words the meaning rules match (``questionrules``): patterns and word lists, English only.

Each pattern is narrow on purpose (precision first, issue 34 item 3); the corpus of positives and
near-misses that holds them is ``tests/lint/test_check_rules.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_I = re.IGNORECASE
_NUMBER_WORD = (
    r"(?:\d|one|two|three|four|five|six|seven|eight|nine|ten|a (?:dozen|hundred|thousand))"
)
_SENTENCE_START = r"(?:^|[.!?;:]\s+|\n\s*)"

GENERATION = re.compile(
    _SENTENCE_START + r"(?:please\s+)?(?:summari[sz]e|write|draft|compose|generate|rewrite"
    r"|paraphrase|translate|explain|describe|outline|suggest|propose|tell me|give me|produce"
    r"|list)\b|^\s*why\b",
    _I,
)
COUNTING = re.compile(
    r"\bhow many\b|\b(?:the|a) number of\b|\bcount(?:ing)?\s+(?:the|how|all|every|each)\b"
    r"|\b(?:more|fewer|less|greater|larger|smaller|higher|lower)\s+than\s+"
    + _NUMBER_WORD
    + r"|\bat (?:least|most)\s+"
    + _NUMBER_WORD
    + r"\b|\b(?:sum|total) of\b"
    r"|\b(?:add up|adds up|average|percentage|percent|multipl(?:y|ied)|divided by|subtract)\b"
    r"|\d\s+[-+*/×÷]\s+\d|\d\s*[+*×÷=]\s*\d|\b(?:odd|even) number\b",
    _I,
)
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b"
)
_WHEN = (
    r"(?:\d+\s+(?:days?|weeks?|months?|years?|hours?)|\d{4}\b|\d{1,2}[/.-]\d{1,2}|"
    + _MONTH
    + r"|(?:mon|tues|wednes|thurs|fri|satur|sun)day|yesterday|today|tomorrow"
    r"|(?:last|next|this)\s+(?:week|month|year|quarter)|(?:the\s+)?(?:deadline|due date"
    r"|expiry date|expiration date))"
)
DATES = re.compile(
    r"\b(?:before|after|earlier than|later than|older than|newer than|since|until|prior to"
    r"|within|past|over)\s+(?:the\s+)?(?:last\s+|past\s+)?"
    + _WHEN
    # A named date after a determiner and up to three words: "after the promised delivery
    # date" (issue 43 item 6); a whole word, so "the candidate" and "an update" are not one.
    + r"|\b(?:before|after|earlier than|later than|since|until|prior to|past)\s+(?:the|its"
    r"|their|his|her|our|your|a|an)\s+(?:[a-z'-]+\s+){0,3}?(?:date|deadline)\b"
    r"|\b\d{4}-\d{2}-\d{2}\b|\b(?:expired|overdue|past due|out of date)\b|\bhow old\b"
    r"|\b\d+\s+days?\s+(?:ago|old)\b",
    _I,
)
_DET = r"(?:the|a|an|its|their|his|her|this|that|our|your|my)"
_NOUN = r"[a-z][a-z-]*"
#: A chain of two lookups or more (issue 43 item 6): "the manager of the owner of the account",
#: "the author's manager's email", "the manager of the author's team". One link ("the tone of
#: the message", "the author's manager") is an ordinary phrase.
INDIRECTION = re.compile(
    r"\b" + _DET + r"\s+" + _NOUN + r"\s+of\s+" + _DET + r"\s+" + _NOUN + r"\s+of\s+" + _DET
    + r"\s+" + _NOUN
    + r"|\b" + _NOUN + r"['’]s\s+(?:" + _NOUN + r"\s+)?" + _NOUN + r"['’]s\s+" + _NOUN
    + r"|\b" + _DET + r"\s+" + _NOUN + r"\s+of\s+(?:" + _DET + r"\s+)?" + _NOUN + r"['’]s\s+"
    + _NOUN,
    _I,
)  # fmt: skip
_UNIT = (
    r"(?:[kmgt]i?b|bytes?|kilobytes?|megabytes?|gigabytes?|terabytes?|mg|kg|g|grams?|kilograms?"
    r"|lbs?|pounds?|oz|ounces?|mm|cm|km|m|metres?|meters?|kilometres?|kilometers?|miles?|ft"
    r"|feet|inch(?:es)?|ml|l|litres?|liters?|gallons?|°\s?[cf]|degrees?|kwh|kw|w|watts?|mph"
    r"|km/h|px|pixels?|ms|milliseconds?|seconds?|secs?|minutes?|mins?)"
)
_MORE_LESS = (
    r"(?:(?:more|less|greater|larger|smaller|higher|lower|heavier|lighter|longer|shorter"
    r"|bigger|faster|slower|hotter|colder|warmer|cooler)\s+than|over|under|above|below"
    r"|exceeds?|exceeding|at least|at most|up to)"
)
#: How a number is written, compared in text (issue 43 item 6): a hex colour or hex number, a
#: number with a unit after a comparison ("larger than 2 MB", "over 5 kg"), an exponent (1e3).
NUMERIC = re.compile(
    r"(?<![\w&#])#(?=[0-9a-f]*[a-f])(?:[0-9a-f]{6}|[0-9a-f]{3})\b|\b0x[0-9a-f]+\b"
    r"|\b" + _MORE_LESS + r"\s+\d[\d,]*(?:\.\d+)?\s?" + _UNIT + r"(?![\w/])"
    r"|\b\d+(?:\.\d+)?e[+-]?\d+\b",
    _I,
)
_AUX = r"(?:is|are|was|were|does|do|did|has|have|had|can|could|should|will|would)"
NEGATION = re.compile(
    r"^\s*" + _AUX + r"n't\b|^\s*" + _AUX + r"\s+(?:\w+\s+){0,3}?(?:not|never)\b"
    r"|\bnot\s+(?:un|in|im|dis|non)[a-z]{3,}|\bneither\b.*\bnor\b",
    _I,
)
VAGUE = re.compile(
    r"\b(?:appropriate|inappropriate|relevant|irrelevant|suspicious|problematic|acceptable"
    r"|unacceptable|reasonable|unreasonable|significant|serious|good|bad|quality|professional"
    r"|offensive|harmful|risky|unsafe|important|properly|excessive|too (?:long|short|much|many)"
    r"|a lot)\b",
    _I,
)
NO_MATCH_TEXT = re.compile(
    r"\bnone of\b|\b(?:anything|something|everything) else\b|\bnot (?:covered|listed"
    r"|applicable|related|relevant|one of)\b|\bout[ -]of[ -]scope\b|\bunrelated\b"
    r"|\b(?:does not|doesn't|do not|don't) fit\b|\bfits? no\b|\bno (?:other )?(?:option|category"
    r"|class|label) (?:fits|applies)\b|\bcannot (?:tell|be determined|decide)\b"
    r"|\b(?:unclear|unknown|undetermined|otherwise)\b|\b(?:any|all) other\b",
    _I,
)
NO_MATCH_WORDS = frozenset(
    [
        "none",
        "other",
        "others",
        "unknown",
        "unclear",
        "neither",
        "na",
        "unrelated",
        "irrelevant",
        "misc",
        "miscellaneous",
        "unsure",
        "undetermined",
        "undecided",
        "nomatch",
        "unmatched",
        "unclassified",
        "uncategorized",
        "uncategorised",
        "fallback",
        "default",
    ]
)
NO_MATCH_IDS = frozenset(
    {"n/a", "not_applicable", "no_match", "out_of_scope", "something_else", "cannot_tell",
     "not_sure", "none_of_these", "none_of_the_above", "no_category"}
)  # fmt: skip
NEGATORS = frozenset(
    ["not", "no", "never", "none", "nothing", "nobody", "neither", "nor", "without", "cannot"]
)
STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "does",
        "do",
        "did",
        "has",
        "have",
        "had",
        "it",
        "this",
        "that",
        "there",
        "any",
        "of",
        "in",
        "on",
        "to",
        "for",
        "by",
        "with",
        "as",
        "at",
        "or",
        "and",
        "if",
        "its",
        "their",
        "his",
        "her",
        "they",
        "he",
        "she",
        "we",
        "you",
        "i",
        "me",
        "my",
        "our",
        "your",
        "customer",
        "user",
        "message",
        "text",
        "state",
    ]
)
FILLER = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "does",
        "do",
        "did",
        "the",
        "a",
        "an",
        "it",
        "this",
        "that",
        "there",
        "any",
    ]
)
_DIGIT = re.compile(r"[0-9]")


@dataclass(frozen=True, slots=True)
class Gated:
    """A rule's pattern behind a cheap precondition that every match meets: the lowered text
    holds one of ``words`` (literal pieces of each alternative), or a digit when ``digits``.
    An ASCII text without any is no match, unsearched: most instructions trigger no rule, and
    one ``in`` per word costs far less than the case-insensitive alternation (issue 34's 20%).
    A non-ASCII text is always searched, since case-insensitive matching relates some
    non-ASCII letters to ASCII ones (``ſ`` to ``s``) that lowering does not.
    ``tests/lint/test_check_rules.py`` holds each gate to its pattern over the rules' corpus."""

    pattern: re.Pattern[str]
    words: tuple[str, ...]
    digits: bool = False

    def may(self, text: str, low: str | None = None) -> bool:
        """False when ``pattern`` cannot match ``text`` (the precondition fails); ``low`` is
        ``text.lower()`` when the caller has it (several rules gate one text)."""
        if text.isascii():
            low = text.lower() if low is None else low
            for word in self.words:  # a loop, not any(): no generator per text
                if word in low:
                    return True
            return self.digits and _DIGIT.search(low) is not None
        return True

    def search(self, text: str, low: str | None = None) -> bool:
        """Whether ``pattern`` matches ``text`` (gated: see the class docstring)."""
        return self.may(text, low) and self.pattern.search(text) is not None


GENERATION_GATE = Gated(
    GENERATION,
    ("summari", "write", "draft", "compose", "generate", "paraphrase", "translate", "explain",
     "describe", "outline", "suggest", "propose", "tell me", "give me", "produce", "list",
     "why"),
)  # fmt: skip
COUNTING_GATE = Gated(
    COUNTING,
    ("how many", "number", "count", "than", "at least", "at most", "sum of", "total of",
     "add up", "adds up", "average", "percent", "multipl", "divided by", "subtract"),
    digits=True,
)  # fmt: skip
DATES_GATE = Gated(
    DATES,
    ("before", "after", "than", "since", "until", "prior to", "within", "past", "over",
     "expired", "out of date", "how old"),
    digits=True,
)  # fmt: skip
NEGATION_GATE = Gated(NEGATION, ("n't", "not", "never", "neither"))
VAGUE_GATE = Gated(
    VAGUE,
    ("appropriate", "relevant", "suspicious", "problematic", "acceptable", "reasonable",
     "significant", "serious", "good", "bad", "quality", "professional", "offensive",
     "harmful", "risky", "unsafe", "important", "properly", "excessive", "too ", "a lot"),
)  # fmt: skip
INDIRECTION_GATE = Gated(INDIRECTION, ("of", "'s"))
NUMERIC_GATE = Gated(NUMERIC, ("#",), digits=True)
#: The instruction rules' gates together: a text that fails it fails each of them.
INSTRUCTION_GATE = Gated(
    re.compile(""),
    tuple(
        dict.fromkeys(
            w for g in (GENERATION_GATE, COUNTING_GATE, DATES_GATE, NEGATION_GATE) for w in g.words
        )
    ),
    digits=True,
)
#: Every gated rule, for the test that holds each gate to its pattern.
GATES = {
    "GENERATION": GENERATION_GATE,
    "COUNTING": COUNTING_GATE,
    "DATES": DATES_GATE,
    "NEGATION": NEGATION_GATE,
    "VAGUE": VAGUE_GATE,
    "INDIRECTION": INDIRECTION_GATE,
    "NUMERIC": NUMERIC_GATE,
}
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: A token for whole-word key matching: word characters and hyphens run together.
TOKEN = re.compile(r"[\w-]+")
LOCAL_ALIASES = ("jev-latest", "jev-preview")
