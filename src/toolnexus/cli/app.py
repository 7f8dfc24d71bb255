"""The Typer app, the one error boundary, and the exit codes.

Exit codes (README and ``--help`` document them):
  0 ok; 1 a ``--fail-on`` condition met (or check-criteria findings); 2 usage or input error;
  3 backend failure.

Start-up stays fast: this module imports typer only. Each command imports what it needs
(httpx, rich tables, the classifier) inside its own function, and ``check-criteria`` and
``canonical`` never import httpx (a subprocess test asserts it).
"""

from __future__ import annotations

import sys
from typing import NoReturn

import typer

from .. import __version__

EXIT_OK = 0
EXIT_CONDITION = 1
EXIT_USAGE = 2
EXIT_BACKEND = 3

EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 a --fail-on condition met (check-criteria: findings); "
    "2 usage or input error; 3 backend failure."
)

app = typer.Typer(
    name="toolnexus",
    help="Typed judgments from System One classifiers. " + EXIT_CODES_HELP,
    no_args_is_help=True,
    # Keys live in memory: a traceback with locals could print one.
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    add_completion=True,
    rich_markup_mode=None,
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


def _version_callback(value: bool) -> None:
    if value:
        sys.stdout.write(f"toolnexus {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", callback=_version_callback,
        is_eager=True,
    ),
) -> None:
    """Typed judgments from System One classifiers."""


def _register() -> None:
    # Each command lives in its own module; registering imports only typer-level code.
    from . import commands  # noqa: F401


def main(argv: list[str] | None = None) -> None:
    """Console entry point: the ONE error boundary of the CLI.

    A ``CliError`` or a library ``ClassifierError`` becomes one line on stderr and an exit code;
    no traceback reaches a user for an input or backend error.
    """
    from ..errors import ClassifierError, HTTPStatusError, TransportError

    _register()
    try:
        app(args=argv, prog_name="toolnexus", standalone_mode=False)
    except CliError as e:
        sys.stderr.write(f"toolnexus: {e.message}\n")
        sys.exit(e.code)
    except (HTTPStatusError, TransportError) as e:
        sys.stderr.write(f"toolnexus: {e}\n")
        sys.exit(EXIT_BACKEND)
    except ClassifierError as e:
        sys.stderr.write(f"toolnexus: {e}\n")
        sys.exit(EXIT_USAGE)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        sys.stderr.write("toolnexus: aborted\n")
        sys.exit(130)
    except KeyboardInterrupt:
        sys.stderr.write("toolnexus: interrupted\n")
        sys.exit(130)
    except BrokenPipeError:
        # `toolnexus ... | head`: the reader left; nothing to report.
        sys.exit(0)
    except Exception as e:  # click usage errors arrive here in standalone_mode=False
        import click

        if isinstance(e, click.ClickException):
            e.show()
            sys.exit(EXIT_USAGE if e.exit_code == 2 else e.exit_code)
        raise
