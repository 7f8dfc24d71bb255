"""Issue 32's CPU cut in ``jsonlimits.loads``: orjson parses the ordinary document, the bounded
stdlib decoder everything else, and both give the same values (types, float bits, key order,
the last of repeated keys) or the same error."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolnexus.core import jsonlimits
from toolnexus.core.jsonlimits import JsonLimitError, loads


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a.hex() == b.hex()
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _bounded(text: str) -> Any:
    return jsonlimits._DECODER.decode(text)


def _outcome(decode: Any, text: str) -> tuple[str, Any]:
    try:
        return "ok", decode(text)
    except (ValueError, UnicodeDecodeError) as e:
        return "error", f"{type(e).__name__}: {e}"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"model":"m","answers":{"0:a":{"type":"noul","noul":0.73}}}', id="answer"),
        pytest.param('{"a":1,"b":2,"a":3}', id="repeated-key-last-wins-in-first-place"),
        pytest.param("[-0, -0.0, 1e-999, 1E5, 0.1]", id="zeros-and-exponents"),
        pytest.param("9223372036854775807", id="int64-max"),
        pytest.param("-9999999999999999999", id="19-digits-past-int64"),
        pytest.param("123456789012345678901234567890", id="past-64-bits"),
        pytest.param("0." + "1" * 120, id="a-literal-past-100-characters"),
        pytest.param("1e999", id="overflow"),
        pytest.param("[NaN]", id="nan"),
        pytest.param('"\\ud800"', id="lone-surrogate"),
        pytest.param('"\\ud83d\\ude00"', id="surrogate-pair"),
        pytest.param("[1,]", id="trailing-comma"),
        pytest.param("01", id="leading-zero"),
    ],
)
def test_loads_is_the_bounded_decoder_value_for_value(text: str) -> None:
    got, want = _outcome(loads, text), _outcome(_bounded, text)
    assert got[0] == want[0]
    if want[0] == "ok":
        assert _same(got[1], want[1])
    else:
        assert got == want  # the message is the bounded decoder's own


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(_JSON)
def test_any_document_decodes_as_the_bounded_decoder_decodes_it(value: Any) -> None:
    text = json.dumps(value)
    assert _same(loads(text), _bounded(text))
    assert _same(loads(text.encode()), _bounded(text))


def test_an_ordinary_body_never_reaches_the_stdlib_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the cut: a packed reply is parsed once, by orjson."""
    calls: list[str] = []

    class Counting(json.JSONDecoder):
        def decode(self, s: str, *args: Any, **kwargs: Any) -> Any:
            calls.append(s)
            return super().decode(s, *args, **kwargs)

    bounded = Counting(
        parse_int=jsonlimits._int,
        parse_float=jsonlimits._float,
        parse_constant=jsonlimits._constant,
    )
    monkeypatch.setattr(jsonlimits, "_DECODER", bounded)
    body = {"model": "jev-1", "answers": {f"{i}:refund": {"type": "noul", "noul": 0.25}
            for i in range(32)}, "usage": {"input_tokens": 1234, "output_tokens": 96}}  # fmt: skip
    assert loads(json.dumps(body).encode()) == body
    assert calls == []
    with pytest.raises(JsonLimitError, match="NaN and Infinity are refused"):
        loads(b'{"noul": NaN}')
    assert len(calls) == 1 and math.isfinite(loads(b"1.5"))


def _too_deep_by_regex(text: str) -> bool:
    """The depth scan as it was: strings removed by the regex alone."""
    brackets = jsonlimits._NOT_BRACKETS.sub("", jsonlimits._STRINGS.sub("", text))
    for _ in range(jsonlimits.MAX_DEPTH):
        shorter = jsonlimits._INNERMOST.sub("", brackets)
        if not shorter or len(shorter) == len(brackets):
            return False
        brackets = shorter
    return True


@given(
    st.lists(
        st.sampled_from(['"', "\\", "[", "]", "{", "}", "a", ":", ",", "[" * 40, "{" * 30]),
        max_size=60,
    )
)
def test_the_depth_scan_skips_strings_as_the_regex_does(pieces: list[str]) -> None:
    """The scan splits on quotes when no backslash can escape one (issue 32: a seventh of the
    regex's cost on a packed reply); on any text it says what the regex scan says."""
    text = "".join(pieces)
    assert jsonlimits._too_deep(text) == _too_deep_by_regex(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("[" * 65 + '"]]]"' + "]" * 65, id="deep-with-brackets-in-a-string"),
        pytest.param("[" * 64 + '"[[[["' + "]" * 64, id="at-the-bound"),
        pytest.param('{"a":' * 65 + '"}"' + "}" * 65, id="deep-objects"),
        pytest.param("[" * 65 + '"\\"]"' + "]" * 65, id="escaped-quote-takes-the-regex"),
        pytest.param("[" * 70 + '"open' + "]" * 70, id="unterminated-string"),
    ],
)
def test_the_depth_scan_on_deep_texts(text: str) -> None:
    assert jsonlimits._too_deep(text) == _too_deep_by_regex(text)
