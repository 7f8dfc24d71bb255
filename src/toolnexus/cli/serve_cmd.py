"""``toolnexus serve``: a local System One server (replay, synthetic, or proxy + record).

The URL goes to stdout, alone on its first line (``--port 0`` picks a free port, so scripts
read it from there); the mode, client hints and one access-log line per request go to stderr.
Every start-up failure (no answer source, a replay directory that is missing or holds a broken
recording, a port in use, an unset ``--require-key-env`` variable) is one line and exit 2.

The flags are not listed here: they are generated from the fields of
:class:`~toolnexus.serve.options.ServeOptions` that carry a ``Flag`` (the one field list), by
``options.options_from`` as every other command's are.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping
from typing import Any

import typer

from ..core import EXIT_USAGE
from ..serve import ServeOptions
from .errors import CliError
from .options import options_from


def _loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only."""
    import ipaddress

    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name another machine may resolve to this one


@options_from(ServeOptions, "serve_values")
def serve(*, serve_values: Mapping[str, Any]) -> None:
    """Serve the System One wire on 127.0.0.1: from recordings, a synthetic model, or a proxy."""
    import sys

    values = dict(serve_values)

    from ..core import ClassifierError
    from ..serve import run, upstream_base

    proxy = values.get("proxy")
    if proxy is not None:
        try:
            upstream_base(proxy)
        except ValueError as e:
            raise CliError(str(e)) from None
    options = ServeOptions(**values, access_log=sys.stderr)
    if not _loopback(options.host):
        # Issue 31 item 22: one warning, before the server starts.
        sys.stderr.write(
            f"toolnexus: warning: serve --host {options.host} is reachable from other machines "
            "(it answers anyone who can reach this address); use --host 127.0.0.1 to keep it "
            "on this machine\n"
        )
    try:
        code = run(options)
    except ClassifierError as e:
        raise CliError(f"serve: {e.detail.removeprefix('serve: ')}") from None
    except OSError as e:
        why = "address already in use" if e.errno == errno.EADDRINUSE else (e.strerror or str(e))
        raise CliError(
            f"serve: cannot listen on {options.host}:{options.port}: {why}; choose another "
            "--port (--port 0 picks a free one)",
            EXIT_USAGE,
        ) from None
    raise typer.Exit(code)
