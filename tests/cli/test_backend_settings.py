"""Issue 30 item 5: "The CLI's backend ... flags are generated from (or checked field for field
against, in a test) ``ClassifierOptions``; each check lives once."

``BackendSettings`` (the flags) holds the CLI's own settings (``CLI_SETTINGS``) and, for every
other field, the ``ClassifierOptions`` option of the same name: :func:`mismatches` holds each
such field to its option, type for type, and is shown to catch a mismatched pair. The checks of
``--timeout``, ``--retries``, ``--api-key-env`` and ``--llm-api-key-env`` are the library's own
(``toolnexus.config.options.check_option``), their message worded for the flag.
"""

from __future__ import annotations

import types
from dataclasses import MISSING, dataclass, fields
from typing import Any, Union, get_args, get_origin, get_type_hints

import pytest

from toolnexus.cli.backend import classifier_options
from toolnexus.cli.errors import CliError
from toolnexus.cli.options import CLASSIFIER_SETTINGS, CLI_SETTINGS, BackendSettings
from toolnexus.config.options import ClassifierOptions, check_option
from toolnexus.core.errors import ConfigError


def _members(hint: Any) -> set[Any]:
    """The types a hint admits besides None (``float | Timeout | None`` -> {float, Timeout})."""
    if get_origin(hint) in (Union, types.UnionType):
        return {a for a in get_args(hint) if a is not type(None)}
    return {hint}


def mismatches(settings: type, options: type, own: tuple[str, ...]) -> list[str]:
    """Every way the settings dataclass ``settings`` departs from the options dataclass
    ``options``: a field that is neither an option of the same name nor one of ``own``, an own
    field that IS an option (then it is no longer the CLI's own), a field whose type the option
    does not take, or a default other than None (an unset flag must leave the library's
    default in place)."""
    option_hints = get_type_hints(options)
    setting_hints = get_type_hints(settings)
    problems = []
    for f in fields(settings):
        if f.name in own:
            if f.name in option_hints:
                problems.append(f"{f.name}: listed as the CLI's own but is an option")
            continue
        if f.name not in option_hints:
            problems.append(f"{f.name}: no option of that name")
            continue
        extra = _members(setting_hints[f.name]) - _members(option_hints[f.name])
        if extra:
            names = sorted(getattr(t, "__name__", str(t)) for t in extra)
            problems.append(f"{f.name}: the option does not take {', '.join(names)}")
        if f.default is not None or f.default is MISSING:
            problems.append(f"{f.name}: default {f.default!r}, not None")
    return problems


def test_every_backend_setting_is_its_classifier_option_field_for_field() -> None:
    """Item 5: the CLI's backend settings, checked field for field against ClassifierOptions."""
    assert mismatches(BackendSettings, ClassifierOptions, CLI_SETTINGS) == []
    assert CLASSIFIER_SETTINGS == (
        "backend", "base_url", "model", "api_key_env", "timeout", "retries",
        "llm_base_url", "llm_model", "llm_api_key_env",
    )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class _Options:
    timeout: float | None = None
    retries: int = 2
    base_url: str | None = None


@dataclass(frozen=True)
class _Settings:
    timeout: str | None = None  # a type the option does not take
    retriez: int | None = None  # no option of that name
    base_url: str | None = "http://x"  # a default that would override the library's
    replay: str | None = None  # the CLI's own
    retries: int | None = None  # listed as the CLI's own below, but an option


def test_the_field_for_field_check_fails_on_a_mismatched_pair() -> None:
    """Item 5 (brief): "The test that checks field-for-field must be shown to fail on a
    synthetic mismatched pair"."""
    assert mismatches(_Settings, _Options, ("replay", "retries")) == [
        "timeout: the option does not take str",
        "retriez: no option of that name",
        "base_url: default 'http://x', not None",
        "retries: listed as the CLI's own but is an option",
    ]


@pytest.mark.parametrize(
    ("settings", "line"),
    [
        pytest.param(
            {"timeout": 0.0},
            "--timeout must be a number of seconds above 0 and below 86400, got 0.0",
            id="timeout-zero",
        ),
        pytest.param(
            {"timeout": 1e9},
            "--timeout must be a number of seconds above 0 and below 86400, got 1000000000.0",
            id="timeout-past-a-day",
        ),
        pytest.param(
            {"retries": -1}, "--retries must be a whole number >= 0, got -1", id="retries"
        ),
        pytest.param(
            {"api_key_env": "sk-live-secret"},
            "--api-key-env takes the NAME of an environment variable (letters, digits and _, "
            "like TYPESAFE_API_KEY); the value given is not one, and is not shown in case it is "
            "a key",
            id="api-key-env",
        ),
        pytest.param(
            {"llm_api_key_env": "sk-live-secret"},
            "--llm-api-key-env takes the NAME of an environment variable (letters, digits and "
            "_, like TYPESAFE_API_KEY); the value given is not one, and is not shown in case it "
            "is a key",
            id="llm-api-key-env",
        ),
    ],
)
def test_each_check_is_the_librarys_worded_for_the_flag(
    settings: dict[str, Any], line: str
) -> None:
    """Item 5: "retries and timeout are checked twice" -> each check lives once, in
    toolnexus.config.options, and the CLI maps its error to the flag (a --timeout past a day was
    let through by the CLI's own check and refused later by the library's)."""
    ((name, value),) = settings.items()
    with pytest.raises(ConfigError) as library:
        check_option(name, value)
    with pytest.raises(ConfigError):
        ClassifierOptions(**settings)
    with pytest.raises(CliError) as flag:
        BackendSettings(**settings)
    assert str(flag.value) == line
    assert library.value.detail.removeprefix(name) == line.removeprefix(
        "--" + name.replace("_", "-")
    )
    assert "sk-live-secret" not in str(flag.value)


def test_the_settings_reach_create_classifier_by_their_option_names() -> None:
    """Item 5: classifier_options passes the derived settings, not a third list of names."""
    opts = classifier_options(
        BackendSettings(
            backend="custom", base_url="http://127.0.0.1:1/v1", model="m",
            api_key_env="K", timeout=5.0, retries=1, llm_base_url="http://l",
        )
    )  # fmt: skip
    assert opts == {
        "style": "systemone", "model": "m", "backend": "custom",
        "base_url": "http://127.0.0.1:1/v1", "api_key_env": "K", "timeout": 5.0, "retries": 1,
        "supports": {"images": False},
    }  # fmt: skip
    llm = classifier_options(BackendSettings(llm_model="gpt", llm_api_key_env="L"))
    assert llm == {"style": "llm", "llm_model": "gpt", "llm_api_key_env": "L"}
