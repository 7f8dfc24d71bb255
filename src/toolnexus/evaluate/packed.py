"""Asking several states in one request (issue 20): :func:`evaluate_pack`.

The shape of a packed request is ``packing.py``; which states go together is ``packplan.py``;
what a pack reports, and how a failed request is read, is ``packoutcome.py``.
This module sends one pack through the systemone style's own path (``SystemOneStyle.lift``,
``prepare``, its transport: the same retries, redaction and bytes on every attempt) and turns
the answer into one result per state:

- one state: exactly today's evaluate (``evaluate_prepared``), byte for byte;
- several states on the systemone style: ONE packed request, decoded by
  ``packing.unpack_decisions``; every decision says ``calibrated=False`` and ``packed=N``;
- a state whose packed answer does not decode or fails ``validate_decision`` is asked again
  ONCE, alone (``reasked=True``, ``packed=1``); an invalid re-ask is what an invalid decision is
  at pack 1 (returned as decoded, or with ``fail_closed`` the ``InvalidDecision``);
- a 413, or the API's context-length 400 (``max_tokens_exceeded``), splits the pack in halves
  and asks each half; a pack over a limit before sending is split the same way (``packplan``);
- any other 400 or 422 that is about the request's own body (not the API's ``api_usage_error``,
  which every request of the run would get) is bisected the same way (issue 32 item 3): one
  state's content can fail the whole pack, so the halves are asked until the state that causes
  it is asked alone and gets the server's error, and every other state is decided. One bad state
  among N costs at most 2 * ceil(log2 N) requests more than the pack (two halves per level);
- a transient failure is retried by the transport with the same bytes; a failure that remains
  (a 5xx, a timeout, a 404) is every state's result (as it would be at pack 1);
- the other styles (static, custom, llm) ask state by state (seed 004: "Each state goes through
  the per-state evaluate (every style)"); :func:`packs` says whether a pipeline packs.

Usage: each state is charged its share of its packed response (``packing.split_usage``) plus
what its own re-ask cost; :class:`RequestFacts` lists every request as the server charged it,
so their sum is the server's total.

Cache (the classifier's ``cache=``): a packed answer is kept per state under
``decision_cache_key(..., kind=PACKED_CACHE_KIND)`` with the pack size it was asked in; only a
valid one is kept. A state found there is not sent (its pack shrinks) and comes back
``cached=True``. Seed 004's ``kind:"decision"`` keys are the unpacked requests' alone, so a
packed answer is never served to an unpacked request, or the reverse.
"""

from __future__ import annotations

import dataclasses
import time
import weakref
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from ..core import (
    ClassifierError,
    ClassifierUsage,
    Decision,
    DecisionError,
    ImageError,
    LiftedState,
    Question,
    answers_validator,
    canonical_json,
    parse_decision,
    questions_to_wire,
)
from ..core import observe as probe
from ..scheduler import LIMIT_SAFE_BYTES, Scheduler, TokenEstimate, estimate_tokens
from ..styles import PATH, SystemOneStyle
from ..transport import Reply
from .packcache import cached, store
from .packing import (
    pack_lifted,
    pack_questions,
    pack_state,
    split_usage,
    state_weights,
    unpack_decisions,
)
from .packoutcome import (
    PackOutcome,
    RequestFacts,
    context_error,
    one_states_error,
    reached_server,
)
from .packplan import Planned, pack_check
from .pipeline import RequestPipeline, evaluate_event
from .telemetry_pack import pack_trace

__all__ = [
    "evaluate_pack",
    "packs",
    "systemone_style",
]


def systemone_style(pipeline: RequestPipeline) -> SystemOneStyle | None:
    """The System One style a pipeline asks through, or None for any other style (the pack
    planner and ``batch --dry-run`` build their requests with it, nothing re-derived)."""
    return pipeline.systemone


def packs(pipeline: RequestPipeline) -> bool:
    """Whether ``pipeline`` asks a pack in one request (the systemone style). Plan singletons
    (``plan_packs(..., 1)``) for any other: it asks state by state anyway."""
    return pipeline.systemone is not None


