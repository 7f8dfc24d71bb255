"""The rules about meaning (issue 34): how a well-formed question still fails, each a heuristic
over the question's words, located at the node it is about.

Precision first: each pattern is narrow on purpose, and ``tests/lint/test_check_rules.py`` holds a
corpus of positives and near-misses for every one ("How much does the picture look like a
photograph" is not arithmetic). English only; a rule that cannot tell stays silent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..core import CHOICE, NOUL, SCORE, Located, registry
from ..questionfile import Finding
from .questionwords import (
    COUNTING_GATE,
    DATES_GATE,
    FILLER,
    GENERATION_GATE,
    IDENTIFIER,
    INDIRECTION_GATE,
    INSTRUCTION_GATE,
    LOCAL_ALIASES,
    NEGATION_GATE,
    NEGATORS,
    NO_MATCH_IDS,
    NO_MATCH_TEXT,
    NO_MATCH_WORDS,
    NUMERIC_GATE,
    STOP,
    TOKEN,
    VAGUE_GATE,
)

__all__ = ["meaning_findings"]


def _text(instructions: Any) -> str:
    """The words of the instructions: a string, or the string values of a structured mapping."""
    if isinstance(instructions, str):
        return instructions
    if isinstance(instructions, Mapping):
        return "\n".join(v for v in instructions.values() if isinstance(v, str))
    return ""


def _words(text: str) -> list[str]:
    return _stems(_split(text))


def _stems(split: list[str]) -> list[str]:
    """:func:`_words` of a text already :func:`_split`."""
    return [w[:-1] if len(w) > 3 and w.endswith("s") else w for w in split]


_CAMEL = re.compile(r"([a-z])([A-Z])")
_WORD = re.compile(r"[a-z0-9]+(?:['’]t)?")
_KEYISH = re.compile(r"[0-9]|[a-z][A-Z]")
# Compiled once: ``re.search(str, ...)`` looks its pattern up in re's cache on every call.
_ANY_DIGIT = re.compile(r"\d")
_BARE = re.compile(r"\s*[-+]?[\w.]+\s*")


def _split(text: str) -> list[str]:
    if _CAMEL.search(text):  # a sub builds its template in Python: only when it will cut
        text = _CAMEL.sub(r"\1 \2", text)
    words = _WORD.findall(text.lower())
    return [w.replace("’", "'") for w in words] if "’" in text else words


# The ASCII bytes a text may hold without naming a word that its key lacks: every byte that is
# no word character, the letters of the filler words, and the ``s`` a plural stem drops.
_FREE = bytes(c for c in range(128) if not (chr(c).isdigit() or chr(c).islower())) + bytes(
    sorted({ord(c) for word in FILLER for c in word} | {ord("s")})
)


def _may_restate(low: str, key: str) -> bool:
    """False when the lowered instructions ``low`` hold a letter or digit that neither ``key``
    nor a filler word has: then a word of them is not the key's, and TN053 cannot fire. Its
    sets of words cost a few microseconds a question; this costs one translate (ASCII only)."""
    if not low.isascii():
        return True
    return not low.encode("ascii").translate(None, _FREE + key.lower().encode("utf-8"))


def _negated(text: str) -> bool:
    return any(w in NEGATORS or w.endswith("n't") for w in _split(text))


def _identifier_like(key: str) -> bool:
    """A key that cannot be an ordinary English word: ``wants_money_back``, ``step2``,
    ``readFile``; plain words (``department``) are left alone, they occur in any question."""
    return bool(IDENTIFIER.fullmatch(key)) and bool(
        "_" in key or _ANY_DIGIT.search(key) or _CAMEL.search(key)
    )


def has_no_match_option(criteria: Mapping[str, Any]) -> bool:
    """True when one of a choice's options means "none of these": by its id (a word of it), or
    by its description. The descriptions are searched as one text (a 255-option choice is one
    search, not 255)."""
    if not NO_MATCH_WORDS.isdisjoint(criteria):  # `other:` as written: no need to lower them all
        return True
    lows = [str(option).strip().lower() for option in criteria]
    if not NO_MATCH_IDS.isdisjoint(lows):
        return True
    # The ids already in lower case are searched as one text (no word spans a line break);
    # the others (camelCase) one by one, as _split cuts them.
    plain = [low for low, option in zip(lows, criteria, strict=True) if low == option]
    if not NO_MATCH_WORDS.isdisjoint(_WORD.findall("\n".join(plain))):
        return True
    for low, option in zip(lows, criteria, strict=True):
        if low != option and not NO_MATCH_WORDS.isdisjoint(_split(str(option))):
            return True
    text = "\n".join(v for v in criteria.values() if isinstance(v, str))
    return bool(NO_MATCH_TEXT.search(text))


def is_floating(model: str) -> bool:
    return model in LOCAL_ALIASES or model.endswith(("-latest", "-preview"))


class _Rules:
    def __init__(self, path: str, doc: Located) -> None:
        self.path = path
        self.doc = doc
        self.out: list[Finding] = []
        self.keys: frozenset[str] = frozenset()
        #: True when every key in ``keys`` holds an underscore (snake_case sets): a text without
        #: one then names none of them, and the cheaper test stands for ``_KEYISH``.
        self.snake = False

    def add(self, at: tuple[int, int], code: str, message: str) -> None:
        self.out.append(Finding(self.path, at[0], at[1], code, message))

    def model(self, data: Mapping[str, Any]) -> None:
        model = data.get("model")
        if isinstance(model, str) and is_floating(model):
            self.add(
                self.doc.at(("model",)),
                "TN070",
                f"model {model!r} is a floating alias: pin a version (e.g. jev-1.13.0) so tuned "
                "thresholds keep meaning the same",
            )
            return
        if "model" in data:
            return
        for path in _gate_paths(data):
            self.add(
                self.doc.key_at(path),
                "TN070",
                f"{path[-1]!r} without a model: jev-latest (a floating alias) would answer; "
                "write model: jev-1.13.0 (the version the thresholds were tuned on)",
            )
            return

    def question(self, key: str, obj: Mapping[str, Any]) -> None:
        where = f"question {key!r}: "
        qtype = obj.get("type")
        text = _text(obj.get("instructions"))
        if text:
            self.text_rules(key, text, where)
        rules = registry.attached(qtype, registry.CHECK_RULES)  # the type's own (bottom)
        if rules is not None:
            rules(self, key, obj, text, where)

    def choice(self, key: str, obj: Mapping[str, Any], text: str, where: str) -> None:
        criteria = obj.get("criteria")
        if (
            isinstance(criteria, Mapping)
            and len(criteria) >= 2
            and not has_no_match_option(criteria)
        ):
            self.add(
                self.doc.key_at(("questions", key)),
                "TN050",
                f"{where}no option means none of these / other: out-of-scope input is forced "
                "into a listed option at high confidence; add one, or mark a closed set with "
                "# toolnexus: ignore[TN050] <why>",
            )

    def score(self, key: str, obj: Mapping[str, Any], text: str, where: str) -> None:
        criteria = obj.get("criteria")
        if (
            isinstance(criteria, list)
            and len(criteria) >= 2
            and all(_bare(level) for level in criteria)
        ):
            self.add(
                self.doc.at(("questions", key, "criteria")),
                "TN064",
                f"{where}every level is a bare word or number: describe what each means",
            )

    def text_rules(self, key: str, text: str, where: str) -> None:
        at = self.doc.at(("questions", key, "instructions"))
        low = text.lower()  # shared by the gates (questionwords.Gated)
        if INSTRUCTION_GATE.may(text, low):  # most texts: none of the four rules can match
            if GENERATION_GATE.search(text, low):
                self.add(
                    at,
                    "TN055",
                    f"{where}asks for generated text; a System One model returns no "
                    "text, only an answer: ask a noul, choice or score question instead",
                )
            if COUNTING_GATE.search(text, low):
                self.add(at, "TN060", f"{where}asks for counting or arithmetic")
            if DATES_GATE.search(text, low):
                self.add(at, "TN061", f"{where}compares dates or times")
            if NEGATION_GATE.search(text, low):
                self.add(at, "TN062", f"{where}is a negated question")
        # Issue 43 item 6: the vendor's indirection and numeric representation (info).
        if INDIRECTION_GATE.may(text, low) and (m := INDIRECTION_GATE.pattern.search(text)):
            self.add(
                at,
                "TN065",
                f"{where}asks through a chain of lookups ({m.group(0)!r}): ask about the thing "
                "itself, or resolve the chain upstream",
            )
        if NUMERIC_GATE.may(text, low) and (m := NUMERIC_GATE.pattern.search(text)):
            self.add(
                at,
                "TN066",
                f"{where}compares a number as written ({m.group(0)!r}): a state may write it "
                "another way; convert it upstream if answers look wrong",
            )
        # Whole-word: a run of word characters and hyphens is one token, so `pre-wants_refund`
        # and `wants_refunds` never name `wants_refund` (one pass, no pattern per key).
        # Every key in ``keys`` holds an underscore, a digit or a camelCase join
        # (``_identifier_like``), so a text with none names none of them.
        named = (
            set(TOKEN.findall(text)) & self.keys
            if self.keys and ("_" in text or (not self.snake and _KEYISH.search(text) is not None))
            else set()
        )
        for other in sorted(named - {key}):
            self.add(
                at,
                "TN051",
                f"{where}names question {other!r}: questions are independent, its answer is "
                "not context here; say what you mean instead",
            )
        if len(text) > 2 * len(key) + 40:  # too long to be the key's words alone
            return
        if not _may_restate(low, key):
            return
        # The word counts first: most instructions say more than their key, and then the
        # stems need not be made.
        said, keyed = _split(text), _split(key)
        if len(said) > len(keyed) + 3:
            return
        content = {w for w in _stems(said) if w not in FILLER}
        if content and content <= set(_stems(keyed)):
            self.add(at, "TN053", f"{where}instructions only restate the key {key!r}")

    def noul(self, key: str, obj: Mapping[str, Any], text: str, where: str) -> None:
        criteria = obj.get("criteria")
        cpath = ("questions", key, "criteria")
        sides = criteria if isinstance(criteria, Mapping) else {}
        true = sides.get("true")
        described = any(isinstance(v, str) and v.strip() for v in sides.values())
        if "criteria" not in obj or not described:
            if VAGUE_GATE.search(text):
                self.add(
                    self.doc.at(("questions", key, "instructions")),
                    "TN063",
                    f"{where}a judgement word without criteria: say where the line is",
                )
            return
        if not isinstance(true, str) or not _negated(true) or _negated(text):
            return
        # Stemmed past -s, -ing and -ed, a few verbs of asking as one: "no refund is requested
        # by the customer" negates "is the customer asking for a refund?" in other words
        # (issue 43 item 6). Or the sides are swapped outright: `false` says, unnegated, what
        # the question asks.
        said = _content(true)
        asked = _content(text)
        false = sides.get("false")
        other = _content(false) if isinstance(false, str) and not _negated(false) else set()
        if (len(said) >= 2 and len(said & asked) >= 0.6 * len(said)) or (
            len(other) >= 2 and len(asked) >= 2 and len(other & asked) >= 0.6 * len(asked)
        ):
            self.add(
                self.doc.at((*cpath, "true")),
                "TN054",
                f"{where}criteria 'true' describes the negative of the question: true is what "
                "a yes means; swap true and false, or rephrase the instructions",
            )


#: Verbs a noul's question and its criteria use for one act (TN054 compares the two).
_SAME_ACT = {"request": "ask", "want": "ask", "seek": "ask", "demand": "ask"}


def _content(text: str) -> set[str]:
    """The content words of ``text``, stemmed, for TN054: no stop word, no negator."""
    out = set()
    for w in _words(text):
        if w not in STOP and w not in NEGATORS:
            stem = _stem(w)
            out.add(_SAME_ACT.get(stem, stem))
    return out


def _stem(word: str) -> str:
    """``word`` without an ``-ing`` or ``-ed`` ending (``requesting``, ``requested`` ->
    ``request``): TN054 compares what the question asks with what ``true`` says."""
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2]
    return word


def _bare(level: Any) -> bool:
    if isinstance(level, Mapping):
        if isinstance(level.get("description"), str) and level["description"].strip():
            return False
        level = level.get("label")
    return isinstance(level, str) and bool(_BARE.fullmatch(level))


def _gate_paths(data: Mapping[str, Any]) -> Iterator[tuple[str, ...]]:
    for name in ("gates", "thresholds"):
        if name in data:
            yield (name,)
    questions = data.get("questions")
    if isinstance(questions, Mapping):
        for key, obj in questions.items():
            if isinstance(obj, Mapping):
                for name in ("gates", "gate", "threshold", "thresholds"):
                    if name in obj:
                        yield ("questions", key, name)


def _said(obj: Mapping[str, Any]) -> str:
    """The instructions as compared for duplicates: case and spacing do not count."""
    instructions = obj.get("instructions")
    if isinstance(instructions, str):
        return " ".join(instructions.casefold().split())
    return json.dumps(instructions, sort_keys=True, default=str)


def _fingerprint(obj: Mapping[str, Any]) -> str:
    return json.dumps(
        [obj.get("type"), _said(obj), obj.get("criteria")], sort_keys=True, default=str
    )


def meaning_findings(path: str, doc: Located) -> list[Finding]:
    """Every meaning finding of a question-set document (one whose ``questions`` is a mapping)."""
    data = doc.value
    if not isinstance(data, Mapping):
        return []
    rules = _Rules(path, doc)
    rules.model(data)
    questions = data.get("questions")
    if not isinstance(questions, Mapping):
        return rules.out
    rules.keys = frozenset(k for k in questions if _identifier_like(k))
    rules.snake = all("_" in k for k in rules.keys)
    seen: dict[str, list[str]] = {}
    for key, obj in questions.items():
        if not isinstance(obj, Mapping):
            continue
        rules.question(key, obj)
        # Bucketed by instructions first: the criteria are serialised only on a collision.
        same = seen.setdefault(_said(obj), [])
        first = (
            next((k for k in same if _fingerprint(questions[k]) == _fingerprint(obj)), None)
            if same
            else None
        )
        if first is not None:
            rules.add(
                doc.key_at(("questions", key)),
                "TN052",
                f"question {key!r} repeats question {first!r} (same type, instructions and "
                "criteria): remove one",
            )
        else:
            same.append(key)
    return rules.out


# Each built-in type's check-rules, in its registry entry (the CHECK_RULES slot): ``question``
# dispatches on the registry, not on the type's name.
registry.attach(NOUL.name, registry.CHECK_RULES, _Rules.noul)
registry.attach(CHOICE.name, registry.CHECK_RULES, _Rules.choice)
registry.attach(SCORE.name, registry.CHECK_RULES, _Rules.score)
