"""Issue 16 item 1: "typed configuration values, each defined once and passed as objects" and
"create_classifier gets an explicit, keyword-only, fully typed signature (every seed option
named, documented in its docstring); ClassifierOptions and that signature must not drift".
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from typing import Any

import httpx
import pytest

from paths import TESTS
from toolnexus import ClassifierOptions, ConfigError, create_classifier
from toolnexus.config import BatchOptions, RetryPolicy, Timeout
from toolnexus.config.options import option_names

SEED_004 = next((TESTS / "fixtures" / "seeds").glob("004_*.txt"))


def _seed_options() -> set[str]:
    """The ``:option`` names of seed 004's create-classifier entry, in Python spelling."""
    text = SEED_004.read_text(encoding="utf-8")
    entry = text[text.index("(create-classifier opts)") : text.index("decision-cache-key clj/s")]
    # An option opens a clause: ":name " followed by its description, after a space or start.
    names = set(re.findall(r"(?:^|\s):([a-z][a-z-]*)\s", entry))
    # Not options: keys of option VALUES (supports, cache, decisions, on_error's verdicts), and
    # the two the seed names to say they are absent (":api-key takes a value; this option
    # deliberately does not", "no :suspend tier").
    names -= {"images", "get", "set", "state", "questions", "response", "retry", "fail"}
    names -= {"api-key", "suspend"}
    return {n.replace("-", "_") for n in names}


def test_every_seed_option_is_a_classifier_option() -> None:
    """seed 004: 'Options mirror §8 create-client field-for-field': every option it names."""
    seed = _seed_options()
    assert {"style", "base_url", "timeout_ms", "retry_base_ms", "on_error", "cache"} <= seed
    assert seed <= set(option_names()), sorted(seed - set(option_names()))


def test_the_signature_is_the_options_fields() -> None:
    """One list: create_classifier's parameters are ClassifierOptions' init fields, same order,
    same defaults, same annotations, all keyword-only."""
    params = inspect.signature(create_classifier).parameters
    fields = [f for f in dataclasses.fields(ClassifierOptions) if f.init]
    assert list(params) == [f.name for f in fields] == list(option_names())
    hints = typing.get_type_hints(ClassifierOptions)
    for f in fields:
        p = params[f.name]
        assert p.kind is inspect.Parameter.KEYWORD_ONLY, f.name
        assert p.default == f.default, f.name
        assert p.annotation is not inspect.Parameter.empty, f.name
        assert f.name in hints, f.name


def test_the_docstring_documents_every_option() -> None:
    doc = inspect.getdoc(create_classifier) or ""
    missing = [name for name in option_names() if f"``{name}``" not in doc]
    assert not missing


