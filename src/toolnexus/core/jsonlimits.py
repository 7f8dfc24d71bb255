"""JSON read with bounds: hostile input costs bounded work and fails as one message. Pure.

The stdlib decoder has no limits of its own: a 100,000-deep array ends in a ``RecursionError``
(a traceback), a 5,000-digit number in a ``ValueError`` about Python's int conversion, and
``NaN``/``Infinity``/``1e999`` decode to floats that no other JSON parser accepts. :func:`loads`
refuses each of them with a :class:`JsonLimitError` whose message says what was wrong, so a
state, a batch line and a response body all fail the same way:

- nesting deeper than :data:`MAX_DEPTH` arrays/objects;
- a number literal longer than :data:`MAX_NUMBER_CHARS` characters;
- ``NaN``, ``Infinity``, ``-Infinity``, or a float literal that overflows to infinity.

:func:`dumps` is the other direction for every JSON the CLI prints or writes: ``allow_nan``
off, so ``NaN`` can never reach a JSON, JSONL or summary output.

:func:`value_problem` holds a Python value (a library caller's state) to the same bounds, so
a state given to the library is refused exactly where the CLI would refuse its text.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_NUMBER_CHARS",
    "JsonLimitError",
    "depth_error",
    "dumps",
    "duplicate_key",
    "loads",
    "loads_noting_duplicates",
    "value_problem",
]

#: Arrays/objects nested deeper than this are refused (a System One answer is 4 deep; a state
#: of 64 levels is already far past any ticket or tool call).
MAX_DEPTH = 64
#: A number literal longer than this is refused: 17 significant digits is all a double holds,
#: and a token count fits in 20.
MAX_NUMBER_CHARS = 100


class JsonLimitError(ValueError):
    """JSON that breaks a bound (or is not JSON); ``str(e)`` says which, without a prefix."""


def _int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise JsonLimitError(
            f"a number of {len(text)} characters (at most {MAX_NUMBER_CHARS} are accepted)"
        )
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise JsonLimitError(
            f"a number of {len(text)} characters (at most {MAX_NUMBER_CHARS} are accepted)"
        )
    value = float(text)
    if not math.isfinite(value):
        raise JsonLimitError(f"the number {text} is out of range (not a finite JSON number)")
    return value


def _constant(name: str) -> Any:
    raise JsonLimitError(f"{name} is not JSON (NaN and Infinity are refused)")


_DECODER = json.JSONDecoder(parse_int=_int, parse_float=_float, parse_constant=_constant)


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")


def _too_deep(text: str) -> bool:
    """True when brackets nest deeper than MAX_DEPTH, counted on the raw text (strings skipped)
    BEFORE decoding, since the decoder itself recurses once per level. Each pass deletes the
    innermost pairs (C-speed regex work on a shrinking text), so a depth of d costs d passes."""
    if "\\" in text or text.count('"') % 2:
        outside = _STRINGS.sub("", text)
    else:
        # Without a backslash the quotes pair up in order, so every other piece between quotes
        # is outside the strings: the very text the regex leaves, at a seventh of its cost on
        # a packed reply (whose hundreds of brackets always take this scan; issue 32).
        outside = "".join(text.split('"')[::2])
    brackets = _NOT_BRACKETS.sub("", outside)
    for _ in range(MAX_DEPTH):
        shorter = _INNERMOST.sub("", brackets)
        if not shorter or len(shorter) == len(brackets):
            return False  # flat enough, or unbalanced (the decoder names that error)
        brackets = shorter
    return True


#: A run of digits that orjson might read differently from the bounded decoder: an integer of
#: 19+ digits may pass 64 bits (orjson returns a float), and a literal longer than
#: MAX_NUMBER_CHARS holds at least one run of 33 digits (at most 4 of its characters are not).
_LONG_RUN = 19
#: Every ASCII digit byte to ``0``, every other byte to a space: a run of digits in the text is
#: then a run of ``0`` in the bytes. UTF-8 writes a non-ASCII character with bytes >= 0x80 only,
#: so no byte of one can be taken for a digit.
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_ZEROS = b"0" * _LONG_RUN


def _long_digit_run(text: str) -> bool:
    """True when ``text`` holds a run of at least 19 ASCII digits (``re.search("[0-9]{19}")``).

    Two C passes over the bytes and one substring search: the regex tried a match at every
    character and cost four times orjson's whole parse of a System One reply (callgrind: 75,000
    instructions of a request's 1.1 million; issue 30's batch A/B). ``surrogatepass`` because a
    caller's text may hold a lone surrogate, which is not a digit either."""
    return _ZEROS in text.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZERO)


