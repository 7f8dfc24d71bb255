"""Canonical bytes (seed 001 'What the byte-identity claim covers') and the seed 004 cache keys."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus import (
    ChoiceQuestion,
    ClassifierError,
    NoulCriteria,
    NoulQuestion,
    ScoreQuestion,
    canonical_json,
    canonical_request,
    decision_cache_key,
    model_cache_key,
    sha256_hex,
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5)
    ),
    max_leaves=30,
)


def _shuffled(value: Any, rng: random.Random) -> Any:
    """The same JSON value with every object's insertion order shuffled (arrays untouched)."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    return value


@settings(max_examples=200)
@given(json_values, st.integers())
def test_stable_under_dict_insertion_order(value: Any, seed: int) -> None:
    """'object keys sorted recursively': insertion order never reaches the bytes."""
    assert canonical_json(_shuffled(value, random.Random(seed))) == canonical_json(value)


@settings(max_examples=200)
@given(json_values)
def test_round_trips_json_values(value: Any) -> None:
    assert json.loads(canonical_json(value)) == value


@settings(max_examples=100)
@given(st.lists(st.text(), max_size=8))
def test_arrays_never_reordered(items: list[str]) -> None:
    """'arrays are NEVER reordered — a score rubric's order is its level numbering'."""
    assert json.loads(canonical_json({"a": items}))["a"] == items


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param({"b": 1, "a": 2}, b'{"a":2,"b":1}', id="sorted-compact"),
        pytest.param({"x": "<>&'\""}, b'{"x":"<>&\'\\""}', id="html-raw-quote-escaped-by-json"),
        pytest.param({"k": "café 日本"}, '{"k":"café 日本"}'.encode(), id="non-ascii-raw"),
        pytest.param(
            {"beta": 0, "Alpha": 0, "10_alpha": 0, "café": 0},
            '{"10_alpha":0,"Alpha":0,"beta":0,"café":0}'.encode(),
            id="ascii-order",
        ),
        pytest.param([3, 1, 2], b"[3,1,2]", id="array-order"),
    ],
)
def test_canonical_json_examples(value: Any, expected: bytes) -> None:
    assert canonical_json(value) == expected


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {1: object()}, {"k": {1, 2}}])
def test_not_json_is_a_classifier_error(bad: Any) -> None:
    with pytest.raises(ClassifierError, match="not canonical JSON"):
        canonical_json(bad)


def test_absent_criteria_is_not_empty_criteria() -> None:
    """seed 001: 'A NoulQuestion with criteria=None emits no criteria key at all. One with
    NoulCriteria() emits both keys with empty strings.'"""
    assert b"criteria" not in canonical_request("m", {"q": NoulQuestion("holds?")})
    assert b'"criteria":{"false":"","true":""}' in canonical_request(
        "m", {"q": NoulQuestion("holds?", NoulCriteria())}
    )


def test_keys_are_addressing_but_sorted_into_the_request() -> None:
    a = canonical_request(
        "m", {"b": ChoiceQuestion("x", {"z": "1", "a": "2"}), "a": NoulQuestion("y")}
    )
    assert a.index(b'"a":') < a.index(b'"b":')
    assert b'"criteria":{"a":"2","z":"1"}' in a


def test_score_rubric_order_survives() -> None:
    assert b'"criteria":["zebra","alpha"]' in canonical_request(
        "m", {"u": ScoreQuestion("how urgent?", ["zebra", "alpha"])}
    )


def test_structured_score_levels_sent_as_written() -> None:
    got = canonical_request(
        "m", {"u": ScoreQuestion("?", [{"label": "low", "description": "d"}, "high"])}
    )
    assert b'"criteria":[{"description":"d","label":"low"},"high"]' in got


def test_sha256_hex_of_text_and_bytes() -> None:
    assert (
        sha256_hex("abc")
        == sha256_hex(b"abc")
        == ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    )


def test_decision_cache_key_is_seed_004_decision_key() -> None:
    """decisionKey = sha256hex(canon({assets?, endpoint, kind:"decision", model:<served>,
    questions, state})); an empty or None assets omits the member."""
    qs = {"q": NoulQuestion("holds?")}
    body = {
        "endpoint": "https://${HOST}/v1",
        "kind": "decision",
        "model": "jev-1.13.0",
        "questions": {"q": {"instructions": "holds?", "type": "noul"}},
        "state": {"b": 1, "a": "x"},
    }
    want = sha256_hex(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    key = decision_cache_key("https://${HOST}/v1", "jev-1.13.0", {"b": 1, "a": "x"}, qs)
    assert key == want
    assert (
        decision_cache_key("https://${HOST}/v1", "jev-1.13.0", {"b": 1, "a": "x"}, qs, {}) == want
    )
    with_assets = decision_cache_key(
        "https://${HOST}/v1", "jev-1.13.0", {"b": 1, "a": "x"}, qs, {"img": {"type": "image"}}
    )
    assert with_assets != want
    assert decision_cache_key("https://${HOST}/v1", "jev-1.13.1", {"b": 1, "a": "x"}, qs) != want


def test_model_cache_key_is_seed_004_model_key() -> None:
    want = sha256_hex(
        '{"endpoint":"https://api.typesafe.ai/v1","kind":"model","model":"jev-latest"}'
    )
    assert model_cache_key("https://api.typesafe.ai/v1", "jev-latest") == want