#: Per style, the derived questions of the last question set per pack size: every pack of a
#: batch asks the same ones, and the SAME dict lets the style reuse its encoded bytes.
_DERIVED: weakref.WeakKeyDictionary[SystemOneStyle, dict[int, tuple[Any, dict[str, Question]]]]
_DERIVED = weakref.WeakKeyDictionary()


def _derived_questions(
    style: SystemOneStyle, qs: dict[str, Question], count: int
) -> dict[str, Question]:
    """``pack_questions(qs, count)``, made once per question set (by identity: a batch prepares
    its set once) and pack size. Questions are frozen, so sharing the dict is safe."""
    known = _DERIVED.setdefault(style, {})
    hit = known.get(count)
    if hit is not None and hit[0] is qs:
        return hit[1]
    if len(known) >= 8:
        known.clear()
    derived = pack_questions(qs, count)
    known[count] = (qs, derived)
    return derived


def _plus(a: ClassifierUsage, b: ClassifierUsage) -> ClassifierUsage:
    if a.cost is None and b.cost is None:
        cost = None
    else:
        total = Decimal(repr(a.cost or 0.0)) + Decimal(repr(b.cost or 0.0))
        cost = float(total)
    return ClassifierUsage(
        a.input_tokens + b.input_tokens,
        a.output_tokens + b.output_tokens,
        cost,
        reported=a.reported and b.reported,
    )


