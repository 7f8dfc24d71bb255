"""The one table of failures: what an exception means to a user of the CLI or of a batch.

:func:`failure_of` turns an exception into a :class:`Failure`: the exit code a command exits
with AND the ``error.code`` of the record ``batch`` (or ``toolnexus.arrow``) writes for a state
that failed with it, from one table (:data:`FAILURES`). So the same failure exits with the same
code, and is recorded under the same code, wherever it is met. Pure: no typer, no rich, no I/O;
``cli/errors.py`` adds the CLI's own ``CliError`` on top.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from . import errors as lib
from .safetext import printable

__all__ = [
    "CONDITION_FOR_CODE",
    "DUPLICATE_ID",
    "EXIT_BACKEND",
    "EXIT_BUDGET",
    "EXIT_CONDITION",
    "EXIT_FOR_CODE",
    "EXIT_FOR_STOP",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_STOPPED",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "FAILURES",
    "MALFORMED_INPUT",
    "Failure",
    "Surface",
    "failure_of",
    "one_line",
    "option",
    "stop_advice",
]

EXIT_OK = 0
EXIT_CONDITION = 1
EXIT_USAGE = 2
EXIT_BACKEND = 3
#: A batch stopped scheduling (``RunStopped``): ranks above 3, the run did not finish its input.
EXIT_STOPPED = 4
#: A spend cap stopped ``batch`` (or refused it before the first request): raise the cap and
#: ``--resume``. A stopped run, this one too, ranks above 3 (its input is not finished).
EXIT_BUDGET = 5
#: 128 + SIGINT, what a shell reports for Ctrl-C.
EXIT_INTERRUPTED = 130
#: 128 + SIGTERM, what a shell reports for a process stopped by ``kill``.
EXIT_TERMINATED = 143


#: Where a message is read (issue 43 item 7: "every message speaks the words of the surface it
#: comes from"): ``toolnexus batch`` and ``toolnexus filter`` on the command line, a client of
#: ``toolnexus mcp``, or a script's ``toolnexus.run``. Each run-time message that names an
#: option or says what to do next is built from :func:`option` and :func:`stop_advice` with
#: its surface: one source, not a copy per surface.
Surface = Literal["batch", "filter", "mcp", "library"]


def option(name: str, surface: Surface, value: object = True) -> str:
    """Run option ``name`` (a ``RunConfig`` field: ``resume``, ``max_requests``) set to
    ``value`` as a user of ``surface`` writes it: ``--resume`` / ``--max-requests 50`` on a
    command line (``toolnexus mcp``'s caps are its flags too), ``resume=True`` /
    ``max_requests=50`` in a script."""
    if surface == "library":
        return f"{name}={value!r}"
    flag = "--" + name.replace("_", "-")
    return flag if value is True else f"{flag} {value}"


def stop_advice(kind: Literal["budget", "storm"], surface: Surface) -> str:
    """What to do after a run stopped for a spend cap (``budget``) or a storm that outlasted
    the patience (``storm``), in ``surface``'s words: a batch and a library run keep their
    finished records and continue with resume; ``filter`` has no output to resume; an MCP
    client can do neither: the server's caps and patience are its command line's."""
    resume = option("resume", surface)
    patience = "patience" if surface == "library" else "--patience"
    if kind == "budget":
        if surface == "mcp":
            return "no further call is sent: restart toolnexus mcp with a higher cap to go on"
        if surface == "filter":
            return "the lines judged so far are printed; raise the cap to judge the rest"
        again = resume if surface == "batch" else f"run again with {resume}"
        return f"Finished records are written; raise the cap and {again} to continue"
    if surface == "mcp":
        return (
            "no further call is sent: restart toolnexus mcp later (a longer storm needs a "
            "larger --patience)"
        )
    if surface == "filter":
        return f"run again later (a longer storm needs a larger {patience})"
    return f"run again later (with {resume}; a longer storm needs a larger {patience})"


def one_line(text: str) -> str:
    """Collapse a message onto one line (the boundary's promise is one line per error), with
    control characters shown, not sent to the terminal."""
    return printable(" ".join(str(text).split()))


@dataclass(frozen=True)
class Failure:
    """What an exception means to a CLI user: ``code`` is the batch record's ``error.code``
    (stable, documented in the README), ``exit_code`` the process exit code, and
    ``condition`` the ``--fail-on`` condition it meets (which makes the exit code 1 when it
    is asked for and nothing worse happened)."""

    code: str
    exit_code: int
    condition: str | None = None

    def exit_code_under(self, fail_on: tuple[str, ...] | frozenset[str]) -> int:
        """The exit code once ``--fail-on`` is taken into account."""
        if self.exit_code == EXIT_OK and self.condition in fail_on:
            return EXIT_CONDITION
        return self.exit_code


#: Exception class -> failure, most specific first (the first ``isinstance`` match wins).
#: Backend failures exit 3; every other library error is about the caller's input, options
#: or environment and exits 2. A decision that fails ``validate_decision`` (a missing answer,
#: probabilities that do not sum to 1, a noul outside 0..1) is a backend failure too (issue 9):
#: ``eval`` prints the reply flagged ``invalid`` and exits 3, ``batch`` records it as
#: ``invalid_decision`` and exits 3 after writing every record. It still meets the ``invalid``
#: ``--fail-on`` condition, which cannot lower the exit code below 3.
FAILURES: tuple[tuple[type[BaseException], Failure], ...] = (
    (lib.HTTPStatusError, Failure("backend_http", EXIT_BACKEND)),
    (lib.TransportError, Failure("backend_transport", EXIT_BACKEND)),
    (lib.InvalidDecision, Failure("invalid_decision", EXIT_BACKEND, condition="invalid")),
    (lib.DecisionError, Failure("backend_response", EXIT_BACKEND)),
    (lib.BackendError, Failure("backend_error", EXIT_BACKEND)),
    (lib.ConfigError, Failure("config_error", EXIT_USAGE)),
    (lib.StaticMiss, Failure("replay_miss", EXIT_USAGE)),
    (lib.ClassifierUnsupported, Failure("unsupported", EXIT_USAGE)),
    (lib.InvalidState, Failure("invalid_state", EXIT_USAGE)),
    (lib.ImageError, Failure("invalid_image", EXIT_USAGE)),
    (lib.QuestionError, Failure("invalid_question", EXIT_USAGE)),
    (lib.HookError, Failure("hook_error", EXIT_USAGE)),
    (lib.CacheError, Failure("cache_error", EXIT_USAGE)),
    (lib.ClassifierError, Failure("classifier_error", EXIT_USAGE)),
)

#: ``batch``: a line of the inputs that is not a state (no exception class: the reader
#: writes it directly).
MALFORMED_INPUT = Failure("malformed_input", EXIT_USAGE)
#: ``batch``: a second input line with an id already seen (``7`` and ``"7"`` are one id).
DUPLICATE_ID = Failure("duplicate_id", EXIT_USAGE)

#: Every record code -> its exit code, for ``batch``'s summary.
EXIT_FOR_CODE: dict[str, int] = {
    f.code: f.exit_code for f in (*(f for _, f in FAILURES), MALFORMED_INPUT, DUPLICATE_ID)
}

#: ``RunStopped.kind`` -> the exit code of a batch that stopped for it (a spend cap's code is
#: issue 23's to add); a kind not listed exits ``EXIT_STOPPED``.
EXIT_FOR_STOP: dict[str, int] = {
    "systematic": EXIT_STOPPED,
    "input": EXIT_STOPPED,
    "budget": EXIT_BUDGET,
}

#: Record code -> the ``--fail-on`` condition it meets.
CONDITION_FOR_CODE: dict[str, str] = {
    f.code: f.condition for _, f in FAILURES if f.condition is not None
}


def failure_of(error: BaseException) -> Failure | None:
    """The failure a library exception stands for, or ``None`` when it is not ours to handle
    (a bug, which keeps its traceback so it can be reported). A ``BatchError`` is its cause's
    failure."""
    if isinstance(error, lib.BatchError):
        return failure_of(error.cause)
    if isinstance(error, lib.RunError):
        # Refused before (or while) reading: no state's record, the run's own exit code.
        return Failure("usage", error.exit_code)
    if isinstance(error, lib.RunStopped):
        # Not a record code: a stopped run writes no record for the states it did not send.
        return Failure("run_stopped", EXIT_FOR_STOP.get(error.kind, EXIT_STOPPED))
    for cls, failure in FAILURES:
        if isinstance(error, cls):
            return failure
    return None
