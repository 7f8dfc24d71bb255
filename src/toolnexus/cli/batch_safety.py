"""What ``toolnexus batch`` checks before it writes anything, and how it opens ``--output``:
the options, an output that would overwrite an input, the lock that keeps a second run off the
same file, and the prior records ``--resume`` / ``--retry-errors`` read back."""

from __future__ import annotations

import math
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..records.codec import earlier_headers
from ..records.parquet import journal_path
from .batch_ids import question_set_sha256
from .batch_items import kind_of
from .batch_output import OutputWriter
from .batch_parquet import ParquetOutput, read_parquet_prior
from .batch_resume import PriorMismatch, PriorOutput, read_prior
from .batch_values import BatchConfig
from .errors import CliError, one_line

if TYPE_CHECKING:
    from ..questions import Question

if TYPE_CHECKING:
    from .options import BackendSettings

__all__ = ["check_config", "check_existing", "check_key", "lock_output", "open_output"]


def lock_output(path: str) -> int:
    """Hold an advisory lock on ``--output`` for the whole run (released when the returned fd
    is closed), so a second process aimed at the same file is refused instead of interleaving
    its records with ours (two shards on one file once lost half the records and exited 0)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError as e:
        raise CliError(f"--output {path}: {e.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise CliError(
            f"--output {path}: another process (a toolnexus batch?) holds its lock and is "
            "writing it; wait for that run to end, or write to another file"
        ) from None
    return fd


def check_existing(cfg: BatchConfig) -> None:
    """An ``--output`` that already holds records is continued (``--resume``,
    ``--retry-errors``) or replaced (``--overwrite``), never truncated by a plain re-run (one
    once cut a finished 300-record file to 20). Checked once the lock is held, so a file
    another run is writing is named as such."""
    output = cfg.output
    if output is None or cfg.resume or cfg.retry_errors or cfg.overwrite:
        return
    if _holds_run(output, cfg.fmt):
        raise CliError(
            f"--output {output} already holds records; add --resume to continue it, or "
            "--overwrite to start over (the old file stays until the new run finishes)"
        )


def open_output(
    cfg: BatchConfig, columns: list[str], questions: Mapping[str, Question]
) -> tuple[OutputWriter | ParquetOutput, PriorOutput | None]:
    """The writer of this run, and what ``--output`` already holds when it resumes."""
    prior = None
    if cfg.output is not None and (cfg.resume or cfg.retry_errors):
        prior = _read_prior(cfg.output, cfg.fmt, question_set_sha256(questions))
        if cfg.fmt == "csv" and prior.header in earlier_headers(columns):
            # A run written by an earlier version: continued under its own header (the new
            # records' schema_version, packed, position and reasked cells are not written).
            columns[:] = prior.header
        if cfg.fmt == "csv" and prior.header is not None and prior.header != columns:
            raise CliError(
                f"--output {cfg.output}: its CSV columns differ from this question set's; "
                "resume with the same question file, or write to a new file"
            )
    staged = cfg.overwrite and cfg.output is not None and _holds_run(cfg.output, cfg.fmt)
    try:
        if cfg.fmt == "parquet":
            assert cfg.output is not None  # check_config: parquet needs --output
            return ParquetOutput(cfg.output, questions, prior, staged=staged), prior
        return OutputWriter(cfg.output, cfg.fmt, columns, prior, staged=staged), prior
    except OSError as e:
        raise CliError(f"--output {cfg.output}: {e.strerror}") from None


def _read_prior(output: str, fmt: str, sha: str) -> PriorOutput:
    """What ``--output`` holds, or one line saying why this run cannot continue it."""
    try:
        if fmt == "parquet":
            from ..records.arrow import require_pyarrow

            pa = require_pyarrow()
            try:
                return read_parquet_prior(output, sha)
            except pa.ArrowException as e:
                raise ValueError(f"not a readable Parquet run: {one_line(str(e))}") from None
        return read_prior(output, fmt, sha)
    except PriorMismatch as e:
        raise CliError(f"--output {output}: cannot resume: {e}") from None
    except (OSError, ValueError) as e:
        raise CliError(f"--output {output}: cannot resume from it: {e}") from None


def _holds_run(output: str, fmt: str) -> bool:
    """``--output`` holds records: the file, or (Parquet) the journal a killed run left."""
    return _holds_records(output) or (fmt == "parquet" and _holds_records(journal_path(output)))


def _holds_records(path: str) -> bool:
    """A regular file with something in it (``/dev/null`` or a FIFO is never refused)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size > 0


def _inside(path: str, directory: str) -> bool:
    real, root = os.path.realpath(path), os.path.realpath(directory)
    return os.path.commonpath([real, root]) == root


