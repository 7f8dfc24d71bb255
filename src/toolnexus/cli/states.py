"""State inputs: a file, ``-`` for stdin, or ``--state-text TEXT``.

The suffix picks the reading (``.txt``/``.md``/``.log`` -> a string, ``.json`` -> a JSON value,
``.yaml``/``.yml`` -> a YAML value); ``--as text|json|yaml`` overrides the guess. A state must be
a string, an object or an array (the wire rejects anything else with a 422), so anything else is
an error naming the file, and the line for a syntax error, BEFORE any request is sent.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from ..decision import json_kind
from .errors import CliError

StateFormat = Literal["text", "json", "yaml"]
STATE_FORMATS: tuple[StateFormat, ...] = ("text", "json", "yaml")

_SUFFIXES: dict[str, StateFormat] = {
    ".txt": "text",
    ".md": "text",
    ".log": "text",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
}

#: How a state source is named in messages when it is not a file.
STDIN_NAME = "<stdin>"
TEXT_NAME = "--state-text"


def guess_format(source: str) -> StateFormat:
    """The reading for ``source`` from its suffix; an unknown suffix is an error that says how
    to choose one."""
    suffix = Path(source).suffix.lower()
    fmt = _SUFFIXES.get(suffix)
    if fmt is None:
        known = ", ".join(sorted(_SUFFIXES))
        raise CliError(
            f"{source}: cannot tell how to read a {suffix or 'suffix-less'} file as a state "
            f"(known: {known}); pass --as text|json|yaml"
        )
    return fmt


class NotAState(CliError):
    """A state input that parsed, but to a value that is not a string, object or array."""


def check_state(value: Any, name: str) -> Any:
    """``value`` when it is a string, an object or an array; else an error naming ``name``."""
    if isinstance(value, str | dict | list):
        return value
    raise NotAState(
        f"{name}: a state must be a string, an object or an array, got {json_kind(value)}"
    )


def _strip_final_newline(text: str) -> str:
    # A text file ends in a newline by convention, not as part of the state: a recorded state
    # of "charged twice" must match a file holding "charged twice\n", as $(cat file) would.
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if text.endswith("\n") else text


def parse_state(text: str, fmt: StateFormat, name: str) -> Any:
    """Read ``text`` as ``fmt``; a syntax error names ``name`` and its line and column.
    A text state from a file or stdin loses ONE final newline; ``--state-text`` is verbatim."""
    if fmt == "text":
        return text if name == TEXT_NAME else _strip_final_newline(text)
    if fmt == "json":
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            raise CliError(f"{name}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
        return check_state(value, name)
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else name
        problem = e.problem or e.context or "invalid YAML"
        raise CliError(f"{where}: invalid YAML: {problem}") from None
    except yaml.YAMLError as e:
        raise CliError(f"{name}: invalid YAML: {e}") from None
    return check_state(value, name)


def _read(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    path = Path(source)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"{source}: no such state file") from None
    except IsADirectoryError:
        raise CliError(f"{source}: is a directory, not a state file") from None
    except UnicodeDecodeError as e:
        raise CliError(f"{source}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise CliError(f"{source}: cannot read the state file: {e.strerror}") from None


def load_state(
    source: str | None, *, text: str | None = None, as_: StateFormat | None = None
) -> Any:
    """The state named on the command line: a file path, ``-`` for stdin, or ``text`` (from
    ``--state-text``). Exactly one of ``source`` and ``text`` must be given."""
    if as_ is not None and as_ not in STATE_FORMATS:
        raise CliError(f"--as takes text, json or yaml, got {as_!r}")
    if text is not None:
        if source is not None:
            raise CliError("give the state as a file argument or as --state-text, not both")
        return parse_state(text, as_ or "text", TEXT_NAME)
    if source is None:
        raise CliError("no state: pass a state file, - for stdin, or --state-text TEXT")
    if source == "-":
        # stdin has no suffix to guess from; text is what a pipe usually carries.
        return parse_state(_read(source), as_ or "text", STDIN_NAME)
    fmt = as_ or guess_format(source)
    return parse_state(_read(source), fmt, source)
