"""The classifier ``eval`` and ``batch`` build from their backend options, and its recorder.

Precedence, highest first: the flag, the environment variable, the question file (``model:``),
the default (the backend row). ``classifier_options`` passes only the options that were set, so
the library's own defaults stay the defaults.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.options import LLM_OPTIONS
from ..core import one_line
from .errors import CliError
from .options import CLASSIFIER_SETTINGS, BackendSettings

if TYPE_CHECKING:
    from ..classifier import Classifier
    from ..core import Checked, Decision, Question
    from ..scheduler import Price

__all__ = [
    "Backend",
    "Recorder",
    "build_backend",
    "check_estimable",
    "check_key",
    "classifier_options",
    "live_target",
    "model_for",
    "price_of",
    "recorder_for",
    "warn_if_over_limits",
    "warn_to_stderr",
]


def model_for(settings: BackendSettings, file_model: str | None) -> str | None:
    """flag > env > question file > the backend row's model (None: the library's default)."""
    from ..core import resolve_model

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
        from ..styles import load_recordings

        assert settings.replay is not None
        # A recording of a request toolnexus would not send as it is (serve --record of a
        # one-sided noul, say) must never answer one it does send.
        recorded = [r for r in load_recordings(settings.replay) if r.askable()]
        opts["decisions"] = [r.to_recorded_decision() for r in recorded]
        return opts
    for name in CLASSIFIER_SETTINGS:
        # model is resolved above; the llm options are the llm style's alone
        if name == "model" or (name in LLM_OPTIONS and style != "llm"):
            continue
        value = getattr(settings, name)
        if value is not None:
            opts[name] = value
    supports = _supports(settings)
    if supports is not None:
        opts["supports"] = supports
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
    from ..config import resolve_backend

    row = resolve_backend(
        settings.backend or "typesafe",
        base_url=settings.base_url,
        model=model,
        supports=_supports(settings),
    )
    return f"{row.base_url}/systemone", row.model


@dataclass(frozen=True)
class Recorder:
    """``--record``: writes each live exchange to the recordings ``directory`` (the run's
    ``RunConfig.record``, and ``eval``'s through :meth:`Backend.record`)."""

    directory: Path
    model: str
    endpoint: str

    def __call__(self, state: Any, questions: Mapping[str, Question], decision: Decision) -> None:
        from ..core import lift_with_questions
        from ..styles import write_recording

        # The state as sent: images become their placeholders and the file keeps each one's
        # sha256, never its bytes (the Image objects hash once; nothing is read again).
        lifted = lift_with_questions(state, questions)
        write_recording(
            self.directory,
            model=self.model,
            endpoint=self.endpoint,
            state=lifted.state,
            questions=questions,
            # The decoded body, re-encoded: every wire field the response carried that the
            # library reads. Unknown extra fields are not kept.
            response=decision.to_wire(),
            assets=lifted.key_assets(),
        )


def recorder_for(settings: BackendSettings, model: str | None) -> Recorder | None:
    """``--record``'s writer for a batch run (None without it), naming the endpoint and model
    the classifier built from ``settings`` and ``model`` (``model_for``'s) talks to."""
    if settings.record is None:
        return None
    endpoint, row_model = live_target(settings, model)
    return Recorder(settings.record, row_model, endpoint)


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
        Recorder(self.settings.record, self.model, self.endpoint)(state, questions, decision)

    async def evaluate(self, state: Any, questions: Mapping[str, Question]) -> Decision:
        """One decision; recorded when ``--record`` is set."""
        from ..core import Checked

        made = await self.evaluate_checked(state, questions)
        return made.decision if isinstance(made, Checked) else made

    async def evaluate_checked(
        self, state: Any, questions: Mapping[str, Question]
    ) -> Decision | Checked:
        """:meth:`evaluate`, with the verdict of a style that validated on the way (a cache,
        the llm style): ``eval`` hands it to its record, so the decision is validated once."""
        from ..core import Checked, check_state

        qs = self.classifier.prepare(questions)
        check_state(state)
        made = await self.classifier.pipeline.evaluate_checked(state, qs)
        self.record(state, questions, made.decision if isinstance(made, Checked) else made)
        return made


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


def check_key(settings: BackendSettings) -> None:
    """The run's refusal of a key that is unset or given twice (``run.safety.check_key``),
    for the backend options as given (``eval``, ``filter``: before their first request)."""
    from ..run import check_key as check

    names = ("backend", "base_url", "api_key_env")
    check({"style": settings.style, **{n: getattr(settings, n) for n in names}})


def warn_to_stderr(event: Mapping[str, Any]) -> None:
    """The classifier's metric sink: warnings to stderr, one line each; other events unused."""
    from ..evaluate import METRIC_WARNING

    if event.get("event") == METRIC_WARNING:
        sys.stderr.write(f"toolnexus: warning: {one_line(str(event.get('warning', '')))}\n")
        sys.stderr.flush()


def warn_if_over_limits(settings: Any, model: str, questions: Mapping[str, Any]) -> bool:
    """``batch`` and ``filter``: one warning before anything is sent when the question set alone
    passes the wire's token limits, so every request of the run would (issue 34 item 4);
    whether it was printed (then the run's over-limit watch only counts)."""
    if settings.style != "systemone":
        return False
    import sys

    from .lintbudget import over_limit_warning

    warning = over_limit_warning(model or "jev-latest", dict(questions), with_state=False)
    if warning is not None:
        sys.stderr.write(warning)
    return warning is not None


def price_of(text: str | None) -> Price | None:
    """``--price`` (or ``TOOLNEXUS_PRICE``) parsed, or None (``batch``, ``filter``, ``mcp``)."""
    if text is None or not text.strip():
        return None
    from ..core import ConfigError
    from ..scheduler import parse_price

    try:
        return parse_price(text)
    except ConfigError as e:
        raise CliError(e.detail.removeprefix("classifier: ")) from None


def check_estimable(settings: BackendSettings) -> None:
    """``run.dry.check_dry`` on the backend options, before the question file is read: a dry
    run (and a capped ``batch``, sized on one) estimates System One requests only."""
    from ..run import check_dry

    check_dry({"style": settings.style} if settings.replay is None else {"decisions": ()})
