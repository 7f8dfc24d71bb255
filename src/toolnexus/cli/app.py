"""The Typer app, the one error boundary, and the exit codes.

Exit codes (README and ``--help`` document them):
  0 ok; 1 a ``--fail-on`` condition met (or check-criteria findings); 2 usage or input error;
  3 backend failure; 130 interrupted.

The boundary is the app's group class (``BoundaryGroup.invoke``), so the console entry point,
``python -m toolnexus`` and Typer's ``CliRunner`` all pass through the same code: an input or
backend error becomes ONE line on stderr and a named exit code, never a traceback.

Start-up stays fast: this module imports typer only. Each command imports what it needs
(httpx, rich tables, the classifier) inside its own function, and ``check-criteria`` and
``canonical`` never import httpx (a subprocess test asserts it).
"""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import typer
from typer.core import TyperGroup

from .. import __version__

EXIT_OK = 0
EXIT_CONDITION = 1
EXIT_USAGE = 2
EXIT_BACKEND = 3
#: 128 + SIGINT, what a shell reports for Ctrl-C.
EXIT_INTERRUPTED = 130

EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 a --fail-on condition met (check-criteria: findings); "
    "2 usage or input error; 3 backend failure; 130 interrupted."
)


class CliError(Exception):
    """An error the boundary prints as one line and turns into an exit code.

    ``message`` is complete and actionable (file:line where there is one)."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    raise CliError(message, code)


def one_line(text: str) -> str:
    """Collapse a message onto one line: the boundary's promise is one line per error."""
    return " ".join(str(text).split())


def exit_code_for(error: BaseException) -> int | None:
    """The exit code the boundary gives ``error``, or ``None`` when it is not ours to handle
    (a bug, which keeps its traceback so it can be reported)."""
    from ..errors import ClassifierError, DecisionError, HTTPStatusError, TransportError

    if isinstance(error, CliError):
        return error.code
    # A backend that failed, or answered something that is not a decision, is a backend
    # failure; every other library error is about the caller's input or options.
    if isinstance(error, HTTPStatusError | TransportError | DecisionError):
        return EXIT_BACKEND
    if isinstance(error, ClassifierError):
        return EXIT_USAGE
    return None


def report(error: BaseException) -> None:
    """Write the one stderr line for ``error``."""
    message = error.message if isinstance(error, CliError) else str(error)
    sys.stderr.write(f"toolnexus: {one_line(message)}\n")
    sys.stderr.flush()


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush is quiet."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class BoundaryGroup(TyperGroup):
    """The app's group: every command runs inside the one error boundary."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise
        except KeyboardInterrupt:
            sys.stderr.write("toolnexus: interrupted\n")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except BrokenPipeError:
            # `toolnexus ... | head`: the reader left; nothing to report (Typer alone would
            # exit 1 here).
            _silence_stdout()
            raise typer.Exit(EXIT_OK) from None
        except Exception as e:
            code = exit_code_for(e)
            if code is None:
                raise
            report(e)
            raise typer.Exit(code) from None


app = typer.Typer(
    name="toolnexus",
    cls=BoundaryGroup,
    help="Typed judgments from System One classifiers.",
    no_args_is_help=True,
    # Keys live in memory: a traceback with locals could print one.
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    add_completion=True,
    rich_markup_mode=None,
)


def _version_callback(value: bool) -> None:
    if value:
        sys.stdout.write(f"toolnexus {__version__}\n")
        raise typer.Exit(0)


@app.callback(epilog=EXIT_CODES_HELP)
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        callback=_version_callback,
        is_eager=True,
    ),
) -> None:
    """Typed judgments from System One classifiers."""


def _register() -> None:
    # Each command lives in its own module; registering imports only typer-level code.
    from . import commands  # noqa: F401


def get_app() -> typer.Typer:
    """The app with every command registered (what tests hand to ``CliRunner``)."""
    _register()
    return app


def main(argv: list[str] | None = None) -> None:
    """Console entry point. Commands run inside ``BoundaryGroup``; this catches what happens
    outside a command (usage errors, Ctrl-C while parsing, a closed pipe) and turns the
    command's return value into the process exit code."""
    _register()
    try:
        rv = app(args=argv, prog_name="toolnexus", standalone_mode=False)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        sys.stderr.write("toolnexus: interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        # `toolnexus ... | head`: the reader left; nothing to report.
        _silence_stdout()
        sys.exit(EXIT_OK)
    except Exception as e:
        from typer._click.exceptions import ClickException

        if isinstance(e, ClickException):
            # Usage errors (an unknown option, a bad value, a missing argument): click's own
            # message with the usage line, exit 2.
            e.show()
            sys.exit(EXIT_USAGE if e.exit_code in (1, 2) else e.exit_code)
        code = exit_code_for(e)
        if code is None:
            raise
        report(e)
        sys.exit(code)
    # Non-standalone mode hands back the exit code of `typer.Exit(n)` raised in a command.
    sys.exit(rv if isinstance(rv, int) and not isinstance(rv, bool) else EXIT_OK)
