"""The CLI's exit codes and ``CliError``: what every command module may import.

This module imports nothing from the rest of ``toolnexus.cli`` (nor typer), so a command module
can raise ``CliError`` without importing ``app.py``, which imports the command modules to
register them. The README's exit-code table lists these codes:

  0 ok; 1 a ``--fail-on`` condition met (check-criteria: findings); 2 usage or input error;
  3 backend failure; 130 interrupted (SIGINT); 143 terminated (SIGTERM).
"""

from __future__ import annotations

from typing import NoReturn

EXIT_OK = 0
EXIT_CONDITION = 1
EXIT_USAGE = 2
EXIT_BACKEND = 3
#: 128 + SIGINT, what a shell reports for Ctrl-C.
EXIT_INTERRUPTED = 130
#: 128 + SIGTERM, what a shell reports for a process stopped by ``kill``.
EXIT_TERMINATED = 143

EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 a --fail-on condition met (check-criteria: findings); "
    "2 usage or input error; 3 backend failure; 130 interrupted; 143 terminated."
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
