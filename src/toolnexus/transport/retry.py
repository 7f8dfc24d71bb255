"""The retry loop: one POST of canonical bytes to ``{base_url}/<path>``, retried, errors made safe.

Every request of the systemone and llm styles goes through :meth:`SystemOneTransport.post`, whatever
moves the bytes: the default :class:`~.aiohttp_adapter.AiohttpAdapter`, or an injected httpx
transport or client through :class:`~.httpx_adapter.HttpxAdapter` (how the unit tests run it).

Retries (seed 004 + SPEC-8B Appendix A, verbatim), as the ``config.RetryPolicy`` it is given says:

- budget ``retries`` (default 2). ``retries=0`` means exactly one attempt, no retry at all.
- retryable by default: HTTP 408/429/500/502/503/504/529 and network errors (timeout, refused,
  reset). Every other status, 501 and 520-527 included, is terminal. ``retryable_statuses`` only
  ADDS to that set.
- ``on_error(info) -> "retry" | "fail"`` runs on EVERY failed attempt and has the final say;
  ``info`` is a frozen :class:`~toolnexus.config.ErrorInfo` (attempt, kind, retryable, wait,
  status, retry_after, request_id). A "retry" is still bounded by ``retries``.
- the wait: a ``Retry-After`` in delay-seconds form (ASCII digits only, 0..2147483647, 0 = now)
  wins; anything else (a date, fractional, signed, too big, empty, garbage) falls back to
  ``base * 2**attempt`` (a zero base => 500 ms). No jitter. ``RetryPolicy.delay``.
- every retry carries ``X-TypeSafe-Retry-Count: <n>``, as the official SDK labels them.
- a per-request timeout counts as a network error and is retried like one (the official SDK does
  the same; note the wire notes' warning that a retried POST may bill twice: an ``on_error`` that
  answers "fail" when ``info.kind == "timeout"`` opts out). Cancellation of the calling task is
  never retried.

In a batch (the caller hands :meth:`SystemOneTransport.exchange` the run's ``scheduler``:
an argument, never a context variable) every request is admitted by it first, with the
estimate of its own bytes, and released with its outcome and the usage charged.
There a 429 (and a 503 or 529 that says how long with ``Retry-After``: an overloaded server,
issue 32) is not slept on here: the request goes back to the run's scheduler at once, which
pauses the whole run for its ``retry-after-ms`` / ``Retry-After``, cuts the run's concurrency
and admits the request again (within the run's patience), without spending ``retries`` on it
(those are for failures of the request itself). A 503 or 529 without a wait is retried here
first, as any 5xx (the official SDK's per-request backoff), and goes to the scheduler only
once ``retries`` are spent: an outage is still ridden out within the patience, and one
replica's refusal no longer pauses the whole run. ``on_error`` answering "fail" to a 429
still makes it this request's error.
Outside a batch (one ``evaluate``) a 429 is retried here as seed 004 says, within ``retries``.

``base_url`` and header values may hold ``${NAME}`` references; they, and the credential read from
the variable named ``api_key_env``, are resolved at EVERY call (``endpoint.py``) and never stored.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ..config import ErrorInfo, RetryPolicy, Timeout, TransportKind
from ..core import (
    ENV_REF,
    BackendError,
    ClassifierUsage,
    ConfigError,
    DecisionError,
    HTTPStatusError,
    StaticMiss,
    redact_url,
    url_secrets,
    userinfo,
)
from ..scheduler import (
    STORM_STATUSES,
    Outcome,
    Scheduler,
    TokenEstimate,
    estimate_tokens,
    outcome_of,
    retry_after_seconds,
)
from .adapter import MAX_BODY_BYTES, Adapter, BodyTooLarge, SendError
from .endpoint import (
    check_url,
    joined,
    prepare,
    trimmed,
)
from .observe import AttemptObserver, AttemptWatch, observers
from .redaction import (
    http_status_error,
    redact,
    replay_miss,
    scrub,
    scrub_bytes,
    transport_error,
)

__all__ = [
    "REQUEST_ID_HEADER",
    "RETRY_COUNT_HEADER",
    "Reply",
    "SystemOneTransport",
]

RETRY_COUNT_HEADER = "X-TypeSafe-Retry-Count"
REQUEST_ID_HEADER = "x-typesafe-request-id"

Sleep = Callable[[float], Any]
T = TypeVar("T")


def _storm(failure: BackendError | StaticMiss, retries_spent: bool) -> bool:
    """Whether a batch hands ``failure`` to the run's scheduler (a run-wide wait, patience)
    instead of retrying it here.

    A 429 always: it is the account's limit, which every request of the run shares. A 503 or
    529 when the server said how long (``Retry-After`` / ``retry-after-ms``: the service, not
    this request, is unavailable for that long), or once this request's own retries are spent
    (it persists: an outage, ridden out within the patience). A 503 or 529 with no wait is
    first retried here after ``retry_base_ms`` doubling, as the official SDK and seed 004 retry
    any 5xx: one overloaded replica's refusal says nothing about the rest of the run, and a
    run-wide pause (and a halved window) for it idled every request in flight."""
    if not isinstance(failure, HTTPStatusError) or failure.status not in STORM_STATUSES:
        return False
    if failure.status == 429 or retries_spent:
        return True
    return retry_after_seconds(failure.retry_after, failure.retry_after_ms) is not None


class _Throttled(Exception):
    """A 429 inside a batch that ``on_error`` would retry: handed to the run's scheduler."""

    def __init__(self, error: HTTPStatusError) -> None:
        super().__init__(error.message)
        self.error = error


