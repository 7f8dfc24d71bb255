"""OpenTelemetry for packed requests (issue 23, ``packed.py``): "a packed request's HTTP spans
are linked from each of its states' spans, and its usage is recorded once per request, not once
per state". Built on :mod:`.telemetry`; imports nothing of OpenTelemetry itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .telemetry import Telemetry

if TYPE_CHECKING:
    from .pipeline import RequestPipeline

__all__ = ["PackTrace", "pack_trace"]


class PackTrace:
    """The telemetry of one classifier's packed requests (``packed.py``): each request's span
    holds its HTTP attempts and records its usage once; each state it answered gets its own
    span, linked to the request's, whose share of the usage is not recorded again."""

    def __init__(self, telemetry: Telemetry, model: str, endpoint: str) -> None:
        self.telemetry, self.model, self.endpoint = telemetry, model, endpoint
        self.request: Any = None

    async def send(self, post: Callable[[], Awaitable[tuple[Any, Any]]], states: int) -> Any:
        """``await post()`` (the response body and its usage) inside one packed request span."""
        from ..transport import observing

        with self.telemetry.packed_request(
            model=self.model, endpoint=self.endpoint, states=states
        ) as ev:
            self.request = ev.span.get_span_context()
            with observing(ev.observer()):
                body, usage = await post()
            model = body.get("model") if isinstance(body, dict) else None
            ev.decided(
                response_model=model if isinstance(model, str) else self.model,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cached=False,
            )
            return body, usage

    def state(self, decision: Any, questions: int, pack: int) -> None:
        """The span of one state answered by the last packed request: linked to the request's
        span, carrying the state's share of the usage, not recorded again in the metric."""
        with self.telemetry.evaluate(
            model=self.model,
            endpoint=self.endpoint,
            questions=questions,
            pack=pack,
            links=(self.request,),
        ) as ev:
            ev.decided(
                response_model=decision.model,
                input_tokens=decision.usage.input_tokens,
                output_tokens=decision.usage.output_tokens,
                cached=False,
                billed_here=False,
            )


def pack_trace(pipeline: RequestPipeline) -> PackTrace | None:
    """A :class:`PackTrace` for ``pipeline``'s telemetry, or None when it has none or it is
    quiet (:meth:`Telemetry.quiet`)."""
    quiet = getattr(pipeline.telemetry, "quiet", None)  # a host's own object has none
    if pipeline.telemetry is None or (quiet is not None and quiet()):
        return None
    return PackTrace(pipeline.telemetry, pipeline.model, pipeline.endpoint)
