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

from ..core import (
    EXIT_BACKEND,
    EXIT_CONDITION,
    EXIT_OK,
    one_line,
)
from ..run import STATE_FORMATS, StateFormat
from .errors import (
    CliError,
    failure_of,
)
from .options import (
    BackendSettings,
    CalibrationOpt,
    FailOnOpt,
    ThresholdsOpt,
    backend_options,
    parse_fail_on,
    parse_question_thresholds,
    parse_thresholds,
)
from .render.formats import DecisionFormat

if TYPE_CHECKING:
    from ..core import Decision, Question
    from ..records import DecisionRecord


@dataclass(frozen=True)
class EvalResult:
    """What ``eval`` produced: the decision, the question set it answers, its record (what
    every format prints) and the ``--fail-on`` conditions it met."""

    decision: Decision
    questions: Mapping[str, Question]
    record: DecisionRecord
    failed: tuple[str, ...]

    @property
    def invalid(self) -> bool:
        """The backend answered something that fails ``validate_decision``."""
        return "invalid" in self.record.flags

    @property
    def exit_code(self) -> int:
        # An invalid decision is a backend failure (issue 9), worse than any --fail-on.
        if self.invalid:
            return EXIT_BACKEND
        return EXIT_CONDITION if self.failed else EXIT_OK


def run_eval(
    questions_path: Path,
    state: Any,
    settings: BackendSettings,
    *,
    thresholds: Mapping[str, float] | None = None,
    fail_on: tuple[str, ...] = (),
    calibration: str | None = None,
    question_thresholds: Mapping[str, Mapping[str, float]] | None = None,
    thresholds_text: str | None = None,
) -> EvalResult:
    """Load the question set, evaluate ``state`` once, and build the result. Raises CliError
    (input), ClassifierError (backend or input) for the boundary to report."""
    import asyncio

    from ..core import Checked, InvalidDecision, StaticMiss
    from ..questionfile import load_question_file
    from ..records import record as decision_record
    from ..styles import replay_miss_message
    from .backend import build_backend, check_key, warn_to_stderr
    from .gatefloors import check_thresholds_file, with_gate_floors

    (file_model, questions), gates = load_question_file(questions_path)
    # ``--thresholds @FILE``'s gates: floors (report --write-thresholds --gates), issue 35 item 4
    gates = with_gate_floors(gates, thresholds_text, questions_path)
    # As batch: a backend's own endpoint with its key's variable unset is refused before the
    # request, naming the variable (issue 31 item 12: eval sent it three times and reported a
    # network error).
    check_key(settings)
    # issue 42 item 3: after every other input error, so a failure stays one line
    check_thresholds_file(thresholds_text, questions, questions_path)
    recalibrator = None
    if calibration is not None:
        from ..core import questions_sha256
        from ..records import Recalibrator

        recalibrator = Recalibrator.load(
            calibration, questions_sha256(questions), settings.style, pack=1
        )
    backend = build_backend(settings, file_model=file_model, on_metric=warn_to_stderr)
    if settings.style == "systemone":  # the wire's limits (issue 34 item 4)
        from ..core import DEFAULT_MODEL
        from .lintbudget import over_limit_warning

        warning = over_limit_warning(backend.model or DEFAULT_MODEL, questions, state)
        if warning is not None:
            sys.stderr.write(warning)

    async def once() -> Decision | Checked:
        async with backend.classifier:
            return await backend.evaluate_checked(state, questions)

    try:
        made = asyncio.run(once())
    except StaticMiss as miss:
        if settings.replay is None:  # a `toolnexus serve --replay` miss: its own words
            raise CliError(miss.message) from None
        raise CliError(replay_miss_message(miss, settings.replay)) from None
    except InvalidDecision as invalid:
        # A style that validates its own reply (llm) raises where System One's reply is printed
        # flagged: the same `invalid` condition, so the same exit code as batch's record.
        failure = failure_of(invalid)
        assert failure is not None
        raise CliError(invalid.message, failure.exit_code_under(fail_on)) from None
    # A style that validated on the way (the llm style; a cache deciding what to store) hands
    # its verdict to the record: the decision is validated once (issue 30 item 2).
    decision = made.decision if isinstance(made, Checked) else made
    record = decision_record(
        "", None, decision, questions, thresholds, recalibrator=recalibrator,
        question_thresholds=question_thresholds, gates=gates,
        validated=made if isinstance(made, Checked) else False,
    )  # fmt: skip
    failed = tuple(f for f in fail_on if f in record.flags)
    return EvalResult(decision, questions, record, failed)


@backend_options
def eval_command(
    questions: Annotated[
        Path,
        typer.Argument(help="Question-set YAML file.", metavar="QUESTIONS", show_default=False),
    ],
    state: Annotated[
        str | None,
        typer.Argument(
            help="State file (.txt/.md/.log text, .json, .yaml/.yml, .png/.jpg image) or - for "
            "stdin.",
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
    image: Annotated[
        list[str] | None,
        typer.Option(
            "--image",
            help="NAME=PATH: attach a PNG/JPEG that the state refers to as <NAME> (repeatable).",
            metavar="NAME=PATH",
        ),
    ] = None,
    fmt: Annotated[
        DecisionFormat | None,
        typer.Option(
            "--format", help="Output format (default: table on a terminal, JSON otherwise)."
        ),
    ] = None,
    fail_on: FailOnOpt = None,
    thresholds: ThresholdsOpt = None,
    calibration: CalibrationOpt = None,
    *,
    backend_values: Mapping[str, Any],
) -> None:
    """Evaluate one STATE against the QUESTIONS file and print the decision.

    Exit codes: 0 ok; 1 a --fail-on condition met; 2 usage or input error; 3 backend failure.
    """
    from ..run import attach_images, load_state, parse_image_options
    from .render import DecisionResult, default_format, render

    if as_ is not None and as_ not in STATE_FORMATS:
        raise CliError(f"--as takes {', '.join(STATE_FORMATS)}, got {as_!r}")
    conditions = parse_fail_on(fail_on)
    cut_points = parse_thresholds(thresholds)
    settings = BackendSettings(**backend_values)
    as_format: StateFormat | None = as_  # checked just above
    # Every input is read and checked before anything is sent.
    value = attach_images(
        load_state(state, text=state_text, as_=as_format), parse_image_options(image)
    )
    result = run_eval(
        questions, value, settings, thresholds=cut_points, fail_on=conditions,
        calibration=calibration, question_thresholds=parse_question_thresholds(thresholds),
        thresholds_text=thresholds,
    )  # fmt: skip
    render(
        DecisionResult(result.record, result.questions, item_id=state or ""),
        fmt or default_format(),
    )
    if result.invalid:
        sys.stderr.write(
            "toolnexus: the backend's decision is invalid: "
            f"{one_line(result.record.invalid or '')}\n"
        )
        raise typer.Exit(result.exit_code)
    if result.failed:
        sys.stderr.write(f"toolnexus: --fail-on met: {', '.join(result.failed)}\n")
        raise typer.Exit(result.exit_code)