def _reply(reply: Reply) -> Reply:
    return reply


def _no_usage(_: object) -> ClassifierUsage:
    return ClassifierUsage()


def _header(headers: Mapping[str, str], name: str, secrets: list[str]) -> str | None:
    """A response header as errors may quote it: scrubbed, and cut to 200 characters."""
    value = headers.get(name)
    if value is None:
        return None
    return scrub(value, secrets)[:200]


@dataclass(frozen=True)
class Reply:
    """A 2xx answer: its body bytes and the server's request id (or None)."""

    status: int
    content: bytes
    request_id: str | None
    endpoint: str


def _adapter_for(transport: Any, http_client: Any) -> Adapter:
    """The adapter that moves the bytes; options are checked here, at construction."""
    if transport is not None and http_client is not None:
        raise ConfigError("classifier: give transport= or http_client=, not both")
    if transport is None and http_client is None:
        from .aiohttp_adapter import AiohttpAdapter

        return AiohttpAdapter()
    # Only a host that passes an httpx object pays for importing httpx's adapter.
    from .httpx_adapter import HttpxAdapter

    return HttpxAdapter.checked(transport, http_client)


def _watch(watching: tuple[AttemptObserver, ...], attempt: int) -> list[AttemptWatch]:
    """The watches of one attempt (``observe.py``): only observers that want to follow it."""
    return [w for o in watching if (w := o.attempt(attempt)) is not None]


def _end(watches: list[AttemptWatch]) -> None:
    """An attempt left by an exception the loop does not handle (a cancellation, a bug)."""
    for w in watches:
        w.end()