@functools.cache
def _orjson() -> tuple[Callable[[str], Any], type[Exception]]:
    import orjson  # a dependency; imported on the first decode, not at CLI start

    return orjson.loads, orjson.JSONDecodeError


def depth_error() -> JsonLimitError:
    return JsonLimitError(f"nested more than {MAX_DEPTH} levels deep")


def loads(data: str | bytes | bytearray) -> Any:
    """Decode one JSON document within the bounds above. Raises :class:`JsonLimitError` for a
    broken bound, :class:`json.JSONDecodeError` for text that is not JSON and
    :class:`UnicodeDecodeError` for bytes that are not UTF-8."""
    if isinstance(data, bytes | bytearray):
        data = bytes(data)
        text = data.decode("utf-8-sig") if data[:3] == b"\xef\xbb\xbf" else data.decode("utf-8")
    else:
        text = data
    # Bracket depth is checked on the bytes first; a cheap count of brackets skips the scan for
    # flat documents (most states and every answer have far fewer brackets than the bound).
    if text.count("[") + text.count("{") > MAX_DEPTH and _too_deep(text):
        raise depth_error()
    if not _long_digit_run(text):
        # orjson parses the ordinary document (a response body, a batch line) in a tenth of the
        # stdlib's time (issue 32: a packed reply's decode was a tenth of a packed run's CPU),
        # to the same values: the same doubles, the last of repeated keys, in order. Whatever
        # it refuses goes to the stdlib decoder below, which says why in its own words; the
        # bounds it would not apply are settled before: depth above, and a run of 19 digits
        # (an integer orjson reads as a float past 64 bits, or a literal that may pass
        # MAX_NUMBER_CHARS) takes the bounded decoder. NaN, Infinity and 1e999 orjson refuses.
        # A differential test holds both paths to the same result.
        fast, refused = _orjson()
        try:
            return fast(text)
        except refused:
            pass
    try:
        return _DECODER.decode(text)
    except RecursionError:  # pragma: no cover - the scan above refuses this first
        raise depth_error() from None


class _Duplicate(Exception):
    """Raised by the pairs hook at an object with a repeated key: the text is then decoded
    again without it, and :func:`duplicate_key` says which key and where."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) < len(pairs):
        raise _Duplicate
    return obj


_CHECKING_DECODER = json.JSONDecoder(
    parse_int=_int, parse_float=_float, parse_constant=_constant, object_pairs_hook=_pairs
)


def loads_noting_duplicates(data: str | bytes | bytearray) -> tuple[Any, tuple[str, int] | None]:
    """:func:`loads`, and the first key that an object of the document repeats with the line
    of its second occurrence (``None`` when no key repeats). A JSON object with a key twice
    keeps the last value silently (RFC 8259 leaves it open); a YAML state refuses it, and a
    JSON state's reader says so on stderr (issue 31 item 21)."""
    if isinstance(data, bytes | bytearray):
        data = bytes(data)
        text = data.decode("utf-8-sig") if data[:3] == b"\xef\xbb\xbf" else data.decode("utf-8")
    else:
        text = data
    if text.count("[") + text.count("{") > MAX_DEPTH and _too_deep(text):
        raise depth_error()
    try:
        return _CHECKING_DECODER.decode(text), None
    except _Duplicate:
        return loads(text), duplicate_key(text)
    except RecursionError:  # pragma: no cover - the scan above refuses this first
        raise depth_error() from None


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]', re.DOTALL)


