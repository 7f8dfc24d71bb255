"""``toolnexus eval QUESTIONS STATE``: one decision, rendered; ``--fail-on`` sets exit 1.

The command builds an ``EvalResult`` and hands it to the renderer. Degenerate-criteria warnings
(the classifier's ``classifier.warning`` events) go to stderr, one line each, as they happen;
the decision goes to stdout.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .app import EXIT_CONDITION, EXIT_OK, CliError, app, one_line
from .options import (
    ApiKeyEnvOpt,
    BackendOpt,
    BackendSettings,
    BaseUrlOpt,
    LlmApiKeyEnvOpt,
    LlmBaseUrlOpt,
    LlmModelOpt,
    ModelOpt,
    RecordOpt,
    ReplayOpt,
    RetriesOpt,
    TimeoutOpt,
)
from .render import FLAGS, OUTPUT_FORMATS, OutputFormat
from .states import STATE_FORMATS, StateFormat

if TYPE_CHECKING:
    from ..decision import Decision
    from ..questions import Question

#: The --thresholds names (seed 004 ``default-thresholds``).
THRESHOLD_NAMES = ("yes", "no", "min_confidence")


def parse_fail_on(text: str | None) -> tuple[str, ...]:
    """``near-uniform,uncalibrated`` -> the named conditions, in ``FLAGS`` order."""
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


@dataclass(frozen=True)
class EvalResult:
    """What ``eval`` produced: the decision, the question set it answers, its record (what
    every format prints) and the ``--fail-on`` conditions it met."""

    decision: Decision
    questions: Mapping[str, Question]
    record: dict[str, Any]
    failed: tuple[str, ...]

    @property
    def exit_code(self) -> int:
        return EXIT_CONDITION if self.failed else EXIT_OK


def _warn(event: Mapping[str, Any]) -> None:
    """The classifier's metric sink: warnings to stderr, one line each; other events unused."""
    from ..classifier import METRIC_WARNING

    if event.get("event") == METRIC_WARNING:
        sys.stderr.write(f"toolnexus: warning: {one_line(str(event.get('warning', '')))}\n")
        sys.stderr.flush()


def run_eval(
    questions_path: Path,
    state: Any,
    settings: BackendSettings,
    *,
    thresholds: Mapping[str, float] | None = None,
    fail_on: tuple[str, ...] = (),
) -> EvalResult:
    """Load the question set, evaluate ``state`` once, and build the result. Raises CliError
    (input), ClassifierError (backend or input) for the boundary to report."""
    import asyncio

    from ..errors import StaticMiss
    from ..recordings import replay_miss_message
    from .options import build_backend
    from .questionfile import load_question_set
    from .render import decision_record

    file_model, questions = load_question_set(questions_path)
    backend = build_backend(settings, file_model=file_model, on_metric=_warn)

    async def once() -> Decision:
        async with backend.classifier:
            return await backend.evaluate(state, questions)

    try:
        decision = asyncio.run(once())
    except StaticMiss as miss:
        assert settings.replay is not None
        raise CliError(replay_miss_message(miss, settings.replay)) from None
    record = decision_record(decision, questions, thresholds)
    failed = tuple(f for f in fail_on if f in record["flags"])
    return EvalResult(decision, questions, record, failed)


@app.command("eval")
def eval_command(
    questions: Annotated[
        Path,
        typer.Argument(help="Question-set YAML file.", metavar="QUESTIONS", show_default=False),
    ],
    state: Annotated[
        str | None,
        typer.Argument(
            help="State file (.txt/.md/.log text, .json, .yaml/.yml) or - for stdin.",
            metavar="STATE",
            show_default=False,
        ),
    ] = None,
    state_text: Annotated[
        str | None,
        typer.Option("--state-text", help="The state as literal text, instead of a file."),
    ] = None,
    as_: Annotated[
        str | None,
        typer.Option("--as", help="Read the state as text, json or yaml (overrides the suffix)."),
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="table, json, jsonl or csv (default: table on a terminal, JSON otherwise).",
        ),
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help="Exit 1 when any of near-uniform,uncalibrated,uncertain,invalid holds.",
        ),
    ] = None,
    thresholds: Annotated[
        str | None,
        typer.Option(
            "--thresholds",
            help="Band cut-points, e.g. yes=0.8,no=0.2,min_confidence=0.6 (inclusive).",
        ),
    ] = None,
    backend: BackendOpt = None,
    base_url: BaseUrlOpt = None,
    model: ModelOpt = None,
    api_key_env: ApiKeyEnvOpt = None,
    timeout: TimeoutOpt = None,
    retries: RetriesOpt = None,
    llm_base_url: LlmBaseUrlOpt = None,
    llm_model: LlmModelOpt = None,
    llm_api_key_env: LlmApiKeyEnvOpt = None,
    replay: ReplayOpt = None,
    record: RecordOpt = None,
) -> None:
    """Evaluate one STATE against the QUESTIONS file and print the decision.

    Exit codes: 0 ok; 1 a --fail-on condition met; 2 usage or input error; 3 backend failure.
    """
    from .render import default_format, render_decision
    from .states import load_state

    if fmt is not None and fmt not in OUTPUT_FORMATS:
        raise CliError(f"--format takes {', '.join(OUTPUT_FORMATS)}, got {fmt!r}")
    if as_ is not None and as_ not in STATE_FORMATS:
        raise CliError(f"--as takes {', '.join(STATE_FORMATS)}, got {as_!r}")
    conditions = parse_fail_on(fail_on)
    cut_points = parse_thresholds(thresholds)
    settings = BackendSettings(
        backend=backend,
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        timeout=timeout,
        retries=retries,
        llm_base_url=llm_base_url,
        llm_model=llm_model,
        llm_api_key_env=llm_api_key_env,
        replay=replay,
        record=record,
    )
    as_format: StateFormat | None = as_  # checked just above
    # Every input is read and checked before anything is sent.
    value = load_state(state, text=state_text, as_=as_format)
    result = run_eval(questions, value, settings, thresholds=cut_points, fail_on=conditions)
    out_format: OutputFormat = fmt or default_format()  # checked just above
    render_decision(result.record, result.questions, out_format)
    if result.failed:
        sys.stderr.write(f"toolnexus: --fail-on met: {', '.join(result.failed)}\n")
        raise typer.Exit(result.exit_code)