class SystemOneTransport:
    """POSTs canonical bytes to ``{base_url}/<path>`` with retries; see the module docstring.

    ``transport=`` any httpx async transport, or ``http_client=`` a ready ``httpx.AsyncClient``
    (the host closes it); neither means the default aiohttp pool, closed by ``aclose()``.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key_env: str,
        headers: Mapping[str, str] | None = None,
        timeout: Timeout | None = None,
        retry: RetryPolicy | None = None,
        transport: Any = None,
        http_client: Any = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        # What is sent keeps a user:pass@ written into the URL; what any message, repr or cache
        # key shows never does.
        self._base_url = trimmed(base_url)
        self.base_url = redact_url(self._base_url)
        check_url(self.base_url, self._base_url)
        self.api_key_env = api_key_env
        self._headers = dict(headers or {})
        for name, value in self._headers.items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise ConfigError("classifier: headers must map header names to strings")
        #: The two typed values, as ``ClassifierOptions`` built them: used, never re-derived.
        self.timeout = timeout if timeout is not None else Timeout()
        self.retry = retry if retry is not None else RetryPolicy()
        self.sleep = sleep
        self._adapter = _adapter_for(transport, http_client)

    def __repr__(self) -> str:
        return f"SystemOneTransport(base_url={self.base_url!r}, api_key_env={self.api_key_env!r})"

    def endpoint(self, path: str) -> str:
        """The endpoint as configured, ``${NAME}`` unexpanded: what errors and keys show."""
        return joined(self.base_url, path)

    async def aclose(self) -> None:
        """Close the connection pool; a host's own http_client is left for the host to close.
        Safe to call twice."""
        await self._adapter.aclose()

    def secrets(self) -> list[str]:
        """Every value this transport would send as a credential or an expanded reference, as
        the environment holds them now: what a quoted reply must not show."""
        found = [v for v in (os.environ.get(self.api_key_env),) if v]
        found += url_secrets(self._base_url)
        for template in (self._base_url, *self._headers.values()):
            for name in ENV_REF.findall(template):
                value = os.environ.get(name)
                if value:
                    found.append(value)
        return found

    def scrub(self, text: str) -> str:
        """``text`` with account identifiers redacted and every :meth:`secrets` value scrubbed:
        for quoting a reply body in an error."""
        return redact(text, self.secrets())

    def _prepare(self, path: str) -> tuple[str, dict[str, str], list[str]]:
        return prepare(self._base_url, self.base_url, path, self._headers, self.api_key_env)

    async def post(
        self,
        path: str,
        body: bytes,
        extra_headers: Mapping[str, str] | None = None,
        *,
        scheduler: Scheduler | None = None,
    ) -> Reply:
        """POST ``body`` (already canonical bytes) with retries. Returns the 2xx reply; raises
        HTTPStatusError, TransportError, ConfigError or HookError, never a third-party
        exception. With the run's ``scheduler`` (a batch), admitted by it (see the module
        docstring)."""
        return await self.exchange(
            path, body, extra_headers, _reply, _no_usage, scheduler=scheduler
        )

    async def exchange(
        self,
        path: str,
        body: bytes,
        extra_headers: Mapping[str, str] | None,
        decode: Callable[[Reply], T],
        usage: Callable[[T], ClassifierUsage],
        *,
        estimate: TokenEstimate | None = None,
        scheduler: Scheduler | None = None,
    ) -> T:
        """:meth:`post`, then ``decode`` the 2xx reply; with the run's ``scheduler`` (a batch)
        the request is admitted by it, and it is told ``usage(decoded)``, what the server
        charged (a spend budget settles on it); without one (a single evaluate) it is not.

        ``estimate`` is the request's token estimate when the caller made it already (a packed
        request: the plan's, or of its JSON part when ``body`` is multipart); else it is made
        from ``body`` once, if a scheduler member asks, and kept across re-admissions."""
        if scheduler is None:
            return decode(await self._attempts(path, body, extra_headers, throttle=False))
        made: list[TokenEstimate] = [] if estimate is None else [estimate]

        def estimated() -> TokenEstimate:
            if not made:
                made.append(estimate_tokens(body))
            return made[0]

        while True:
            async with scheduler.admit(estimated) as slot:
                try:
                    reply = await self._attempts(path, body, extra_headers, throttle=True)
                except _Throttled as throttled:
                    error = throttled.error
                    await slot.settle(
                        outcome=outcome_of(error, retry_after_ms=error.retry_after_ms)
                    )
                    continue  # the scheduler's next admission waits out the run's pause
                except HTTPStatusError as error:
                    await slot.settle(
                        outcome=outcome_of(error, retry_after_ms=error.retry_after_ms)
                    )
                    raise
                decoded = decode(reply)
                await slot.settle(outcome=Outcome.success(), usage=usage(decoded))
                return decoded

    async def _attempts(
        self, path: str, body: bytes, extra_headers: Mapping[str, str] | None, *, throttle: bool
    ) -> Reply:
        """The retry loop; with ``throttle``, a retryable 429 raises :class:`_Throttled`."""
        endpoint = self.endpoint(path)
        url, headers, secrets = self._prepare(path)
        if extra_headers:
            headers.update(extra_headers)
        send = self._adapter.send
        retry = self.retry
        retryable = retry.retryable
        seconds = self.timeout.seconds
        watching = observers()
        watches: list[AttemptWatch] = []
        attempt = 0
        while True:
            if attempt:
                headers[RETRY_COUNT_HEADER] = str(attempt)
            if watching:
                watches = _watch(watching, attempt)
            failure: BackendError | StaticMiss
            too_large = False
            try:
                async with asyncio.timeout(seconds):
                    try:
                        status, resp_headers, content = await send(url, headers, body, seconds)
                    except BodyTooLarge as big:
                        status, resp_headers, content = big.status, big.headers, b""
                        too_large = True
            except (SendError, TimeoutError) as e:
                kind: TransportKind = e.kind if isinstance(e, SendError) else "timeout"
                for w in watches:
                    w.failed(kind)
                    w.end()
                failure = transport_error(
                    kind, endpoint=endpoint, timeout=seconds, attempts=attempt + 1
                )
                info = ErrorInfo(
                    attempt=attempt,
                    kind=kind,
                    retryable=True,
                    wait=retry.delay(attempt),
                )
            except BaseException:
                _end(watches)  # a cancellation: the attempt is over all the same
                raise
            else:
                # Scrubbed HERE, before anything decodes, cuts, stores, records or prints them:
                # a server may echo the key in any body of any status, or in a header.
                content = scrub_bytes(content, secrets)
                request_id = _header(resp_headers, REQUEST_ID_HEADER, secrets)
                for w in watches:
                    w.response(status, request_id)
                    w.end()
                rid = f" (request id {request_id})" if request_id else ""
                if too_large and 200 <= status < 300:
                    raise DecisionError(
                        f"classifier: POST {endpoint}: HTTP {status}: the response body is "
                        f"larger than {MAX_BODY_BYTES >> 20} MB once decoded; refused{rid}"
                    )
                if too_large:
                    content = f"(a body larger than {MAX_BODY_BYTES >> 20} MB, not read)".encode()
                if 200 <= status < 300:
                    return Reply(status, content, request_id, endpoint)
                retry_after = _header(resp_headers, "retry-after", secrets)
                failure = http_status_error(
                    status,
                    content,
                    endpoint=endpoint,
                    request_id=request_id,
                    retry_after=retry_after,
                    secrets=secrets,
                    api_key_env=self.api_key_env,
                    key_is_set=bool(os.environ.get(self.api_key_env)),
                    attempts=attempt + 1,
                    retry_after_ms=_header(resp_headers, "retry-after-ms", secrets),
                    url_credentials=bool(userinfo(self._base_url)),
                    www_authenticate=_header(resp_headers, "www-authenticate", secrets),
                )
                if status == 409:
                    failure = replay_miss(failure) or failure
                info = ErrorInfo(
                    attempt=attempt,
                    kind="http status",
                    retryable=status in retryable,
                    wait=retry.delay(attempt, retry_after),
                    status=status,
                    retry_after=retry_after,
                    request_id=request_id,
                )
            verdict = retry.verdict(info)
            if throttle and verdict == "retry" and _storm(failure, attempt >= retry.retries):
                assert isinstance(failure, HTTPStatusError)
                raise _Throttled(failure)
            if verdict == "fail" or attempt >= retry.retries:
                raise failure
            for observer in watching:
                observer.waited(info.wait, attempt + 1)
            await self.sleep(info.wait)
            attempt += 1
