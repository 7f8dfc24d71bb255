"""The CLI's exit codes and ``CliError``: what every command module may import.

This module imports nothing from the rest of ``toolnexus.cli`` (nor typer), so a command module
can raise ``CliError`` without importing ``app.py``, which imports the command modules to
register them. The README's exit-code table lists these codes:

  0 ok; 1 a ``--fail-on`` condition met (check-criteria: findings); 2 usage or input error;
  3 backend failure; 4 a batch stopped scheduling (a failure every request would repeat, or a
  ``--state-field`` no record has); 5 a spend cap stopped ``batch`` (``--max-cost``,
  ``--max-tokens``, ``--max-requests``); 130 interrupted (SIGINT); 143 terminated (SIGTERM).

:func:`failure_of` is the ONE place an exception becomes a CLI outcome: the exit code the
boundary gives it (``eval``, ``canonical``, every command) AND the ``error.code`` of the record
``batch`` writes for a state that failed with it, from one table (:data:`FAILURES`, defined in
``toolnexus/core/failures.py`` so the library's ``toolnexus.arrow`` records the same codes; this
module adds ``CliError`` on top). So the same failure exits with the same code whichever
command met it.
"""

from __future__ import annotations

import errno
import sys
from typing import NoReturn

# The one failure table lives in the core (the library's ``toolnexus.arrow`` writes the same
# record codes); command modules keep importing these names from here.
from ..core import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    Failure,
    one_line,
)
from ..core import errors as lib
from ..core import failure_of as _failure_of

__all__ = [
    "EXIT_CODES_HELP",
    "CliError",
    "fail",
    "failure_of",
    "handle_error",
    "report",
]

EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 a --fail-on condition met (check-criteria: findings); "
    "2 usage or input error; 3 backend failure; 4 batch stopped (a failure every request "
    "would repeat); 5 a spend cap reached; 130 interrupted; 143 terminated."
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


def failure_of(error: BaseException) -> Failure | None:
    """The failure ``error`` stands for (``toolnexus.core.failures.failure_of``); a ``CliError``
    carries its own exit code."""
    if isinstance(error, CliError):
        return Failure("usage", error.code)
    if isinstance(error, lib.BatchError) and isinstance(error.cause, CliError):
        return failure_of(error.cause)
    return _failure_of(error)


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


#: OS errors that mean "the output cannot take more bytes", reported as one line, exit 2.
_WRITE_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS, errno.ENXIO}
)


def handle_error(error: BaseException) -> int:
    """The error boundary for everything that is not typer's own: write what ``error`` means
    to the user (one line on stderr) and return the exit code. Re-raises what is not ours to
    handle: a bug keeps its traceback so it can be reported."""
    if isinstance(error, KeyboardInterrupt):
        sys.stderr.write("toolnexus: interrupted\n")
        return EXIT_INTERRUPTED
    if isinstance(error, BrokenPipeError):
        # `toolnexus ... | head`: the reader left; nothing to report (Typer alone would exit 1).
        _silence_stdout()
        return EXIT_OK
    if isinstance(error, OSError) and error.errno in _WRITE_ERRNOS:
        # A full disk (or quota, or a read-only file system) under -o or stdout: what was
        # written stays; the rest is one line, not a traceback (issue 9).
        where = error.filename or "stdout"
        sys.stderr.write(f"toolnexus: {where}: cannot write: {error.strerror}\n")
        _silence_stdout()
        return EXIT_USAGE
    failure = failure_of(error)
    if failure is None:
        raise error
    report(error)
    return failure.exit_code
