"""Backend options shared by ``eval`` and ``batch``, and the classifier they build.

Each option is also read from a ``TOOLNEXUS_*`` environment variable. Precedence, highest
first: the flag, the environment variable, the question file (``model:``), the default (the
backend row). The style follows from the options: ``--replay DIR`` answers from recordings
(``static``), ``--llm-model`` asks a chat model (``llm``), anything else speaks System One.

A key is never accepted on the command line: ``--api-key-env`` takes the NAME of the variable
that holds it, read at call time by the transport.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from ..defaults import DEFAULT_RETRIES, DEFAULT_TIMEOUT, MODEL_ENV
from ..envname import ENV_NAME
from .errors import CliError, one_line

if TYPE_CHECKING:
    from ..classifier import Classifier
    from ..decision import Decision
    from ..questions import Question

_PANEL = "Backend"
R = TypeVar("R")

BackendOpt = Annotated[
    str | None,
    typer.Option(
        "--backend",
        envvar="TOOLNEXUS_BACKEND",
        help="typesafe (default), openrouter, cloudflare, vercel or custom.",
        rich_help_panel=_PANEL,
    ),
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        envvar="TOOLNEXUS_BASE_URL",
        help="System One base URL; ${NAME} expands from the environment at call time.",
        rich_help_panel=_PANEL,
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        envvar=MODEL_ENV,
        help="Model to request (wins over the question file's model:).",
        rich_help_panel=_PANEL,
    ),
]
ApiKeyEnvOpt = Annotated[
    str | None,
    typer.Option(
        "--api-key-env",
        envvar="TOOLNEXUS_API_KEY_ENV",
        help="NAME of the environment variable holding the key (never the key itself).",
        rich_help_panel=_PANEL,
    ),
]
TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        envvar="TOOLNEXUS_TIMEOUT",
        help=f"Seconds one request may take (default {DEFAULT_TIMEOUT:g}).",
        rich_help_panel=_PANEL,
    ),
]
RetriesOpt = Annotated[
    int | None,
    typer.Option(
        "--retries",
        envvar="TOOLNEXUS_RETRIES",
        help=f"Retries of a transient failure (default {DEFAULT_RETRIES}; 0 = one attempt only).",
        rich_help_panel=_PANEL,
    ),
]
LlmBaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--llm-base-url",
        envvar="TOOLNEXUS_LLM_BASE_URL",
        help="OpenAI-compatible chat endpoint for the llm style.",
        rich_help_panel=_PANEL,
    ),
]
LlmModelOpt = Annotated[
    str | None,
    typer.Option(
        "--llm-model",
        envvar="TOOLNEXUS_LLM_MODEL",
        help="Chat model; setting it selects the llm style (reports calibrated: false).",
        rich_help_panel=_PANEL,
    ),
]
LlmApiKeyEnvOpt = Annotated[
    str | None,
    typer.Option(
        "--llm-api-key-env",
        envvar="TOOLNEXUS_LLM_API_KEY_ENV",
        help="NAME of the environment variable holding the chat endpoint's key.",
        rich_help_panel=_PANEL,
    ),
]
ReplayOpt = Annotated[
    Path | None,
    typer.Option(
        "--replay",
        envvar="TOOLNEXUS_REPLAY",
        help="Answer from the recordings in DIR: no network, no key.",
        metavar="DIR",
        rich_help_panel=_PANEL,
    ),
]
#: Shared by eval and batch: the conditions that turn a result into exit 1, and the band
#: cut-points (parsed by ``parse_fail_on`` / ``parse_thresholds`` below).
FailOnOpt = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        help="Exit 1 when any result is near-uniform,uncalibrated,uncertain,invalid (comma list).",
    ),
]
ThresholdsOpt = Annotated[
    str | None,
    typer.Option(
        "--thresholds",
        help="Band cut-points, e.g. yes=0.8,no=0.2,min_confidence=0.6 (inclusive).",
    ),
]
SupportsImagesOpt = Annotated[
    bool | None,
    typer.Option(
        "--supports-images/--no-supports-images",
        envvar="TOOLNEXUS_SUPPORTS_IMAGES",
        help="Declare whether the backend takes images, overriding its row (custom: default no).",
        rich_help_panel=_PANEL,
        show_default=False,
    ),
]
RecordOpt = Annotated[
    Path | None,
    typer.Option(
        "--record",
        envvar="TOOLNEXUS_RECORD",
        help="Write every live exchange into DIR as a recording.",
        metavar="DIR",
        rich_help_panel=_PANEL,
    ),
]


def _check_env_name(flag: str, value: str | None) -> None:
    if value is not None and not ENV_NAME.fullmatch(value):
        # Never echo the value: it may be the key itself.
        raise CliError(
            f"{flag} takes the NAME of an environment variable (like TYPESAFE_API_KEY), "
            "not a key; the value given is not a variable name and was not shown"
        )


@dataclass(frozen=True)
class BackendSettings:
    """The backend options after flag and environment, before the question file and defaults."""

    # Each field IS its command-line option (its Annotated alias above): ``backend_options``
    # gives every command that takes it the whole set, so a new option is one field here.
    backend: BackendOpt = None
    base_url: BaseUrlOpt = None
    model: ModelOpt = None
    api_key_env: ApiKeyEnvOpt = None
    timeout: TimeoutOpt = None
    retries: RetriesOpt = None
    llm_base_url: LlmBaseUrlOpt = None
    llm_model: LlmModelOpt = None
    llm_api_key_env: LlmApiKeyEnvOpt = None
    replay: ReplayOpt = None
    record: RecordOpt = None
    #: ``--supports-images``: the classifier's ``supports={"images": ...}``; None: the row's
    supports_images: SupportsImagesOpt = None

    def __post_init__(self) -> None:
        _check_env_name("--api-key-env", self.api_key_env)
        _check_env_name("--llm-api-key-env", self.llm_api_key_env)
        if self.timeout is not None and not self.timeout > 0:
            raise CliError(f"--timeout must be a positive number of seconds, got {self.timeout}")
        if self.retries is not None and self.retries < 0:
            raise CliError(f"--retries must be 0 or more, got {self.retries}")
        if self.replay is not None and self.record is not None:
            raise CliError("--replay and --record exclude each other: replaying sends nothing")
        if self.replay is not None and not self.replay.is_dir():
            raise CliError(f"--replay {self.replay}: no such directory of recordings")
        if self.record is not None and self.record.exists() and not self.record.is_dir():
            raise CliError(f"--record {self.record}: exists and is not a directory")

    @property
    def style(self) -> str:
        """``static`` with --replay, ``llm`` with --llm-model, else ``systemone``."""
        if self.replay is not None:
            return "static"
        if self.llm_model is not None:
            return "llm"
        return "systemone"


def backend_options(command: Callable[..., R]) -> Callable[..., R]:
    """``command`` with one option per ``BackendSettings`` field appended to its parameters, in
    field order (what Typer reads to parse and to print ``--help``). Their values reach
    ``command`` as one mapping, its keyword-only ``backend_values`` parameter, from which it
    builds ``BackendSettings(**backend_values)`` where it checks its other input (so errors
    keep their order)."""
    import functools
    import inspect
    from dataclasses import fields
    from typing import get_type_hints

    names = [f.name for f in fields(BackendSettings)]
    types = get_type_hints(BackendSettings, include_extras=True)
    hints = get_type_hints(command, include_extras=True)
    own = [
        p.replace(annotation=hints[p.name])
        for p in inspect.signature(command).parameters.values()
        if p.name != "backend_values"
    ]
    added = [
        inspect.Parameter(
            n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=types[n]
        )
        for n in names
    ]

    @functools.wraps(command)
    def with_options(*args: Any, **kwargs: Any) -> R:
        chosen = {n: kwargs.pop(n, None) for n in names}
        return command(*args, **kwargs, backend_values=chosen)

    parameters = own + added
    with_options.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        parameters, return_annotation=hints.get("return", inspect.Signature.empty)
    )
    with_options.__annotations__ = {p.name: p.annotation for p in parameters}
    if "return" in hints:
        with_options.__annotations__["return"] = hints["return"]
    return with_options


def model_for(settings: BackendSettings, file_model: str | None) -> str | None:
    """flag > env > question file > the backend row's model (None: the library's default)."""
    from ..defaults import resolve_model

    return resolve_model(settings.model, file_model, default=None)


def classifier_options(
    settings: BackendSettings,
    *,
    file_model: str | None = None,
    on_metric: Callable[[dict[str, Any]], object] | None = None,
) -> dict[str, Any]:
    """Keyword arguments for ``create_classifier`` (only the options that were set, so the
    library's own defaults stay the defaults)."""
    style = settings.style
    opts: dict[str, Any] = {"style": style}
    model = model_for(settings, file_model)
    if model is not None:
        opts["model"] = model
    if on_metric is not None:
        opts["on_metric"] = on_metric
    if style == "static":
        from ..recordings import load_recordings

        assert settings.replay is not None
        opts["decisions"] = [r.to_recorded_decision() for r in load_recordings(settings.replay)]
        return opts
    for name in ("backend", "base_url", "api_key_env", "timeout", "retries"):
        value = getattr(settings, name)
        if value is not None:
            opts[name] = value
    supports = _supports(settings)
    if supports is not None:
        opts["supports"] = supports
    if style == "llm":
        for name in ("llm_base_url", "llm_model", "llm_api_key_env"):
            value = getattr(settings, name)
            if value is not None:
                opts[name] = value
    return opts


def _supports(settings: BackendSettings) -> dict[str, bool] | None:
    """``supports=`` for the classifier: ``--supports-images`` when given; for ``custom``, which
    must declare it, no images unless the flag says so; else None (the backend row decides)."""
    if settings.supports_images is not None:
        return {"images": settings.supports_images}
    if settings.backend == "custom":
        return {"images": False}
    return None


def live_target(settings: BackendSettings, model: str | None) -> tuple[str, str]:
    """``(endpoint, requested model)`` that a recording names; the endpoint keeps its ``${ENV}``
    references unexpanded, and the model is the backend row's when none was given."""
    if settings.style == "llm":
        return settings.llm_base_url or "", settings.llm_model or ""
    from ..backends import resolve_backend

    row = resolve_backend(
        settings.backend or "typesafe",
        base_url=settings.base_url,
        model=model,
        supports=_supports(settings),
    )
    return f"{row.base_url}/systemone", row.model


@dataclass
class Backend:
    """A classifier built from the settings, plus the recorder ``--record`` asks for."""

    settings: BackendSettings
    classifier: Classifier
    model: str
    endpoint: str

    def record(self, state: Any, questions: Mapping[str, Question], decision: Decision) -> None:
        """Write one live exchange when ``--record`` is set (a cached decision sent nothing,
        so it is not an exchange and is not written)."""
        if self.settings.record is None or decision.cached:
            return
        from ..assets import StateWithImages, lift_images
        from ..canonical import canonical_json
        from ..questions import questions_to_wire
        from ..recordings import write_recording

        # The state as sent: images become their placeholders and the file keeps each one's
        # sha256, never its bytes (the Image objects hash once; nothing is read again).
        text = ""
        if isinstance(state, StateWithImages):
            text = canonical_json(questions_to_wire(questions)).decode("utf-8")
        lifted = lift_images(state, text)
        write_recording(
            self.settings.record,
            model=self.model,
            endpoint=self.endpoint,
            state=lifted.state,
            questions=questions,
            # The decoded body, re-encoded: every wire field the response carried that the
            # library reads. Unknown extra fields are not kept.
            response=decision.to_wire(),
            assets=lifted.key_assets(),
        )

    async def evaluate(self, state: Any, questions: Mapping[str, Question]) -> Decision:
        """One decision; recorded when ``--record`` is set."""
        decision = await self.classifier.evaluate(state, questions)
        self.record(state, questions, decision)
        return decision


def build_backend(
    settings: BackendSettings,
    *,
    file_model: str | None = None,
    on_metric: Callable[[dict[str, Any]], object] | None = None,
    cache: Any = None,
) -> Backend:
    """``create_classifier(**classifier_options(...))`` wrapped with its recorder. ``cache``
    (``batch --cache``) is handed to the classifier as its decision cache."""
    from ..classifier import create_classifier

    opts = classifier_options(settings, file_model=file_model, on_metric=on_metric)
    if cache is not None:
        opts["cache"] = cache
    classifier = create_classifier(**opts)
    if settings.style == "static":
        return Backend(settings, classifier, classifier.model, "")
    endpoint, model = live_target(settings, opts.get("model"))
    return Backend(settings, classifier, model, endpoint)


#: The --thresholds names (seed 004 ``default-thresholds``).
THRESHOLD_NAMES = ("yes", "no", "min_confidence")


def parse_fail_on(text: str | None) -> tuple[str, ...]:
    """``near-uniform,uncalibrated`` -> the named conditions, in ``FLAGS`` order."""
    from .render import FLAGS

    if not text:
        return ()
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in FLAGS]
    if unknown:
        raise CliError(f"--fail-on: unknown condition {unknown[0]!r}; use any of {','.join(FLAGS)}")
    return tuple(f for f in FLAGS if f in names)


