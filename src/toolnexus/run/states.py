"""State inputs: a file, ``-`` for stdin, or ``--state-text TEXT``; images.

The suffix picks the reading (``.txt``/``.md``/``.log`` -> a string, ``.json`` -> a JSON value,
``.yaml``/``.yml`` -> a YAML value); ``--as text|json|yaml`` overrides the guess. A state must be
a string, an object or an array (the wire rejects anything else with a 422), so anything else is
an error naming the file, and the line for a syntax error, BEFORE any request is sent.

A ``.png``/``.jpg``/``.jpeg`` file is an image state: an ``Image`` read when the state is sent
(the library checks its format and limits before any request). ``--image NAME=PATH`` attaches
images that a text or JSON state refers to as ``<NAME>``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from ..core import Image, RunError, json_kind, printable, with_images

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

#: Files read as an image state rather than as text.
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg"})

#: Every suffix ``eval`` reads a state file by: what a ``batch`` directory or glob yields.
STATE_SUFFIXES = frozenset(_SUFFIXES) | IMAGE_SUFFIXES

#: The most bytes a state file (or stdin) may hold: the question loader's cap
#: (``questionfile.load.MAX_FILE_BYTES``, not imported here). The wire bounds a state
#: only in tokens (state plus the longest question within 32k), never in bytes, so no smaller
#: byte cap is safe; this one is far past any state that fits, and small enough that
#: ``--state /dev/zero`` or a pipe that never ends is refused with a line instead of filling
#: memory.
MAX_STATE_BYTES = 64 << 20

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
        raise RunError(
            f"{source}: cannot tell how to read a {suffix or 'suffix-less'} file as a state "
            f"(known: {known}); pass --as text|json|yaml"
        )
    return fmt


def is_image_path(source: str) -> bool:
    """Whether ``source`` names an image by its suffix (``.png``, ``.jpg``, ``.jpeg``)."""
    return Path(source).suffix.lower() in IMAGE_SUFFIXES


def image_state(source: str, what: str = "image file") -> Image:
    """An image for the state, read lazily when it is sent: here only its existence is
    checked, so a batch of thousands of images holds none of them before their turn."""
    path = Path(source)
    if not path.is_file():
        reason = "is a directory" if path.is_dir() else "no such file"
        raise RunError(f"{source}: {what}: {reason}")
    return Image(path)


def parse_image_options(values: list[str] | None) -> dict[str, Image]:
    """``--image NAME=PATH`` (repeatable) -> ``{NAME: Image}``; the state refers to each as
    ``<NAME>``. A malformed pair, a bad name, a repeated name or a missing file is an error."""
    from ..core import ImageError

    images: dict[str, Image] = {}
    for value in values or []:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise RunError(f"--image takes NAME=PATH, got {value!r}")
        if name in images:
            raise RunError(f"--image {name}: given twice; each name attaches one image")
        try:
            Image(b"x", alias=name)  # the alias rule, checked before any file is touched
        except ImageError:
            raise RunError(
                f"--image {name}: a name is 1-64 letters, digits or _ . : - (the state says "
                f"<{name}>)"
            ) from None
        images[name] = image_state(path, f"--image {name}")
    return images


def attach_images(state: Any, images: dict[str, Image]) -> Any:
    """``state`` with the ``--image`` images attached (unchanged when there are none)."""
    return with_images(state, images) if images else state


class NotAState(RunError):
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


def _parse_yaml(text: str, name: str) -> Any:
    """A YAML state through the same reader as question files: one node budget for alias
    expansion, the same nesting and number bounds, duplicate keys and non-JSON values refused."""
    from ..core import YamlSyntaxError, read_yaml

    try:
        doc = read_yaml(text)
    except YamlSyntaxError as e:
        p = e.problem
        raise RunError(f"{name}:{p.line}:{p.col}: invalid YAML: {p.message}") from None
    if doc.problems:
        p = min(doc.problems, key=lambda p: (p.line, p.col))
        raise RunError(f"{name}:{p.line}:{p.col}: {p.message}")
    if doc.second_document is not None:
        line, col = doc.second_document
        raise RunError(f"{name}:{line}:{col}: a state is one YAML document, this is a second one")
    return doc.value


def duplicate_key(where: str, key: str, more: str = "") -> str:
    """The warning for a JSON object that repeats ``key`` (issue 31 item 21): JSON keeps the
    last value silently, where a YAML state is refused."""
    return (
        f"{where}: key {printable(repr(key))} appears twice in one JSON object; only its last "
        f"value is sent{more}"
    )


def warn_duplicate_key(where: str, key: str, more: str = "") -> None:
    """:func:`duplicate_key` as one stderr line (``eval``'s state, read on the command line)."""
    sys.stderr.write(f"toolnexus: warning: {duplicate_key(where, key, more)}\n")


def parse_state(
    text: str, fmt: StateFormat, name: str, warn: Callable[[str], None] | None = None
) -> Any:
    """Read ``text`` as ``fmt``; a syntax error names ``name`` and its line and column.
    A text state from a file or stdin loses ONE final newline; ``--state-text`` is verbatim.
    JSON and YAML states get the bounds of ``jsonlimits`` (nesting, number length, no NaN).
    ``warn`` hears a repeated key (a batch run's channel); without it, stderr (``eval``)."""
    if fmt == "text":
        return text if name == TEXT_NAME else _strip_final_newline(text)
    if fmt == "json":
        from ..core import JsonLimitError, loads_noting_duplicates

        try:
            value, twice = loads_noting_duplicates(text)
        except json.JSONDecodeError as e:
            raise RunError(f"{name}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
        except JsonLimitError as e:
            raise RunError(f"{name}: JSON state refused: {e}") from None
        if twice is not None:
            if warn is None:
                warn_duplicate_key(f"{name}:{twice[1]}", twice[0])
            else:
                warn(duplicate_key(f"{name}:{twice[1]}", twice[0]))
        return check_state(value, name)
    return check_state(_parse_yaml(text, name), name)


def _read_stdin() -> str:
    stream = sys.stdin
    if stream is None or getattr(stream, "closed", False):
        raise RunError("<stdin>: stdin is closed; pipe a state in, or pass a file or --state-text")
    try:
        if hasattr(stream, "buffer"):
            raw: str | bytes = stream.buffer.read(MAX_STATE_BYTES + 1)
        else:
            raw = stream.read(MAX_STATE_BYTES + 1)
    except OSError as e:
        raise RunError(f"<stdin>: cannot read: {e.strerror or type(e).__name__}") from None
    if len(raw) > MAX_STATE_BYTES:
        raise _too_big(STDIN_NAME)
    if isinstance(raw, str):
        text = raw
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise RunError(f"<stdin>: not UTF-8 text (byte {e.start})") from None
    if not text.strip():
        # An empty pipe is a mistake upstream (a failed producer), not a state worth a request.
        raise RunError("<stdin>: empty input: no state to evaluate")
    return text


def _too_big(name: str) -> RunError:
    return RunError(
        f"{name}: cannot read: over {MAX_STATE_BYTES >> 20} MiB, more than a state may hold "
        "(a state and its longest question fit in 32,000 tokens): pass a smaller state"
    )


def _read(source: str) -> str:
    if source == "-":
        return _read_stdin()
    try:
        # One byte past the cap tells "too big" from "just fits" without reading the rest.
        with open(source, "rb") as f:
            data = f.read(MAX_STATE_BYTES + 1)
        if len(data) > MAX_STATE_BYTES:
            raise _too_big(source)
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise RunError(f"{source}: no such state file") from None
    except IsADirectoryError:
        raise RunError(f"{source}: is a directory, not a state file") from None
    except UnicodeDecodeError as e:
        raise RunError(f"{source}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise RunError(f"{source}: cannot read the state file: {e.strerror}") from None
    # Universal newlines, as the text-mode read this replaces gave (a CRLF file reads as LF).
    return text.replace("\r\n", "\n").replace("\r", "\n")


def load_state(
    source: str | None, *, text: str | None = None, as_: StateFormat | None = None
) -> Any:
    """The state named on the command line: a file path (an image for ``.png``/``.jpg``), ``-``
    for stdin, or ``text`` (from ``--state-text``). Exactly one of ``source`` and ``text`` must
    be given."""
    if as_ is not None and as_ not in STATE_FORMATS:
        raise RunError(f"--as takes text, json or yaml, got {as_!r}")
    if text is not None:
        if source is not None:
            raise RunError("give the state as a file argument or as --state-text, not both")
        return parse_state(text, as_ or "text", TEXT_NAME)
    if source is None:
        raise RunError("no state: pass a state file, - for stdin, or --state-text TEXT")
    if source == "-":
        # stdin has no suffix to guess from; text is what a pipe usually carries.
        return parse_state(_read(source), as_ or "text", STDIN_NAME)
    if as_ is None and is_image_path(source):
        return image_state(source, "image state")
    fmt = as_ or guess_format(source)
    return parse_state(_read(source), fmt, source)


def load_states_jsonl(source: str) -> list[Any]:
    """The states of a JSONL file (``canonical --pack-states``): one JSON state per line, blank
    lines skipped; an error names the file and the line."""
    from ..core import JsonLimitError, loads_noting_duplicates

    name = STDIN_NAME if source == "-" else source
    states: list[Any] = []
    warned = False
    for number, line in enumerate(_read(source).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value, twice = loads_noting_duplicates(line)
        except json.JSONDecodeError as e:
            raise RunError(f"{name}:{number}:{e.colno}: invalid JSON: {e.msg}") from None
        except JsonLimitError as e:
            raise RunError(f"{name}:{number}: JSON state refused: {e}") from None
        if twice is not None and not warned:
            warned = True
            warn_duplicate_key(f"{name}:{number}", twice[0], " (the first such line of this file)")
        states.append(check_state(value, f"{name}:{number}"))
    if not states:
        raise RunError(f"{name}: no states: write one JSON state per line")
    return states