def duplicate_key(text: str) -> tuple[str, int] | None:
    """The first key (in text order) that repeats inside one object of the JSON ``text``, and
    the 1-based line of its repetition; ``None`` when none does. One regex pass over strings and
    brackets: run on the error path only."""
    stack: list[set[str] | None] = []  # per open bracket: an object's keys, or None (array)
    expect_key = False
    for m in _TOKENS.finditer(text):
        token = m.group()
        if token == "{":
            stack.append(set())
            expect_key = True
        elif token == "[":
            stack.append(None)
            expect_key = False
        elif token in "]}":
            if stack:
                stack.pop()
            expect_key = False
        elif token == ",":
            expect_key = bool(stack) and stack[-1] is not None
        elif token == ":":
            expect_key = False
        elif expect_key:
            keys = stack[-1]
            assert keys is not None
            key = json.loads(token)
            if key in keys:
                return key, text.count("\n", 0, m.start()) + 1
            keys.add(key)
            expect_key = False
    return None


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` that refuses NaN/Infinity (a ValueError) instead of writing them."""
    return json.dumps(value, allow_nan=False, **kwargs)


#: An int with more bits than this has more than MAX_NUMBER_CHARS digits; below it, the digits
#: are counted (``len(str(v))`` is cheap for ints this small, and never hits CPython's limit).
_MAX_INT_BITS = 340
_CONSTANTS = {math.inf: "Infinity", -math.inf: "-Infinity"}


def _surrogate(text: str) -> str | None:
    """The first lone surrogate in ``text`` as ``U+XXXX``, or None (ASCII is the fast path)."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        return f"U+{ord(text[e.start]):04X}"
    return None


def _where(path: tuple[Any, ...] | None) -> str:
    keys: list[str] = []
    while path is not None:
        path, key = path
        keys.append(f"[{key!r}]" if isinstance(key, int) else f'["{key}"]')
    shown = "state" + "".join(reversed(keys))
    return shown if len(shown) <= 80 else shown[:79] + "…"


def value_problem(value: Any, *, opaque: tuple[type, ...] = ()) -> str | None:
    """Why ``value`` (a host's state) is not a JSON value within the bounds above, naming where
    (``state["items"][2]: NaN is not JSON``), or None. The same rules :func:`loads` holds text
    to: nesting past MAX_DEPTH, a number past MAX_NUMBER_CHARS characters, NaN and infinities;
    and what text cannot carry: a type JSON has no value for, a key that is not a string, a lone
    surrogate (not UTF-8). ``opaque`` types are leaves the caller handles (images).

    Iterative, so a 100,000-deep list is an answer, not a RecursionError; a path is built only
    for the error, so a valid state costs one visit per value."""
    stack: list[tuple[Any, int, tuple[Any, ...] | None]] = [(value, 0, None)]
    while stack:
        v, depth, path = stack.pop()
        t = type(v)
        if t is str:
            bad = _surrogate(v)
            if bad is not None:
                return f"{_where(path)}: a string with a lone surrogate ({bad}) is not UTF-8 text"
        elif v is None or t is bool:
            continue
        elif isinstance(v, int):
            if v.bit_length() > _MAX_INT_BITS or len(str(v)) > MAX_NUMBER_CHARS:
                digits = len(str(v)) if v.bit_length() < 14_000 else "thousands of"
                return (
                    f"{_where(path)}: a number of {digits} characters (at most "
                    f"{MAX_NUMBER_CHARS} are accepted)"
                )
        elif isinstance(v, float):
            if not math.isfinite(v):
                return f"{_where(path)}: {_CONSTANTS.get(v, 'NaN')} is not JSON"
        elif isinstance(v, Mapping | list | tuple):
            if depth >= MAX_DEPTH:
                return f"a state must not nest more than {MAX_DEPTH} levels of objects/arrays"
            if isinstance(v, Mapping):
                for k, x in v.items():
                    if type(k) is not str and not isinstance(k, str):
                        return (
                            f"{_where(path)}: an object key must be a string, got "
                            f"{type(k).__name__}"
                        )
                    bad = _surrogate(k)
                    if bad is not None:
                        return f"{_where(path)}: an object key with a lone surrogate ({bad})"
                    stack.append((x, depth + 1, (path, k)))
            else:
                stack.extend((x, depth + 1, (path, i)) for i, x in enumerate(v))
        elif not isinstance(v, opaque):
            return f"{_where(path)}: a {t.__name__} is not a JSON value"
    return None
