"""What a ``toolnexus serve`` server is told: :class:`ServeOptions`, checked before it binds.

This dataclass is the one list of serve's options. ``toolnexus serve``'s flags are generated
from the fields that carry a :class:`Flag` (``cli/serve_cmd.py``), and ``serve(**fields)``
takes exactly these fields (``server.py``), so none of the three can lose one. Importing this
module is cheap (no aiohttp): the CLI builds its option table from it on every start.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ..core import DEFAULT_SERVE_FAULTS, DEFAULT_SERVE_MAX_BODY_BYTES, ConfigError
from .faults import CLI_FAULTS, DEFAULT_RETRY_AFTER_MS, DEFAULT_STALL_SECONDS, Fault, parse_faults
from .limits import Limits, parse_rate
from .script import Script
from .storm import Storm, parse_blackouts, parse_rate_changes

if TYPE_CHECKING:
    from .replay import ReplayIndex

__all__ = ["DEFAULT_MAX_BODY_BYTES", "Flag", "ServeOptions"]

#: The largest request body accepted (``defaults.DEFAULT_SERVE_MAX_BODY_BYTES``).
DEFAULT_MAX_BODY_BYTES = DEFAULT_SERVE_MAX_BODY_BYTES


@dataclass(frozen=True)
class Flag:
    """How a field is spelled on ``toolnexus serve``'s command line: the flag, its type there
    (a real type: the CLI reads it at run time), its help, its metavar, and a default for the
    command line when it differs from the library's (``--port``: 8787 there, 0 here)."""

    name: str
    type: Any
    help: str
    metavar: str | None = None
    cli_default: Any = None


def _on_cli(flag: Flag) -> dict[str, Flag]:
    """A field's metadata: how it is spelled on the command line."""
    return {"flag": flag}


