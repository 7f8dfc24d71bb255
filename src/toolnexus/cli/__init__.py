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
    """Console entry point. A Ctrl-C before the app's error boundary is up (while typer and
    the library are imported) still ends in the boundary's one line and exit 130."""
    try:
        _main(argv)
    except KeyboardInterrupt:
        sys.stderr.write("toolnexus: interrupted\n")
        raise SystemExit(130) from None  # cli.errors.EXIT_INTERRUPTED, not imported this early


def _main(argv: list[str] | None) -> NoReturn:
    if sys.stdout is None:
        # Started with stdout closed (`>&-`): Python sets sys.stdout to None, and every command
        # then ended in a traceback ('NoneType' object has no attribute 'buffer'), `filter`'s
        # exit 1 reading as "no line matched" (issue 43 item 2). Refused before anything runs,
        # as a full stdout is (`> /dev/full`: one line, exit 2): a file opened later could be
        # given descriptor 1 and take what was meant for stdout.
        if sys.stderr is not None:
            sys.stderr.write(
                "toolnexus: stdout is closed (>&-): nothing could be written; run it with "
                "stdout open (> /dev/null to discard the output)\n"
            )
        raise SystemExit(2)  # cli.errors.EXIT_USAGE, not imported this early
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