def _check_output(cfg: BatchConfig, questions_path: Path) -> None:
    """``-o`` onto the question file, onto an input, or into a directory/glob input is refused
    before anything is written (the question file was once overwritten, exit 0)."""
    import fnmatch
    import glob

    output = cfg.output
    if output is None:
        return
    if os.path.isdir(output):
        raise CliError(f"--output {output} is a directory; name a file")
    if cfg.overwrite and (cfg.resume or cfg.retry_errors):
        raise CliError("--overwrite starts over; --resume and --retry-errors continue: pick one")

    exists = os.path.exists(output)
    if exists and os.path.exists(questions_path) and os.path.samefile(questions_path, output):
        raise CliError(f"--output {output} is the question file; it would be overwritten")
    for arg in cfg.inputs:
        kind = kind_of(arg)
        is_dir = kind == "dir" or (kind == "arrow" and os.path.isdir(arg))
        file_input = not is_dir and kind in ("jsonl", "csv", "arrow")
        if file_input and exists and os.path.samefile(arg, output):
            raise CliError(f"--output {output} is also an input; it would be overwritten")
        if is_dir and _inside(output, arg):
            raise CliError(
                f"--output {output} is inside the input directory {arg}; its records would be "
                "read back as states: write it elsewhere"
            )
        if kind == "glob" and (
            fnmatch.fnmatch(os.path.abspath(output), os.path.abspath(arg))
            or any(os.path.samefile(p, output) for p in glob.glob(arg) if exists)
        ):
            raise CliError(
                f"--output {output} matches the input pattern {arg}; its records would be read "
                "back as states: write it elsewhere"
            )


def check_config(cfg: BatchConfig, questions_path: Path) -> None:
    """Every option checked before anything is read or written; one line for the first wrong."""
    from ..batch import MAX_CONCURRENCY, MIN_CONCURRENCY

    if not MIN_CONCURRENCY <= cfg.concurrency <= MAX_CONCURRENCY:
        raise CliError(
            f"--concurrency takes {MIN_CONCURRENCY}..{MAX_CONCURRENCY} requests in flight, "
            f"got {cfg.concurrency}"
        )
    if cfg.rate is not None and not cfg.rate > 0:
        raise CliError(f"--rate must be a positive number of requests per minute, got {cfg.rate}")
    if not 0 < cfg.patience < math.inf:
        raise CliError(f"--patience must be a positive number of seconds, got {cfg.patience}")
    if cfg.fmt == "parquet" and cfg.output is None:
        raise CliError(
            "--format parquet writes one file, not a stream: name it with -o FILE.parquet"
        )
    if (cfg.resume or cfg.retry_errors) and cfg.output is None:
        raise CliError("--resume and --retry-errors need --output FILE (they read it back)")
    if cfg.retry_errors and not cfg.resume and cfg.output and not _holds_run(cfg.output, cfg.fmt):
        # Issue 31 item 3: it once said "40 skipped (already in the output)", exited 0 and
        # left an empty file.
        raise CliError(
            f"--retry-errors: --output {cfg.output} holds no records, so no error to re-run; "
            "drop --retry-errors to send the states (or add --resume)"
        )
    if cfg.inputs.count("-") > 1:
        raise CliError("stdin (-) can be given only once")
    if "-" in cfg.inputs and sys.stdin is None:  # fd 0 closed
        raise CliError("-: stdin is closed; pipe the JSONL states in, or name an input file")
    kinds = [kind_of(arg) for arg in cfg.inputs]
    for arg, kind in zip(cfg.inputs, kinds, strict=True):
        if kind == "missing":
            raise CliError(f"{arg}: no such input file or directory")
    if cfg.fmt == "parquet" or "arrow" in kinds:
        # Before anything is read or sent: a missing extra is one line naming it.
        from ..records.arrow import require_pyarrow

        require_pyarrow()
    _check_output(cfg, questions_path)


def check_key(settings: BackendSettings) -> None:
    """A base URL carrying ``user:pass@`` while the key's variable is set too is refused (a
    request carries one credential). A batch to a backend's own endpoint with its key's
    variable unset is refused before the first request (issue 19: unrefused, a missing key
    wrote one 401 record per state). A
    ``--base-url`` (or ``$TYPESAFE_BASE_URL``) may be a server that takes no key, or carry its
    credentials as ``user:pass@``: it is sent to, and fail fast stops a run it refuses."""
    if settings.style != "systemone":
        return
    from ..backends import BACKENDS, resolve_backend
    from ..transport.redaction import redact_url, userinfo

    name = settings.backend or "typesafe"
    try:
        resolved = resolve_backend(
            name, base_url=settings.base_url, api_key_env=settings.api_key_env,
            supports={"images": False},
        )  # fmt: skip
    except ConfigError:
        return  # the classifier's own refusal says what is wrong
    if userinfo(resolved.base_url) and os.environ.get(resolved.api_key_env):
        # Issue 31 item 22: refused once, before the run, not as one config_error per state.
        raise CliError(
            f"the base URL {redact_url(resolved.base_url)} carries credentials (user:pass@) and "
            f"${resolved.api_key_env} is set too; a request carries one: unset "
            f"${resolved.api_key_env} or drop user:pass@ from the URL (nothing was sent)"
        )
    if settings.base_url is not None:
        return
    resolved = resolve_backend(name, api_key_env=settings.api_key_env)
    row = next(b for b in BACKENDS if b.name == name)
    if resolved.base_url != row.base_url or os.environ.get(resolved.api_key_env):
        return
    raise CliError(
        f"${resolved.api_key_env} is not set: export the API key for {resolved.base_url} in it "
        "(or name the variable that holds it with --api-key-env); nothing was sent"
    )
