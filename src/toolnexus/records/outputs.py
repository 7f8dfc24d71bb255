"""The files a command writes (issue 42 items 1 and 2): ONE rule for where they may go, ONE way a
whole file is written.

:func:`check_outputs` is the rule every command (``report``, ``batch``) and the library run
(``toolnexus.run``) apply before anything is read or sent: an output may not be a file the
command reads, nor another output of the same command. Two paths are the same file when they
resolve to the same path or, both existing, to the same device and inode, so a symlink or a
hard link to an input counts. An output inside an input directory is refused too (its records
would be read back). ``-`` (stdout) and character devices or FIFOs (``/dev/stdout``) are
streams, not files a write could destroy: they are not compared.

:func:`whole_file` writes a whole-file output so that a failure leaves the old file as it was
(a full disk once left a 0-byte thresholds file where a good one stood): a regular file or an
absent path is written to a temporary file in the same folder and renamed over the target; a
symlinked output has its target replaced; the target's mode is kept. ``-``, FIFOs and character
devices are written in place.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import sys
from collections.abc import Iterable, Iterator
from typing import IO, Any, Literal, overload

from ..core import ConfigError

__all__ = ["OutputError", "check_outputs", "whole_file"]

#: ``(what, path)``: an output as its flag names it (``--review-out``), or an input as a user
#: knows it (``the question file``, ``--labels``); a None path is not given.
Named = tuple[str, "str | os.PathLike[str] | None"]


class OutputError(ConfigError):
    """An output a command may not write where it was aimed (onto an input, onto another
    output, onto a directory), or one it could not write whole. ``str(e)`` is the one line a
    user sees, naming the flag and the file; nothing was written (an old file is kept)."""

    _prefixed = False


def _is_stream(path: str) -> bool:
    """``-``, a character device or a FIFO: written in place, never renamed over."""
    if path == "-":
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _same(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name one file: the same resolved path, or (both existing) the
    same device and inode (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        one, two = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (one.st_dev, one.st_ino) == (two.st_dev, two.st_ino)


def _inside(path: str, directory: str) -> bool:
    real, root = os.path.realpath(path), os.path.realpath(directory)
    return os.path.commonpath([real, root]) == root


def check_outputs(outputs: Iterable[Named], inputs: Iterable[Named]) -> None:
    """Refuse, in one line (:class:`OutputError`), an output that is a directory, a file of
    ``inputs`` (or inside an input directory), or another output of ``outputs``. Call it
    before anything is read or sent."""
    given = [(what, os.fspath(p)) for what, p in outputs if p is not None]
    read = [(what, os.fspath(p)) for what, p in inputs if p is not None and os.fspath(p) != "-"]
    seen: list[tuple[str, str]] = []
    for flag, path in given:
        if _is_stream(path):
            continue
        if os.path.isdir(path):
            raise OutputError(f"{flag} {path} is a directory; name a file")
        for what, source in read:
            if os.path.isdir(source):
                if _inside(path, source):
                    raise OutputError(
                        f"{flag} {path} is inside the input directory {source}; it would be "
                        "read back as input: write it elsewhere (nothing was read or written)"
                    )
                continue
            if not _is_stream(source) and _same(path, source):
                raise OutputError(
                    f"{flag} {path} is also {what} {source}; it would be overwritten: write it "
                    "elsewhere (nothing was read or written)"
                )
        for other, earlier in seen:
            if _same(path, earlier):
                raise OutputError(
                    f"{flag} {path} is also {other} {earlier}; two outputs cannot share a file: "
                    "name another (nothing was read or written)"
                )
        seen.append((flag, path))


def _open_temp(directory: str, name: str) -> tuple[int, str]:
    """A new file beside the target, created with the mode a plain open would give (0o666
    less the umask), so an output that did not exist gets the usual mode."""
    while True:
        tmp = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def _cannot(path: str, e: OSError, kept: bool) -> OutputError:
    why = e.strerror or type(e).__name__
    old = "; the old file is kept as it was" if kept else "; nothing was written"
    return OutputError(f"{path}: cannot write: {why}{old}")


@overload
def whole_file(
    path: str | os.PathLike[str], mode: Literal["w"] = "w", newline: str | None = "\n"
) -> contextlib.AbstractContextManager[IO[str]]: ...
@overload
def whole_file(
    path: str | os.PathLike[str], mode: Literal["wb"], newline: str | None = "\n"
) -> contextlib.AbstractContextManager[IO[bytes]]: ...
def whole_file(
    path: str | os.PathLike[str], mode: str = "w", newline: str | None = "\n"
) -> contextlib.AbstractContextManager[IO[str]] | contextlib.AbstractContextManager[IO[bytes]]:
    """``with whole_file(path) as f: f.write(...)``: ``path`` holds what was written once the
    block ends, or (an :class:`OSError` inside, a full disk) is left as it was and the error is
    one :class:`OutputError` line. Text (UTF-8, ``newline``) or ``mode="wb"``."""
    return _whole_file(os.fspath(path), mode, newline)


@contextlib.contextmanager
def _whole_file(path: str, mode: str, newline: str | None) -> Iterator[IO[Any]]:
    binary = "b" in mode
    encoding = None if binary else "utf-8"
    newline = None if binary else newline
    if path == "-":
        stream = sys.stdout.buffer if binary else sys.stdout
        try:
            yield stream
            stream.flush()
        except OSError as e:
            raise _cannot("stdout", e, kept=False) from None
        return
    if _is_stream(path):
        try:
            with open(path, mode, encoding=encoding, newline=newline) as f:
                yield f
        except OSError as e:
            raise _cannot(path, e, kept=False) from None
        return
    if os.path.isdir(path):
        raise OutputError(f"{path} is a directory; name a file")
    # A symlink's target is replaced (the link stays a link); a dangling one creates it.
    target = os.path.realpath(path)
    try:
        old_mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        old_mode = None
    directory, name = os.path.split(target)
    try:
        fd, tmp = _open_temp(directory, name)
    except OSError as e:
        raise _cannot(path, e, kept=old_mode is not None) from None
    try:
        if old_mode is not None:
            os.fchmod(fd, old_mode)
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _cannot(path, e, kept=old_mode is not None) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
