"""The styles a classifier delegates to, and how one is chosen from ``ClassifierOptions``.

``custom`` (the host's own function) and ``static`` (recorded decisions: what CI runs, no
network, no credential) live here; ``systemone`` (``systemone.py``) and the deprecated ``llm``
(``llm.py``) are imported only when chosen, so their HTTP libraries are not a start-up cost.

A synchronous ``custom`` evaluate runs off the event loop, on this style's own thread pool, sized
to the largest batch concurrency asked of it (at least ``DEFAULT_BATCH_CONCURRENCY``):
``asyncio.to_thread``'s shared pool holds ``min(32, cpus + 4)`` threads, 6 on 2 cores, so a batch
at concurrency 16 would run 6 calls at once (issue 16).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol

from ..config.options import ClassifierOptions, CustomEvaluate, RecordedDecision
from ..core import (
    DEFAULT_BATCH_CONCURRENCY,
    QUESTIONS_DIGEST,
    Checked,
    ClassifierError,
    ConfigError,
    Decision,
    HostBackendError,
    LiftedState,
    Question,
    StaticMiss,
    canonical_json,
    lift_with_questions,
    normalize_questions,
    parse_decision,
    questions_sha256,
    questions_to_wire,
    sha256_hex,
)

if TYPE_CHECKING:
    from ..scheduler import Scheduler

__all__ = ["CustomStyle", "StaticStyle", "Style", "make_style"]


class Style(Protocol):
    """What a style provides to the classifier."""

    name: str

    async def decide(
        self, state: Any, questions: dict[str, Question], scheduler: Scheduler | None = None
    ) -> Decision | Checked:
        """The decision; ``Checked`` when the style already ran ``validate_decision`` on it.
        ``scheduler``: the batch run's, which admits every request the style sends (passed to
        its transport); None outside a batch. A style that sends nothing ignores it."""
        ...

    async def aclose(self) -> None: ...


class CustomStyle:
    """``style="custom"``: the host's ``evaluate(state, questions)``, sync or async. An async one
    runs on the loop; a sync one on this style's thread pool (see the module docstring)."""

    name = "custom"

    def __init__(self, fn: CustomEvaluate) -> None:
        self._fn = fn
        call = getattr(fn, "__call__", None)  # noqa: B004 - an object's async __call__ counts
        self._is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)
        self._workers = DEFAULT_BATCH_CONCURRENCY
        self._pool: ThreadPoolExecutor | None = None

    def reserve(self, concurrency: int) -> None:
        """Make room for ``concurrency`` synchronous calls at once. The pool only grows: a
        smaller one is replaced, and its threads finish what they run."""
        if concurrency > self._workers:
            self._workers = concurrency
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None

    async def _call(self, state: Any, questions: dict[str, Question]) -> Any:
        if self._is_async:
            return self._fn(state, questions)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="toolnexus-custom")
        # The caller's context goes with the call, as asyncio.to_thread would carry it.
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, context.run, self._fn, state, questions)

    async def decide(
        self, state: Any, questions: dict[str, Question], scheduler: Scheduler | None = None
    ) -> Decision:
        try:
            result = await self._call(state, questions)
            if inspect.isawaitable(result):
                result = await result
        except ClassifierError:
            raise
        except Exception as e:
            raise HostBackendError(
                f"classifier: custom evaluate failed: {type(e).__name__}: {e}"
            ) from e
        if isinstance(result, Decision):
            return result
        if isinstance(result, Mapping):
            return parse_decision(result, questions)
        raise HostBackendError(
            "classifier: custom evaluate returned "
            f"{type(result).__name__}, expected a Decision or a response body"
        )

    async def aclose(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None


def _static_key(
    questions: Mapping[str, Question], state: Any, assets: Mapping[str, Any] | None = None
) -> str:
    # Keyed on the canonical question set AND the canonical state: decisions.json's three
    # entries share one question payload and differ only in state. Images add each one's
    # sha256 under its placeholder (omitted when there are none: old keys are unchanged).
    keyed: dict[str, Any] = {"questions": questions_to_wire(questions), "state": state}
    if assets:
        keyed["assets"] = dict(assets)
    return sha256_hex(canonical_json(keyed))


def _lifted(state: Any, questions: dict[str, Question]) -> LiftedState:
    return lift_with_questions(state, questions)


def _preview(state: Any, width: int = 60) -> str:
    text = state if isinstance(state, str) else canonical_json(state).decode("utf-8")
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


class StaticStyle:
    name = "static"

    def __init__(self, decisions: Iterable[RecordedDecision | Mapping[str, Any]]) -> None:
        self._entries: dict[str, tuple[dict[str, Question], Any]] = {}
        for i, entry in enumerate(decisions):
            if isinstance(entry, Mapping):
                if "state" not in entry or "questions" not in entry:
                    raise ConfigError(
                        f"classifier: static decision {i} needs 'state' and 'questions'"
                    )
                entry = RecordedDecision(
                    state=entry["state"],
                    questions=entry["questions"],
                    response=entry.get("response"),
                    answers=entry.get("answers"),
                    assets=entry.get("assets"),
                )
            if not isinstance(entry, RecordedDecision):
                raise ConfigError(
                    f"classifier: static decision {i} must be a RecordedDecision or a mapping"
                )
            qs = normalize_questions(entry.questions)
            if entry.response is not None:
                body = entry.response
            elif entry.answers is not None:
                body = {"model": "static", "answers": dict(entry.answers)}
            else:
                raise ConfigError(f"classifier: static decision {i} needs 'response' or 'answers'")
            lifted = _lifted(entry.state, qs)
            assets = {**lifted.key_assets(), **dict(entry.assets or {})}
            self._entries[_static_key(qs, lifted.state, assets)] = (qs, body)

    def __len__(self) -> int:
        return len(self._entries)

    async def decide(
        self, state: Any, questions: dict[str, Question], scheduler: Scheduler | None = None
    ) -> Decision:
        lifted = _lifted(state, questions)
        hit = self._entries.get(_static_key(questions, lifted.state, lifted.key_assets()))
        if hit is None:
            digest = questions_sha256(questions)
            preview = _preview(lifted.state)
            raise StaticMiss(
                "classifier: static: no recorded decision for state "
                f"{preview!r} with {QUESTIONS_DIGEST} {digest[:12]}; "
                "record one for this exact state and question set",
                questions_sha256=digest,
                state_preview=preview,
            )
        qs, body = hit
        if isinstance(body, bytes | bytearray | str):
            return Decision.from_json(body, qs)
        return parse_decision(body, qs)

    async def aclose(self) -> None:
        return None


def make_style(opts: ClassifierOptions) -> Style:
    if opts.style == "custom":
        assert opts.evaluate is not None
        return CustomStyle(opts.evaluate)
    if opts.style == "static":
        assert opts.decisions is not None
        return StaticStyle(opts.decisions)
    if opts.style == "llm":
        from .llm import LlmStyle  # imported lazily: httpx is not a start-up cost

        return LlmStyle(opts)
    from .systemone import SystemOneStyle

    return SystemOneStyle(opts)
