"""The one comparison grammar of the command line: ``LEFT OP RIGHT``.

``report --fail-on`` (``[KEY.]NAME OP NUMBER``) and ``filter --where`` (``KEY[.FIELD] OP VALUE``)
read their expressions with this tokenizer and these operators, so a spelling that one accepts
the other reads the same way; each then says which operators and right-hand sides it takes.
A token knows its 1-based column, so an error names where the expression went wrong.

Tokens: an operator (``>= <= == != > <``, two-character ones first), a quoted value (``"a b"``
or ``'a b'``, quotes dropped), or a word: a run of anything but white space and ``< > = !``
(so ``urgency.level``, ``near-uniform`` and ``-0.5`` are one word each). Pure: no I/O.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError

__all__ = ["OPERATORS", "Comparison", "Token", "parse_comparison", "tokenize"]

#: Every operator of the grammar and what it computes; two-character ones first, so ``>=`` is
#: never read as ``>`` followed by ``=``.
OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
_OP_CHARS = frozenset("<>=!")
_QUOTES = "\"'"


@dataclass(frozen=True)
class Token:
    """One token: its text (a quoted value without its quotes), its 1-based column, and
    whether it is an operator or a quoted value."""

    text: str
    column: int
    op: bool = False
    quoted: bool = False


@dataclass(frozen=True)
class Comparison:
    """``left op right`` as written (``text`` stripped)."""

    text: str
    left: Token
    op: Token
    right: Token


def _error(column: int, why: str) -> ConfigError:
    return ConfigError(f"column {column}: {why}")


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``; a lone ``=`` or ``!`` or an unclosed quote raises ConfigError
    naming its column."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        op = next((o for o in OPERATORS if text.startswith(o, i)), None)
        if op is not None:
            tokens.append(Token(op, i + 1, op=True))
            i += len(op)
            continue
        if c in _OP_CHARS:
            raise _error(i + 1, f"{c!r} is not an operator (operators: {' '.join(OPERATORS)})")
        if c in _QUOTES:
            end = text.find(c, i + 1)
            if end < 0:
                raise _error(i + 1, f"the quote {c} is never closed")
            tokens.append(Token(text[i + 1 : end], i + 1, quoted=True))
            i = end + 1
            continue
        j = i
        while j < n and not text[j].isspace() and text[j] not in _OP_CHARS:
            j += 1
        tokens.append(Token(text[i:j], i + 1))
        i = j
    return tokens


def parse_comparison(text: str) -> Comparison:
    """``text`` as one comparison; anything else raises ConfigError naming the column at
    fault (``classifier: column 9: ...``)."""
    tokens = tokenize(text)
    end = len(text.rstrip()) + 1
    if not tokens or tokens[0].op:
        at = tokens[0].column if tokens else 1
        raise _error(at, "expected a name before the operator")
    if len(tokens) < 2 or not tokens[1].op:
        at = tokens[1].column if len(tokens) > 1 else end
        raise _error(at, f"expected an operator ({' '.join(OPERATORS)}) after {tokens[0].text!r}")
    if len(tokens) < 3 or tokens[2].op:
        at = tokens[2].column if len(tokens) > 2 else end
        raise _error(at, f"expected a value after {tokens[1].text!r}")
    if len(tokens) > 3:
        raise _error(tokens[3].column, f"unexpected {tokens[3].text!r} after the value")
    return Comparison(text.strip(), tokens[0], tokens[1], tokens[2])
