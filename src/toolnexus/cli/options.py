"""Options shared by ``eval`` and ``batch``: the backend options (``BackendSettings``, one
field per option) and the judgment options (``--fail-on``, ``--thresholds``). The classifier
they build is ``cli/backend.py``'s.

Each option is also read from a ``TOOLNEXUS_*`` environment variable. Precedence, highest
first: the flag, the environment variable, the question file (``model:``), the default (the
backend row). The style follows from the options: ``--replay DIR`` answers from recordings
(``static``), ``--llm-model`` asks a chat model (``llm``), anything else speaks System One.

A key is never accepted on the command line: ``--api-key-env`` takes the NAME of the variable
that holds it, read at call time by the transport.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from ..core import DEFAULT_RETRIES, DEFAULT_TIMEOUT, MODEL_ENV
from ..questionfile import THRESHOLD_NAMES as _THRESHOLD_NAMES
from .errors import CliError

if TYPE_CHECKING:
    from ..core import ClassifierError

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
        help=(
            "Exit 1 when any result carries one of these flags (comma list): near-uniform, "
            "uncalibrated, uncertain, choice-not-top, score-not-mean, confidence-off-formula, "
            "usage-missing, invalid."
        ),
    ),
]
ThresholdsOpt = Annotated[
    str | None,
    typer.Option(
        "--thresholds",
        help="Band cut-points, e.g. yes=0.8,no=0.2,min_confidence=0.6 (inclusive).",
    ),
]
#: Shared by eval and batch: a calibration file from ``report --fit-calibration`` (issue 24).
CalibrationOpt = Annotated[
    str | None,
    typer.Option(
        "--calibration",
        help="Recalibrate answers with the maps of FILE (report --fit-calibration): the "
        "recalibrated probabilities go beside the wire's. Refused for another model, question "
        "set or way of asking.",
        metavar="FILE",
        show_default=False,
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
        from ..config.options import check_option
        from ..core import ConfigError

        for name in CLASSIFIER_SETTINGS:
            try:
                check_option(name, getattr(self, name))
            except ConfigError as e:
                raise CliError(flag_problem(name, e)) from None
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


#: The backend settings that are the CLI's own: the recorder (``--replay`` makes the ``static``
#: style's ``decisions``, ``--record`` writes exchanges) and ``--supports-images``, which
#: becomes ``supports={"images": ...}``.
CLI_SETTINGS = ("replay", "record", "supports_images")
#: Every other backend setting IS the ``ClassifierOptions`` option of its name, in field order:
#: derived, never listed again (``tests/cli/test_backend_settings.py`` holds each field to its
#: option, type for type). ``cli/backend.py`` hands them to ``create_classifier``.
CLASSIFIER_SETTINGS = tuple(f.name for f in fields(BackendSettings) if f.name not in CLI_SETTINGS)


def flag_problem(name: str, error: ClassifierError) -> str:
    """The library's message for the option ``name`` (``classifier: <name> must ...``) as the
    flag's: ``--<name> must ...``; the check and its words live once, in
    ``toolnexus.config.options``."""
    flag = "--" + name.replace("_", "-")
    detail = error.detail
    return flag + detail[len(name) :] if detail.startswith(name + " ") else f"{flag}: {detail}"


def options_from(values: type, keyword: str) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """A decorator: the command with one option per field of the dataclass ``values`` added to
    its parameters, in field order (what Typer reads to parse and to print ``--help``), each
    field's ``Annotated`` type being its option. Their values reach the command as one mapping,
    its keyword-only parameter ``keyword``, from which it builds ``values(**mapping)`` where it
    checks its other input (so errors keep their order). The option table is the dataclass:
    a new option is one field there."""

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        import functools
        import inspect
        from typing import get_type_hints

        table = option_table(values)
        names = [n for n, _, _ in table]
        defaults = {n: default for n, _, default in table}
        types = {n: kind for n, kind, _ in table}
        hints = get_type_hints(command, include_extras=True)
        params = [
            p.replace(annotation=hints.get(p.name, p.annotation))
            for p in inspect.signature(command).parameters.values()
            if p.name != keyword
        ]
        own = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        rest = [p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
        added = [
            inspect.Parameter(
                n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=defaults[n], annotation=types[n]
            )
            for n in names
        ]

        @functools.wraps(command)
        def with_options(*args: Any, **kwargs: Any) -> R:
            chosen = {n: kwargs.pop(n, defaults[n]) for n in names}
            return command(*args, **kwargs, **{keyword: chosen})

        parameters = own + added + rest
        with_options.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            parameters, return_annotation=hints.get("return", inspect.Signature.empty)
        )
        with_options.__annotations__ = {p.name: p.annotation for p in parameters}
        if "return" in hints:
            with_options.__annotations__["return"] = hints["return"]
        return with_options

    return decorate


def option_table(values: type) -> list[tuple[str, Any, Any]]:
    """``(field name, Annotated option type, command-line default)`` of each option field of the
    dataclass ``values``, in field order: a field whose type is ``Annotated[T, typer.Option]``
    (``BatchFlags``, ``FilterFlags``, ``BackendSettings``), or one that carries a ``flag`` in its
    metadata (``serve.options.ServeOptions``, whose room may not import typer: its ``Flag`` says
    the name, type, help, metavar and the command line's default). Other fields are not
    options."""
    from typing import get_type_hints

    table: list[tuple[str, Any, Any]] = []
    flagged = [f for f in fields(values) if "flag" in f.metadata]
    if flagged:
        for f in flagged:
            flag = f.metadata["flag"]
            default = flag.cli_default if flag.cli_default is not None else f.default
            option = typer.Option(flag.name, help=flag.help, metavar=flag.metavar)
            table.append((f.name, Annotated[flag.type, option], default))
        return table
    types = get_type_hints(values, include_extras=True)
    return [(f.name, types[f.name], f.default) for f in fields(values)]


def backend_options(command: Callable[..., R]) -> Callable[..., R]:
    """``command`` with one option per ``BackendSettings`` field (:func:`options_from`); the
    values reach it as its keyword-only ``backend_values`` mapping."""
    return options_from(BackendSettings, "backend_values")(command)


#: The --thresholds names (seed 004 ``default-thresholds``), defined beside the file's reader.
THRESHOLD_NAMES = _THRESHOLD_NAMES


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
    the rest keep their defaults (``threshold_band`` merges over ``DEFAULT_THRESHOLDS``). With
    the defaults merged, ``no`` may not be above ``yes``. ``@FILE`` reads them from a YAML file
    (``report --write-thresholds`` writes one): its top-level names, and per question key under
    ``questions`` (:func:`parse_question_thresholds`), read by the library
    (``toolnexus.questionfile.thresholds``)."""
    if not text:
        return {}
    if text.startswith("@"):
        return _thresholds_file(text[1:])[0]
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
        out[name] = value
    from ..core import RunError
    from ..questionfile import checked_cut_points

    try:
        return checked_cut_points(out, "--thresholds")
    except RunError as e:
        raise CliError(str(e)) from None


def parse_question_thresholds(text: str | None) -> dict[str, dict[str, float]]:
    """Per question key, the cut-points of a ``--thresholds @FILE`` (``questions: {KEY: {yes,
    no}}``), over the file's top-level ones; empty for the inline form."""
    if not text or not text.startswith("@"):
        return {}
    return _thresholds_file(text[1:])[1]


def parse_gate_floors(text: str | None) -> dict[str, Any]:
    """Per gate name, the ``GateFloor`` of a ``--thresholds @FILE``'s ``gates: {NAME: {floor:
    F}}`` (``report --write-thresholds --gates`` writes it); empty for the inline form."""
    if not text or not text.startswith("@"):
        return {}
    from ..core import RunError
    from ..questionfile import read_gate_floors

    try:
        return dict(read_gate_floors(text[1:]))
    except RunError as e:
        raise CliError(str(e)) from None


def _thresholds_file(path: str) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """The top-level and per-question cut-points of a thresholds YAML file, each checked."""
    from ..core import RunError
    from ..questionfile import read_thresholds

    try:
        return read_thresholds(path)
    except RunError as e:
        raise CliError(str(e)) from None
