"""Issue 30's acceptance, "bench/ ratios no worse than before": the batch A/B found a System One
reply's decode costing more than before the structure pass, all of it in the regex that looks
for a 19-digit run before orjson may parse (``re.search("[0-9]{19}")`` tried a match at every
character: 75,000 of a request's 1.1 million instructions under callgrind). The run is now found
by a byte translation and one substring search. Pinned here by what the scan says (the regex's
answer on any text) and by a count (no regex call while an ordinary reply is decoded), never by
a time."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolnexus.core import jsonlimits
from toolnexus.core.jsonlimits import loads

#: The definition the scan keeps: the regex ``loads`` used before.
_BY_REGEX = re.compile(r"[0-9]{19}")

_REPLY = (
    '{"model": "jev-1.13.0", "answers": {"refund": {"type": "noul", "noul": 0.06}, "team": '
    '{"type": "choice", "choice": "account", "confidence": 0.14, "probabilities": {"account": '
    '0.43, "billing": 0.16, "technical": 0.41}}, "urgency": {"type": "score", "score": 0.96, '
    '"confidence": 0.25, "legend": {"0": "Routine", "1": "Needs attention today", "2": '
    '"Service unavailable"}, "probabilities": {"0": 0.27, "1": 0.5, "2": 0.23}}}, "usage": '
    '{"input_tokens": 221, "output_tokens": 18}}'
)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("1" * 18, id="18-digits"),
        pytest.param("1" * 19, id="19-digits"),
        pytest.param("0." + "3" * 17 + "1", id="18-digit-fraction"),
        pytest.param("-" + "9" * 19, id="19-digits-signed"),
        pytest.param("1" * 9 + "." + "1" * 10, id="split-by-a-point"),
        pytest.param("é" + "7" * 19 + "é", id="between-non-ascii"),
        pytest.param("\ud800" + "7" * 19, id="after-a-lone-surrogate"),
        pytest.param("１" * 30, id="fullwidth-digits-are-not-json-digits"),
        pytest.param("٣" * 30, id="arabic-indic-digits-are-not-json-digits"),
        pytest.param("9" * 18 + "\u0660" + "9", id="a-non-ascii-digit-breaks-the-run"),
        pytest.param(_REPLY, id="a-system-one-reply"),
    ],
)
def test_the_digit_scan_says_what_the_regex_says(text: str) -> None:
    assert jsonlimits._long_digit_run(text) == (_BY_REGEX.search(text) is not None)


@given(st.text(alphabet=st.sampled_from("0123456789.-e é١\ud800")) | st.text())
def test_the_digit_scan_says_what_the_regex_says_on_any_text(text: str) -> None:
    assert jsonlimits._long_digit_run(text) == (_BY_REGEX.search(text) is not None)


@contextmanager
def _c_calls() -> Iterator[list[str]]:
    """The built-in functions and methods called while the block runs (``sys.setprofile``'s
    ``c_call`` events), by name."""
    calls: list[str] = []

    def profile(_frame: Any, event: str, arg: Any) -> None:
        if event == "c_call":
            calls.append(getattr(arg, "__qualname__", repr(arg)))

    before = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(before)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(_REPLY, id="text"),
        pytest.param(_REPLY.encode(), id="bytes"),
    ],
)
def test_an_ordinary_reply_is_decoded_without_a_regex_call(body: str | bytes) -> None:
    """Issue 30's acceptance ("no worse than before"): the reply of every request is checked for
    a long digit run before orjson parses it; that check makes no regex call (it made one
    ``Pattern.search`` per reply, four times the cost of the parse itself)."""
    loads(body)  # orjson imported on the first decode: outside the count
    with _c_calls() as calls:
        assert loads(body)["usage"] == {"input_tokens": 221, "output_tokens": 18}
    assert [c for c in calls if c.startswith("Pattern.")] == []