class _Pack:
    """The state of one :func:`evaluate_pack` call."""

    def __init__(
        self,
        pipeline: RequestPipeline,
        style: SystemOneStyle | None,
        states: Sequence[Any],
        qs: dict[str, Question],
        fail_closed: bool,
        planned: Planned | None = None,
        scheduler: Scheduler | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.planned = planned
        #: the batch run's, handed to every request this pack sends (None outside a batch)
        self.scheduler = scheduler
        self.style = style
        self.states = states
        self.qs = qs
        self.fail_closed = fail_closed
        self.results: list[Decision | ClassifierError | None] = [None] * len(states)
        self.requests: list[RequestFacts] = []
        self.lifted: dict[int, LiftedState] = {}
        self.started = time.perf_counter()

    # --- sending ----------------------------------------------------------------------------

    async def alone(self, index: int, share: ClassifierUsage | None = None) -> None:
        """Today's evaluate for one state; ``share`` (a re-ask) is its packed request's part."""
        state = self.states[index]
        estimate = self._estimate_alone(state)

        async def send() -> tuple[Decision, ClassifierUsage]:
            d = await self.pipeline.evaluate_prepared(
                state, self.qs, fail_closed=self.fail_closed, scheduler=self.scheduler
            )
            return d, ClassifierUsage() if d.cached else d.usage

        try:
            decision, charged = await send()
        except ClassifierError as e:
            self.requests.append(RequestFacts((index,), estimate, sent=reached_server(e), error=e))
            self.results[index] = e
            return
        self.requests.append(RequestFacts((index,), estimate, charged, sent=not decision.cached))
        if share is not None:
            decision = dataclasses.replace(
                decision, reasked=True, usage=_plus(share, decision.usage)
            )
        self.results[index] = decision

    def _estimate_alone(self, state: Any) -> TokenEstimate | None:
        if self.style is None:
            return estimate_tokens(canonical_json({"questions": questions_to_wire(self.qs)}))
        try:
            lifted = self.style.lift(state, self.qs)
        except ClassifierError:
            return estimate_tokens(b"")  # never sent: evaluate_prepared raises the same error
        body = self.style.body(lifted.state, self.qs)
        if not lifted.assets and len(body) <= LIMIT_SAFE_BYTES:
            return None  # as the send itself: made by the scheduler only if a member asks
        sizes = [s for a in lifted.assets if (s := a.image.size) is not None]
        return estimate_tokens(body, sizes)

    async def pack(self, indices: list[int]) -> None:
        """Ask ``indices`` together: from the cache, then alone or in one packed request."""
        style = self.style
        assert style is not None
        todo: list[int] = []
        planned = self.planned.lifted if self.planned is not None else None
        if planned is not None and len(planned) != len(self.states):
            planned = None
        caches = style.caches  # asked once per pack, not once per state (issue 32 pack CPU)
        for i in indices:
            # The plan lifted every state of a pack it checked; a lift without images is the
            # same whoever makes it, so it is reused. One with images is lifted again by the
            # style, which also checks the backend and the image limits. Text is its own lift
            # (``assets.lift_images``): without a cache to key, it is not wrapped at all.
            if not caches and type(self.states[i]) is str:
                todo.append(i)
                continue
            if planned is not None and not planned[i].assets:
                self.lifted[i] = planned[i]
            else:
                try:
                    self.lifted[i] = style.lift(self.states[i], self.qs)
                except ClassifierError as e:
                    self.results[i] = e  # as at pack 1: refused before any request
                    continue
            if caches and probe.observer is not None:
                probe.observer("pack.cache_get", i)
            hit = cached(style, self.lifted[i], self.qs) if caches else None
            if hit is not None:
                self.results[i] = hit
            else:
                todo.append(i)
        await self._send(style, todo)

    async def _send(self, style: SystemOneStyle, indices: list[int]) -> None:
        if not indices:
            return
        if len(indices) == 1:
            await self.alone(indices[0])
            return
        lifted = self.lifted
        if lifted:
            parts = [lifted[i] if i in lifted else LiftedState(self.states[i]) for i in indices]
            states = [p.state for p in parts]
            packed = pack_lifted(parts)
        else:  # text alone, not lifted (``pack``)
            states = [self.states[i] for i in indices]
            packed = LiftedState(pack_state(states))
        pqs = _derived_questions(style, self.qs, len(indices))
        request = style.prepare(packed, pqs)
        # Estimated once: the plan's estimate when it checked these very bytes (then the limits
        # are checked too), else here; the same estimate admits the request and goes to the
        # transport with it.
        planned = self.planned.estimate_of(request.json) if self.planned is not None else None
        estimate: TokenEstimate | None
        try:
            style.image_limits.check_request(packed.assets)
            if planned is not None:
                over, estimate = None, planned
            elif not packed.assets and len(request.json) <= LIMIT_SAFE_BYTES:
                # Too small to pass a limit: not estimated here; the transport estimates these
                # very bytes if the run's scheduler asks (a token rate, a budget), once.
                over, estimate = None, None
            else:
                wire = questions_to_wire(pqs)
                over, estimate = pack_check(packed, wire, request.json, style.image_limits)
        except ImageError as e:
            sizes = [s for a in packed.assets if (s := a.image.size) is not None]
            over, estimate = e.detail, estimate_tokens(request.json, sizes)
        if over is not None:
            self.requests.append(RequestFacts(tuple(indices), estimate, sent=False, packed=True))
            await self._halves(style, indices)
            return

        def decode(reply: Reply) -> tuple[Any, ClassifierUsage]:
            body, _ = style.load_response(reply.content, reply.endpoint, reply.request_id)
            try:
                charged = parse_decision({**body, "answers": {}}, {}).usage
            except (DecisionError, TypeError):
                charged = ClassifierUsage()  # unpack_decisions says why the body is no answer
            return body, charged

        async def send() -> tuple[Any, ClassifierUsage]:
            # ``exchange``, not ``post``: in a batch the run's scheduler settles the request on
            # what the server charged for it, so a spend budget sees a packed request's usage.
            return await style.transport.exchange(
                PATH,
                request.content,
                request.headers or None,
                decode,
                lambda got: got[1],
                estimate=estimate,
                scheduler=self.scheduler,
            )

        trace = pack_trace(self.pipeline)
        if trace is not None:
            post = send

            async def send() -> tuple[Any, ClassifierUsage]:
                return await trace.send(post, len(indices))  # type: ignore[no-any-return]

        weights = state_weights(states, self.qs)
        try:
            body, total = await send()
        except ClassifierError as e:
            self.requests.append(
                RequestFacts(tuple(indices), estimate, sent=reached_server(e), packed=True, error=e)
            )
            if context_error(e) or one_states_error(e):
                await self._halves(style, indices)
            elif isinstance(e, DecisionError):
                for i in indices:  # no state has an answer: each is asked alone, once
                    await self.alone(i, ClassifierUsage())
            else:
                for i in indices:
                    self.results[i] = e
            return
        try:
            per_state = unpack_decisions(body, self.qs, weights)
        except DecisionError as e:
            # Not a packed answer at all, but charged: each state is asked alone, once, and
            # pays its share of this request too.
            self.requests.append(RequestFacts(tuple(indices), estimate, total, True, True, e))
            for i, share in zip(indices, split_usage(total, weights), strict=True):
                await self.alone(i, share)
            return
        self.requests.append(RequestFacts(tuple(indices), estimate, total, packed=True))
        # The shares are split only when a state is asked again: a decoded state already
        # carries its share (``unpack_decisions`` splits the same usage the same way).
        shares: list[ClassifierUsage] | None = None
        caches = style.caches
        # ``validate_decision`` for every state of this reply, with the questions' keys sorted
        # and their types looked up once per pack, not per state (issue 32 pack CPU).
        invalid = answers_validator(self.qs)
        # Asked once per pack: nobody listening builds no event and makes no call per state.
        emits = self.pipeline.options.on_metric is not None
        for index, (i, got) in enumerate(zip(indices, per_state, strict=True)):
            if isinstance(got, Decision) and invalid(got.answers) is None:
                self.results[i] = got
                if caches:
                    if probe.observer is not None:
                        probe.observer("pack.cache_set", i)
                    store(style, self.lifted[i], self.qs, got)
                if emits:
                    self._emit(got, len(indices))
                if trace is not None:
                    trace.state(got, len(self.qs), len(indices))
            else:
                if shares is None:
                    shares = split_usage(total, weights)
                await self.alone(i, shares[index])

    async def _halves(self, style: SystemOneStyle, indices: list[int]) -> None:
        middle = len(indices) // 2
        await self._send(style, indices[:middle])
        await self._send(style, indices[middle:])

    # --- metrics ----------------------------------------------------------------------------

    def _emit(self, decision: Decision, size: int) -> None:
        """One metric event per packed state, as ``evaluate_prepared`` emits per state alone."""
        if probe.observer is not None:
            probe.observer("pack.emit", size)
        p = self.pipeline
        if p.options.on_metric is None:
            return  # nobody listens: the event is not built for every packed state
        p.emit(
            evaluate_event(
                p.style_name, decision.model, self.started, decision=decision, packed=size
            )
        )


async def evaluate_pack(
    pipeline: RequestPipeline,
    states: Sequence[Any],
    qs: dict[str, Question],
    *,
    fail_closed: bool = False,
    planned: Planned | None = None,
    scheduler: Scheduler | None = None,
) -> PackOutcome:
    """One result per state of ``states`` (one pack of ``plan_packs``), in order.

    ``qs`` is the prepared question set (``pipeline.prepare``, the same dict for every
    pack: the style encodes it once); the states have passed
    ``check_state``. ``fail_closed`` is ``evaluate_prepared``'s: an invalid decision (at pack 1,
    or the re-ask of an invalid packed answer) is then its ``InvalidDecision``. Every request is
    admitted by the transport through the run's ``scheduler`` (handed to it), as at pack 1.
    ``planned`` is this pack as ``packplan.plan_requests`` planned it: its estimate is reused
    for the same bytes. See the module docstring for packing, re-asks, splits, usage and the
    cache."""
    if probe.observer is not None:
        probe.observer("pack.send", planned)
    style = pipeline.systemone
    run = _Pack(pipeline, style, states, qs, fail_closed, planned, scheduler)
    if len(states) == 1 or style is None:
        for i in range(len(states)):
            await run.alone(i)
    else:
        await run.pack(list(range(len(states))))
    results: list[Decision | ClassifierError] = []
    for r in run.results:
        assert r is not None  # every path above decides every state
        results.append(r)
    return PackOutcome(results, run.requests)
