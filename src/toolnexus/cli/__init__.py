"""The ``toolnexus`` command line. Only this package imports typer and rich.

``main`` is the console entry point. ``toolnexus --version`` is answered here, before typer or
the library is imported, and the plain forms of ``check-criteria`` and ``canonical`` run
without typer (``offline.fast_main``): they run often (a pre-commit hook, scripts) and typer's
import would be most of their start-up, which ``bench/cli_start.py`` measures. Everything else
goes to the Typer app in ``app.py``.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # `typing` itself costs --version a few ms
    from typing import NoReturn


def main(argv: list[str] | None = None) -> NoReturn:
    """Console entry point."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        from .. import __version__

        sys.stdout.write(f"toolnexus {__version__}\n")
        raise SystemExit(0)
    if args and args[0] in ("check-criteria", "canonical"):  # offline.FAST_COMMANDS
        from .offline import fast_main

        code = fast_main(args)
        if code is not None:
            sys.stdout.flush()
            raise SystemExit(code)
    from .app import main as run_app

    run_app(argv)