@dataclass(kw_only=True)
class ServeOptions:
    """Everything a server is told. Exactly one answer source: ``replay`` (a directory, or a
    ready :class:`ReplayIndex`), ``synthetic``, or ``proxy`` (with ``record``)."""

    replay: str | Path | ReplayIndex | None = field(
        default=None,
        metadata=_on_cli(
            Flag(
                "--replay",
                Path | None,
                "Answer from the recordings in DIR (as --record writes them).",
                "DIR",
            )
        ),
    )
    synthetic: bool = field(
        default=False,
        metadata=_on_cli(
            Flag("--synthetic", bool, "Answer with deterministic synthetic decisions.")
        ),
    )
    proxy: str | None = field(
        default=None,
        metadata=_on_cli(
            Flag(
                "--proxy",
                str | None,
                "Forward to a real System One base URL with the caller's own key.",
                "URL",
            )
        ),
    )
    record: str | Path | None = field(
        default=None,
        metadata=_on_cli(
            Flag(
                "--record",
                Path | None,
                "With --proxy: save every answered exchange into DIR (never a header or key).",
                "DIR",
            )
        ),
    )
    seed: int = field(
        default=0,
        metadata=_on_cli(
            Flag("--seed", int, "Seed of the synthetic answers and of --fault-rate draws.")
        ),
    )
    host: str = field(
        default="127.0.0.1",
        metadata=_on_cli(
            Flag("--host", str, "Address to bind (127.0.0.1 unless you mean otherwise).")
        ),
    )
    port: int = field(
        default=0,
        metadata=_on_cli(
            Flag(
                "--port",
                int,
                "Port to bind; 0 picks a free one (printed on start).",
                cli_default=8787,
            )
        ),
    )
    latency_ms: float = field(
        default=0.0,
        metadata=_on_cli(
            Flag("--latency-ms", float, "Delay every API answer by this many milliseconds.")
        ),
    )
    fault_rate: float = field(
        default=0.0,
        metadata=_on_cli(
            Flag("--fault-rate", float, "Share (0..1) of API requests answered by a fault.", "R")
        ),
    )
    #: what ``fault_rate`` draws from: ``"429,503,reset"`` or faults (default: the statuses)
    faults: str | Sequence[Fault] = field(
        default=DEFAULT_SERVE_FAULTS,
        metadata=_on_cli(
            Flag("--faults", str, f"Faults to draw from: {','.join(CLI_FAULTS)}.", "LIST")
        ),
    )
    retry_after_ms: int = field(
        default=DEFAULT_RETRY_AFTER_MS,
        metadata=_on_cli(
            Flag(
                "--retry-after-ms", int, "Wait a 429/503 asks for (Retry-After and retry-after-ms)."
            )
        ),
    )
    stall_seconds: float = field(
        default=DEFAULT_STALL_SECONDS,
        metadata=_on_cli(Flag("--stall-seconds", float, "How long a stall fault sends nothing.")),
    )
    require_key_env: str | None = field(
        default=None,
        metadata=_on_cli(
            Flag(
                "--require-key-env",
                str | None,
                "Answer 401 unless 'Authorization: Bearer $NAME' is sent.",
                "NAME",
            )
        ),
    )
    max_body_bytes: int = field(
        default=DEFAULT_MAX_BODY_BYTES,
        metadata=_on_cli(
            Flag(
                "--max-body-bytes",
                int,
                "Largest request body (decompressed) accepted; over it: 413.",
            )
        ),
    )
    #: requests per key, as ``"1200/min"`` (or ``"20/s"``); over it: 429 (``limits.py``)
    rate_limit: str | None = field(
        default=None,
        metadata=_on_cli(
            Flag(
                "--rate-limit",
                str | None,
                "Requests per key (Authorization bearer), e.g. 1200/min; burst at most 1 s; "
                "over it: 429 with Retry-After and retry-after-ms.",
                "N/min",
            )
        ),
    )
    #: input tokens per key, as ``"250000/s"`` (synthetic.input_tokens of each request)
    token_limit: str | None = field(
        default=None,
        metadata=_on_cli(
            Flag(
                "--token-limit",
                str | None,
                "Input tokens per key, e.g. 250000/s (each request's usage.input_tokens); "
                "over it: 429.",
                "N/s",
            )
        ),
    )
    #: synthetic answers report ``usage.cost`` as a gateway does: USD per million tokens billed
    cost_per_mtok: float = field(
        default=0.0,
        metadata=_on_cli(
            Flag(
                "--cost-per-mtok",
                float,
                "Synthetic answers report usage.cost, as a gateway does: USD per million "
                "tokens billed (0: no cost reported).",
                "USD",
            )
        ),
    )
    #: a blackout (``storm.py``): ``"2+6"`` answers every API request 429 from 2 s to 8 s
    blackout: str | None = field(
        default=None,
        metadata=_on_cli(
            Flag(
                "--blackout",
                str | None,
                "Answer every API request with a 429 (or :503, :529, :stall) for SECONDS from "
                "START seconds after the server starts, e.g. 2+6 or 2+6:503 (commas for more).",
                "START+SECONDS",
            )
        ),
    )
    #: a change of ``rate_limit`` at a time (``storm.py``): ``"10=600/min"``
    rate_change: str | None = field(
        default=None,
        metadata=_on_cli(
            Flag(
                "--rate-change",
                str | None,
                "Set --rate-limit to N/min from SECONDS after the server starts, e.g. "
                "10=600/min (commas for more, in time order).",
                "SECONDS=N/min",
            )
        ),
    )
    #: where the access log goes (one line per request); ``None``: nowhere
    access_log: IO[str] | None = None
    #: answer a replay miss synthetically instead of 409 (tests/loopback.py's mode)
    replay_fallback_synthetic: bool = False
    #: a scripted reply per API request, or ``None`` for the normal answer (see ``script.py``)
    script: Script | None = None

    def limits(self, clock: Callable[[], float] | None = None) -> Limits:
        """The per-key limits ``rate_limit`` and ``token_limit`` ask for."""
        try:
            requests = (
                None
                if self.rate_limit is None
                else parse_rate(self.rate_limit, "--rate-limit", "1200/min")
            )
            tokens = (
                None
                if self.token_limit is None
                else parse_rate(self.token_limit, "--token-limit", "250000/s")
            )
        except ValueError as e:
            raise ConfigError(f"classifier: serve: {e}") from None
        return Limits(requests, tokens) if clock is None else Limits(requests, tokens, clock)

    def storm(self) -> Storm:
        """The blackouts and rate changes ``blackout`` and ``rate_change`` ask for."""
        try:
            blackouts = (
                ()
                if self.blackout is None
                else parse_blackouts(
                    self.blackout,
                    retry_after_ms=self.retry_after_ms,
                    stall_seconds=self.stall_seconds,
                )
            )
            changes = () if self.rate_change is None else parse_rate_changes(self.rate_change)
        except ValueError as e:
            raise ConfigError(f"classifier: serve: {e}") from None
        return Storm(blackouts, changes)

    def fault_list(self) -> tuple[Fault, ...]:
        """``faults`` as faults; a string is parsed with this ``retry_after_ms`` and
        ``stall_seconds``."""
        if not isinstance(self.faults, str):
            return tuple(self.faults)
        try:
            return parse_faults(
                self.faults, retry_after_ms=self.retry_after_ms, stall_seconds=self.stall_seconds
            )
        except ValueError as e:
            raise ConfigError(f"classifier: serve: {e}") from None

    def check(self) -> None:
        """Raise ``ConfigError`` naming the first option that cannot work."""
        sources = [self.replay is not None, self.synthetic, self.proxy is not None]
        if sum(sources) != 1:
            raise ConfigError(
                "classifier: serve: give exactly one answer source: --replay DIR, --synthetic, "
                "or --proxy URL --record DIR"
            )
        if self.record is not None and self.proxy is None:
            raise ConfigError("classifier: serve: --record DIR goes with --proxy URL")
        if not 0.0 <= self.fault_rate <= 1.0:
            raise ConfigError(f"classifier: serve: --fault-rate {self.fault_rate} is not in 0..1")
        if self.fault_rate > 0 and not self.fault_list():
            raise ConfigError("classifier: serve: --fault-rate needs at least one fault kind")
        for flag, value in (
            ("--latency-ms", self.latency_ms),
            ("--stall-seconds", self.stall_seconds),
            ("--cost-per-mtok", self.cost_per_mtok),
        ):
            # inf would hold every request forever; nan compares false with everything.
            if not math.isfinite(value) or value < 0:
                raise ConfigError(
                    f"classifier: serve: {flag} {value} is not a finite number of 0 or more"
                )
        for flag, number, ok, allowed in (
            ("--port", self.port, 0 <= self.port <= 65535, "0..65535"),
            ("--max-body-bytes", self.max_body_bytes, self.max_body_bytes >= 1, "1 or more"),
        ):
            if not ok:
                raise ConfigError(f"classifier: serve: {flag} {number} is out of range ({allowed})")
        replay = self.replay
        if isinstance(replay, str | Path) and Path(replay).exists() and not Path(replay).is_dir():
            # load_recordings would say "does not exist" of a file that plainly exists.
            raise ConfigError(
                f"classifier: serve: replay directory {replay} is not a directory; give the "
                "folder that holds the recordings (*.json)"
            )
        self.limits()
        if self.storm().rate_changes and self.rate_limit is None:
            raise ConfigError(
                "classifier: serve: --rate-change changes --rate-limit: give --rate-limit too"
            )
        if self.require_key_env is not None and not os.environ.get(self.require_key_env):
            raise ConfigError(
                f"classifier: serve: --require-key-env {self.require_key_env} names a variable "
                "that is not set (or is empty); export it first"
            )
