"""What a ``toolnexus serve`` server is told: :class:`ServeOptions`, checked before it binds."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..defaults import DEFAULT_SERVE_FAULTS, DEFAULT_SERVE_MAX_BODY_BYTES
from ..errors import ConfigError
from .faults import DEFAULT_RETRY_AFTER_MS, DEFAULT_STALL_SECONDS, Fault, parse_faults
from .replay import ReplayIndex
from .script import Script

__all__ = ["DEFAULT_MAX_BODY_BYTES", "ServeOptions"]

#: The largest request body accepted (``defaults.DEFAULT_SERVE_MAX_BODY_BYTES``).
DEFAULT_MAX_BODY_BYTES = DEFAULT_SERVE_MAX_BODY_BYTES


@dataclass
class ServeOptions:
    """Everything a server is told. Exactly one answer source: ``replay`` (a directory, or a
    ready :class:`ReplayIndex`), ``synthetic``, or ``proxy`` (with ``record``)."""

    replay: str | Path | ReplayIndex | None = None
    synthetic: bool = False
    proxy: str | None = None
    record: str | Path | None = None
    seed: int = 0
    host: str = "127.0.0.1"
    port: int = 0
    latency_ms: float = 0.0
    fault_rate: float = 0.0
    #: what ``fault_rate`` draws from: ``"429,503,reset"`` or faults (default: the statuses)
    faults: str | Sequence[Fault] = DEFAULT_SERVE_FAULTS
    retry_after_ms: int = DEFAULT_RETRY_AFTER_MS
    stall_seconds: float = DEFAULT_STALL_SECONDS
    require_key_env: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: where the access log goes (one line per request); ``None``: nowhere
    access_log: IO[str] | None = None
    #: answer a replay miss synthetically instead of 409 (tests/loopback.py's mode)
    replay_fallback_synthetic: bool = False
    #: a scripted reply per API request, or ``None`` for the normal answer (see ``script.py``)
    script: Script | None = None

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
        if self.require_key_env is not None and not os.environ.get(self.require_key_env):
            raise ConfigError(
                f"classifier: serve: --require-key-env {self.require_key_env} names a variable "
                "that is not set (or is empty); export it first"
            )