def test_an_unknown_option_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown option 'retrys'; known options: .*retries"):
        create_classifier(retrys=1)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("options", "seconds"),
    [
        pytest.param({}, 10.0, id="default"),
        pytest.param({"timeout": 2}, 2.0, id="seconds"),
        pytest.param({"timeout": Timeout(0.25)}, 0.25, id="a-Timeout"),
        pytest.param({"timeout_ms": 1500}, 1.5, id="seed-timeout_ms"),
    ],
)
def test_timeout_is_converted_once_into_a_timeout(options: dict[str, Any], seconds: float) -> None:
    """'seconds in the value; the seed-named options keep working and are converted once'."""
    assert ClassifierOptions(**options).request_timeout == Timeout(seconds)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param(
            {"timeout": 1, "timeout_ms": 1000}, "timeout= (seconds) or timeout_ms=", id="both"
        ),
        pytest.param({"timeout_ms": 0}, "timeout_ms must be a whole number", id="ms-zero"),
        pytest.param({"timeout_ms": 1.5}, "timeout_ms must be a whole number", id="ms-float"),
        pytest.param({"timeout": float("inf")}, "timeout must be a number of seconds", id="inf"),
        pytest.param({"retries": -1}, "retries must be a whole number >= 0", id="retries"),
        pytest.param({"retry_base_ms": 0.5}, "retry_base_ms must be a whole number", id="base"),
        pytest.param(
            {"retry_base_ms": 10**400},
            "below 86400000, got an integer of about 401 digits",
            id="base-huge",
        ),
        pytest.param(
            {"timeout_ms": 10**5000},
            "below 86400000, got an integer of about 5001 digits",
            id="ms-past-python-int-str-limit",
        ),
        pytest.param({"timeout": 10**400}, "below 86400, got an integer of", id="seconds-huge"),
        pytest.param({"retryable_statuses": [99]}, "holds 99, not an HTTP status", id="status"),
        pytest.param({"on_error": "retry"}, "on_error must be callable", id="on_error"),
    ],
)
def test_a_bad_value_is_refused_when_the_options_are_built(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        ClassifierOptions(**options)


def test_the_retry_policy_is_built_from_the_seed_names() -> None:
    def on_error(info: Any) -> Any:
        return "fail"

    opts = ClassifierOptions(
        retries=5, retry_base_ms=250, retryable_statuses=[520, 521], on_error=on_error
    )
    assert opts.retry_policy == RetryPolicy(5, 0.25, frozenset({520, 521}), on_error)
    assert opts.retry_policy.retryable >= {429, 520, 521}
    assert [opts.retry_policy.delay(n) for n in range(3)] == [0.25, 0.5, 1.0]


@pytest.mark.parametrize("style", ["systemone", "llm"])
def test_the_values_reach_the_transport_unchanged(style: str) -> None:
    """'travel from ClassifierOptions to the style to the transport unchanged': the same
    objects, not copies rebuilt from loose keywords."""
    extra = {"llm_model": "gpt-x"} if style == "llm" else {}
    judge = create_classifier(
        style=style, transport=httpx.MockTransport(lambda r: httpx.Response(500)), **extra
    )
    style_obj: Any = judge.pipeline.style
    transport = style_obj.transport if style == "systemone" else style_obj._transport
    assert transport.retry is judge.options.retry_policy
    assert transport.timeout is judge.options.request_timeout


@pytest.mark.parametrize("value", [RetryPolicy(), Timeout(), BatchOptions()], ids=type)
def test_the_values_are_frozen(value: Any) -> None:
    field = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, 1)


def test_the_env_name_rule_is_written_once() -> None:
    """Issue 16: 'the env-name rule' was written twice (cli/options.py, redaction's ENV_REF).
    Every user of it holds the one compiled rule of ``toolnexus.core.envname``; the CLI's
    ``--api-key-env`` asks ``toolnexus.config.options`` (issue 30 item 5: each check lives once)."""
    from toolnexus.cli import options as cli_options
    from toolnexus.config import options as lib_options
    from toolnexus.core import envname
    from toolnexus.transport import redaction

    assert lib_options.ENV_NAME is envname.ENV_NAME
    assert not hasattr(cli_options, "ENV_NAME")
    assert not hasattr(redaction, "ENV_REF")  # it imports no copy of the rule, nor names one
    assert envname.ENV_REF.pattern == r"\$\{(" + envname.ENV_NAME.pattern + r")\}"


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        pytest.param("TYPESAFE_API_KEY", True, id="upper"),
        pytest.param("_k9", True, id="underscore-digit"),
        pytest.param("9K", False, id="leading-digit"),
        pytest.param("sk-live-123", False, id="a-pasted-key"),
        pytest.param("K\n", False, id="trailing-newline"),
    ],
)
def test_api_key_env_takes_only_a_variable_name(name: str, ok: bool) -> None:
    if ok:
        assert ClassifierOptions(api_key_env=name).api_key_env == name
    else:
        with pytest.raises(ConfigError, match="is not shown in case it is a key"):
            ClassifierOptions(api_key_env=name)
