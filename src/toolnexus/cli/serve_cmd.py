"""``toolnexus serve``: a local System One server (replay, synthetic, or proxy + record).

The URL goes to stdout, alone on its first line (``--port 0`` picks a free port, so scripts
read it from there); the mode, client hints and one access-log line per request go to stderr.
Every start-up failure (no answer source, a replay directory that is missing or holds a broken
recording, a port in use, an unset ``--require-key-env`` variable) is one line and exit 2.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Annotated

import typer

from ..defaults import (
    DEFAULT_SERVE_FAULTS,
    DEFAULT_SERVE_MAX_BODY_BYTES,
    DEFAULT_SERVE_RETRY_AFTER_MS,
    DEFAULT_SERVE_STALL_SECONDS,
)
from .errors import EXIT_USAGE, CliError


def serve(
    replay: Annotated[
        Path | None,
        typer.Option(
            "--replay",
            metavar="DIR",
            help="Answer from the recordings in DIR (as --record writes them).",
        ),
    ] = None,
    synthetic: Annotated[
        bool, typer.Option("--synthetic", help="Answer with deterministic synthetic decisions.")
    ] = False,
    proxy: Annotated[
        str | None,
        typer.Option(
            "--proxy",
            metavar="URL",
            help="Forward to a real System One base URL with the caller's own key.",
        ),
    ] = None,
    record: Annotated[
        Path | None,
        typer.Option(
            "--record",
            metavar="DIR",
            help="With --proxy: save every answered exchange into DIR (never a header or key).",
        ),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the synthetic answers and of --fault-rate draws.")
    ] = 0,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (127.0.0.1 unless you mean otherwise).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port to bind; 0 picks a free one (printed on start).")
    ] = 8787,
    latency_ms: Annotated[
        float,
        typer.Option("--latency-ms", help="Delay every API answer by this many milliseconds."),
    ] = 0.0,
    fault_rate: Annotated[
        float,
        typer.Option(
            "--fault-rate", metavar="R", help="Share (0..1) of API requests answered by a fault."
        ),
    ] = 0.0,
    faults: Annotated[
        str,
        typer.Option(
            "--faults",
            metavar="LIST",
            help="Faults to draw from: 429,500,502,503,504,529,reset,stall.",
        ),
    ] = DEFAULT_SERVE_FAULTS,
    retry_after_ms: Annotated[
        int,
        typer.Option(
            "--retry-after-ms", help="Wait a 429/503 asks for (Retry-After and retry-after-ms)."
        ),
    ] = DEFAULT_SERVE_RETRY_AFTER_MS,
    stall_seconds: Annotated[
        float, typer.Option("--stall-seconds", help="How long a stall fault sends nothing.")
    ] = DEFAULT_SERVE_STALL_SECONDS,
    require_key_env: Annotated[
        str | None,
        typer.Option(
            "--require-key-env",
            metavar="NAME",
            help="Answer 401 unless 'Authorization: Bearer $NAME' is sent.",
        ),
    ] = None,
    max_body_bytes: Annotated[
        int,
        typer.Option(
            "--max-body-bytes", help="Largest request body (decompressed) accepted; over it: 413."
        ),
    ] = DEFAULT_SERVE_MAX_BODY_BYTES,
) -> None:
    """Serve the System One wire on 127.0.0.1: from recordings, a synthetic model, or a proxy."""
    import sys

    from ..errors import ClassifierError
    from ..serve.options import ServeOptions
    from ..serve.run import run

    if proxy is not None:
        from ..serve.proxy import upstream_base

        try:
            upstream_base(proxy)
        except ValueError as e:
            raise CliError(str(e)) from None
    options = ServeOptions(
        replay=replay,
        synthetic=synthetic,
        proxy=proxy,
        record=record,
        seed=seed,
        host=host,
        port=port,
        latency_ms=latency_ms,
        fault_rate=fault_rate,
        faults=faults,
        retry_after_ms=retry_after_ms,
        stall_seconds=stall_seconds,
        require_key_env=require_key_env,
        max_body_bytes=max_body_bytes,
        access_log=sys.stderr,
    )
    try:
        code = run(options)
    except ClassifierError as e:
        raise CliError(f"serve: {e.detail.removeprefix('serve: ')}") from None
    except OSError as e:
        why = "address already in use" if e.errno == errno.EADDRINUSE else (e.strerror or str(e))
        raise CliError(
            f"serve: cannot listen on {host}:{port}: {why}; choose another --port "
            "(--port 0 picks a free one)",
            EXIT_USAGE,
        ) from None
    raise typer.Exit(code)