def parse_thresholds(text: str | None) -> dict[str, float]:
    """``yes=0.8,no=0.2,min_confidence=0.6`` -> a dict of the names given, each within 0..1;
    the rest keep their defaults (``threshold_band`` merges over ``DEFAULT_THRESHOLDS``)."""
    if not text:
        return {}
    out: dict[str, float] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, raw = part.partition("=")
        name = name.strip()
        if not sep or name not in THRESHOLD_NAMES:
            raise CliError(
                f"--thresholds: expected NAME=VALUE with NAME one of {', '.join(THRESHOLD_NAMES)}"
                f", got {part!r}"
            )
        try:
            value = float(raw)
        except ValueError:
            raise CliError(f"--thresholds: {name} must be a number, got {raw.strip()!r}") from None
        if not 0.0 <= value <= 1.0:
            raise CliError(f"--thresholds: {name} must be within 0..1, got {value}")
        out[name] = value
    return out


def warn_to_stderr(event: Mapping[str, Any]) -> None:
    """The classifier's metric sink: warnings to stderr, one line each; other events unused."""
    from ..classifier import METRIC_WARNING

    if event.get("event") == METRIC_WARNING:
        sys.stderr.write(f"toolnexus: warning: {one_line(str(event.get('warning', '')))}\n")
        sys.stderr.flush()
