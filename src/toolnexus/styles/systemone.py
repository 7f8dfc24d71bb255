"""The ``systemone`` style: one ``POST {base_url}/systemone`` per evaluate, and the opt-in cache.

The body is ``{model, questions, state}``, then ``request_params`` (shallow merge, a param wins),
then ``body_transform`` (runs last; its return value is what is sent), as canonical bytes.
``Decision.model`` is what the server says answered, which may be more specific than asked.

Cache (``cache=``, any object with ``get(key) -> str | None`` and ``set(key, value)``): a decision
is keyed by seed 004's ``decision_cache_key(endpoint, served model, state, questions)``, where the
served model is learnt through a ``model_cache_key(endpoint, requested model)`` entry written on
the first live answer. So a cached decision is only reused for the same endpoint (as configured,
``${NAME}`` unexpanded), the same served model, questions and state. A hit sends nothing and
carries ``cached=True``; a reply that fails ``validate_decision`` is returned but never cached.
Keys are sha256 digests of public values; the credential is never part of one.

Images (seed 004, Jev 1.14 experimental): image content parts anywhere in the state are lifted
into assets (``assets.lift_images``) and the state is sent with their placeholders. Before any
request, a backend without images raises ``ClassifierUnsupported(backend, model, "images")`` and
the image limits are checked. A request with assets goes as ``multipart/form-data`` exactly as
the official SDK sends it: part ``request`` (the JSON body plus ``assets``), then ``asset-0``,
``asset-1``, ... with their content types; plus ``TypeSafe-Danger-Zone-Images: true`` when the
backend row (or ``supports=``) opts in. The body is built once, so retries resend its bytes. A
request without assets is exactly the plain JSON it always was. The cache key carries each
image's sha256 under ``assets``, and is unchanged when there are none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import IMAGES_HEADER, ResolvedBackend, resolve_backend
from ..config.options import ClassifierOptions
from ..core import (
    CacheError,
    Checked,
    ClassifierError,
    ClassifierUnsupported,
    ConfigError,
    Decision,
    DecisionError,
    HookError,
    ImageLimits,
    LiftedState,
    Question,
    canonical_json,
    decision_cache_key,
    lift_with_questions,
    model_cache_key,
    questions_to_wire,
    sha256_hex,
    validate_decision,
)
from ..scheduler import LIMIT_SAFE_BYTES, TokenEstimate, request_limit
from ..transport import SystemOneTransport
from .systemone_reply import decode_decision, load_response

if TYPE_CHECKING:
    from ..scheduler import Scheduler

__all__ = ["PreparedRequest", "SystemOneStyle"]

PATH = "systemone"


@dataclass(frozen=True)
class PreparedRequest:
    """One request, built once per evaluate: every attempt sends exactly ``content``.

    ``json`` is the JSON body (for an image request, the ``request`` part, with its ``assets``
    map); ``headers`` the headers it adds (a multipart ``Content-Type``, the images header);
    ``lifted`` the state as sent and its assets."""

    lifted: LiftedState
    json: bytes
    content: bytes
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def multipart(self) -> bool:
        return self.content is not self.json


class SystemOneStyle:
    """The System One wire, built from the classifier's (already checked) options; the backend
    row and the transport's URL and adapter are resolved HERE, so a bad configuration fails at
    construction, not at the first call."""

    name = "systemone"

    def __init__(self, options: ClassifierOptions) -> None:
        self.backend: ResolvedBackend = resolve_backend(
            options.backend,
            base_url=options.base_url,
            model=options.model,
            api_key_env=options.api_key_env,
            supports=options.supports,
        )
        if options.body_transform is not None and not callable(options.body_transform):
            raise ConfigError("classifier: body_transform must be callable")
        self.model = self.backend.model
        self._params = dict(options.request_params or {})
        self._transform = options.body_transform
        self._cache = options.cache
        self.image_limits = ImageLimits.of(options.image_limits)
        # The typed values go on as the options built them.
        self.transport = SystemOneTransport(
            base_url=self.backend.base_url,
            api_key_env=self.backend.api_key_env,
            headers=options.headers,
            timeout=options.request_timeout,
            retry=options.retry_policy,
            transport=options.transport,
            http_client=options.http_client,
        )
        #: The endpoint as configured (``${NAME}`` unexpanded): what cache keys are built on.
        self.endpoint = self.transport.base_url
        #: Where a cache keeps the model this endpoint served for ``self.model`` (both fixed).
        self.model_key = model_cache_key(self.endpoint, self.model)
        #: The start of every decision key of this endpoint (see ``_decision_key``).
        endpoint_json = canonical_json(self.endpoint)
        self._key_prefix = b'{"endpoint":' + endpoint_json + b',"kind":"decision","model":'
        # The encoded question set of the last call, reused while the caller passes the SAME
        # dict (evaluate_batch prepares one question set for every state). Holding the dict
        # itself keeps its id from being reused by another object.
        self._last_questions: tuple[dict[str, Question], bytes] | None = None

    def __repr__(self) -> str:
        return (
            f"SystemOneStyle(backend={self.backend.name!r}, endpoint={self.endpoint!r}, "
            f"model={self.model!r})"
        )

    async def aclose(self) -> None:
        await self.transport.aclose()

    def _questions_bytes(self, questions: dict[str, Question]) -> bytes:
        last = self._last_questions
        if last is not None and last[0] is questions:
            return last[1]
        encoded = canonical_json(questions_to_wire(questions))
        self._last_questions = (questions, encoded)
        return encoded

    def body(
        self, state: Any, questions: dict[str, Question], assets: Mapping[str, Any] | None = None
    ) -> bytes:
        """The exact JSON bytes sent for ``state`` (as sent, images already lifted) and
        ``questions``; ``assets`` is the body's assets map, absent when empty."""
        if not self._params and self._transform is None and not assets:
            # Same bytes as canonical_json({"model", "questions", "state"}): the three keys are
            # already in ASCII order, and the question set is encoded once per batch.
            return b"".join(
                (
                    b'{"model":',
                    canonical_json(self.model),
                    b',"questions":',
                    self._questions_bytes(questions),
                    b',"state":',
                    canonical_json(state),
                    b"}",
                )
            )
        body: dict[str, Any] = {
            "model": self.model,
            "questions": questions_to_wire(questions),
            "state": state,
        }
        if assets:
            body["assets"] = dict(assets)
        body.update(self._params)
        if self._transform is None:
            return canonical_json(body)
        try:
            sent = self._transform(body)
        except ClassifierError:
            raise
        except Exception as e:
            raise HookError(f"classifier: body_transform raised {type(e).__name__}: {e}") from None
        return canonical_json(sent)

    # --- images -----------------------------------------------------------------------------

    def lift(self, state: Any, questions: dict[str, Question]) -> LiftedState:
        """``state`` with its images lifted into assets, checked BEFORE any request: a backend
        without images raises ClassifierUnsupported, then every image limit applies."""
        lifted = lift_with_questions(state, questions, self._questions_bytes)
        if lifted.assets:
            if not self.backend.images:
                raise ClassifierUnsupported(self.backend.name, self.model, "images")
            self.image_limits.check_request(lifted.assets)
        return lifted

    def prepare(self, lifted: LiftedState, questions: dict[str, Question]) -> PreparedRequest:
        """The request for a lifted state. Without assets: the plain JSON body, byte for byte
        what it always was. With assets: multipart/form-data as the official SDK sends it, unless
        ``request_params`` brings its own ``assets`` (then, as in the SDK, the request is JSON)."""
        if not lifted.assets:
            body = self.body(lifted.state, questions)
            return PreparedRequest(lifted, body, body)
        body = self.body(lifted.state, questions, lifted.wire_assets())
        if "assets" in self._params:
            return PreparedRequest(lifted, body, body)
        # httpx is loaded only for an image request: the default path never imports it.
        from ..transport import encode_multipart

        parts = [(a.part, a.image.media_type, a.image.data) for a in lifted.assets]
        # Deterministic, unlike the SDK's uuid4 hex (same shape): the same request is the same
        # bytes on every run, and a boundary derived from the content cannot occur in it.
        boundary = sha256_hex(body + "".join(a.image.sha256 for a in lifted.assets).encode())
        content, content_type = encode_multipart(body, parts, boundary[:32])
        headers = {"Content-Type": content_type}
        if self.backend.images_header:
            headers[IMAGES_HEADER] = "true"
        return PreparedRequest(lifted, body, content, headers)

    # --- cache ------------------------------------------------------------------------------

    @property
    def caches(self) -> bool:
        """Whether a cache is configured (``cache_get``/``cache_set`` need one)."""
        return self._cache is not None

    def cache_get(self, key: str) -> str | None:
        """The cached text under ``key``, or None; a failing cache is a ``CacheError``."""
        assert self._cache is not None
        try:
            value = self._cache.get(key)
        except Exception as e:
            raise CacheError(f"classifier: cache get failed: {type(e).__name__}") from None
        return value if isinstance(value, str) else None

    def cache_set(self, key: str, value: str) -> None:
        """Keep ``value`` under ``key``; a failing cache is a ``CacheError``."""
        assert self._cache is not None
        try:
            self._cache.set(key, value)
        except Exception as e:
            raise CacheError(f"classifier: cache set failed: {type(e).__name__}") from None

    def _decision_key(
        self, served: str, lifted: LiftedState, questions: dict[str, Question]
    ) -> str:
        """``canonical.decision_cache_key`` for this endpoint. Without assets it is built from
        the question set encoded once per batch: the same bytes, as ``body`` builds its own
        (the keys endpoint, kind, model, questions, state are already in ASCII order)."""
        assets = lifted.key_assets()
        if assets:
            return decision_cache_key(self.endpoint, served, lifted.state, questions, assets)
        return sha256_hex(
            b"".join(
                (
                    self._key_prefix,
                    canonical_json(served),
                    b',"questions":',
                    self._questions_bytes(questions),
                    b',"state":',
                    canonical_json(lifted.state),
                    b"}",
                )
            )
        )

    def _cached(self, key: str, questions: dict[str, Question]) -> Decision | None:
        text = self.cache_get(key)
        if text is None:
            return None
        try:
            decision = Decision.from_json(text, questions)
        except DecisionError:
            return None  # a damaged entry is a miss; the live answer overwrites it
        return dataclasses.replace(decision, cached=True)

    def _store(
        self,
        lifted: LiftedState,
        questions: dict[str, Question],
        decision: Decision,
        key: str | None,
        body: str,
    ) -> None:
        """Cache a valid live answer. ``key`` is the decision key the lookup computed, reused
        when the server still serves the model that lookup assumed. ``body`` is the answer's
        text as decoded, already scrubbed by the transport: stored as is when it holds no JSON
        escape (then every secret form in it was a literal one ``scrub_bytes`` replaced), so a
        cold run does not serialize each decision a second time; otherwise its canonical wire
        body, as before."""
        self.cache_set(self.model_key, decision.model)
        if key is None:
            key = self._decision_key(decision.model, lifted, questions)
        if "\\" in body:
            body = canonical_json(decision.to_wire()).decode("utf-8")
        self.cache_set(key, body)

    # --- evaluate ---------------------------------------------------------------------------

    def plan(self, state: Any, questions: dict[str, Question]) -> PreparedRequest | None:
        """What :meth:`decide` would send for ``state``, or None when the cache answers it (the
        same keys, the same lookup); nothing is sent or stored (``batch --dry-run``)."""
        lifted = self.lift(state, questions)
        if self._cache is not None:
            served = self.cache_get(self.model_key)
            if served:
                key = self._decision_key(served, lifted, questions)
                if self._cached(key, questions) is not None:
                    return None
        return self.prepare(lifted, questions)

    async def decide(
        self, state: Any, questions: dict[str, Question], scheduler: Scheduler | None = None
    ) -> Decision | Checked:
        """One decision: from the cache when configured and present, else one POST (built
        once; retries resend the same bytes), admitted by ``scheduler`` in a batch. With a
        cache, a live answer is validated (only a
        valid one is stored) and comes back ``Checked``, so the classifier does not validate it
        again."""
        lifted = self.lift(state, questions)
        key = served = None
        if self._cache is not None:
            served = self.cache_get(self.model_key)
            if served:
                # One key per state, reused to store a live answer: a cold --cache run costs
                # little more than a run without (issue 8, bench/batch_cli.py).
                key = self._decision_key(served, lifted, questions)
                hit = self._cached(key, questions)
                if hit is not None:
                    return hit
        request = self.prepare(lifted, questions)
        decision, body = await self.transport.exchange(
            PATH,
            request.content,
            request.headers or None,
            lambda r: decode_decision(
                r.content, r.endpoint, r.request_id, questions, self.transport.scrub
            ),
            lambda decoded: decoded[0].usage,
            estimate=self._watch_limits(scheduler, state, lifted, questions, request.json),
            scheduler=scheduler,
        )
        if self._cache is None:
            return decision
        invalid = validate_decision(questions, decision)
        if invalid is None:
            stored_key = key if served == decision.model else None
            self._store(lifted, questions, decision, stored_key, body)
        return Checked(decision, invalid)

    def _watch_limits(
        self,
        scheduler: Scheduler | None,
        state: Any,
        lifted: LiftedState,
        questions: dict[str, Question],
        body: bytes,
    ) -> TokenEstimate | None:
        """In a batch (``scheduler``) that watches the wire's limits
        (``BatchOptions.on_over_limit``), tell it
        before sending a request over them (issue 34 item 4), and return the estimate made for
        that, which the transport then admits the request with (never estimated twice). A body
        of at most ``LIMIT_SAFE_BYTES`` without images cannot pass a limit: nothing is made."""
        watch = None if scheduler is None else scheduler.on_over_limit
        if watch is None or (len(body) <= LIMIT_SAFE_BYTES and not lifted.assets):
            return None

        def state_and_longest_question() -> bytes:
            wire = questions_to_wire(questions)
            longest = max((canonical_json(q) for q in wire.values()), key=len, default=b"")
            return canonical_json(lifted.state) + longest

        sizes = [size for a in lifted.assets if (size := a.image.size) is not None]
        estimate, over = request_limit(body, state_and_longest_question, sizes)
        if over is not None:
            watch(state, over)
        return estimate

    def load_response(
        self, content: bytes, endpoint: str, request_id: str | None
    ) -> tuple[Any, str]:
        """A 200 body as parsed JSON and its text, or the DecisionError naming the endpoint and
        the request id (``systemone_reply.load_response``). ``packed.py`` decodes a packed
        response from here, per state."""
        return load_response(content, endpoint, request_id, self.transport.scrub)
