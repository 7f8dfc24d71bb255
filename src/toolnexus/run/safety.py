"""What ``toolnexus batch`` checks before it writes anything, and how it opens ``--output``:
the options, an output that would overwrite an input, the lock that keeps a second run off the
same file, and the prior records ``--resume`` / ``--retry-errors`` read back."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core import ConfigError, RunError
from ..records import earlier_headers
from .codecs import Sink, SinkWriter, reader_for, sink_for
from .config import RunConfig
from .ids import question_set_sha256
from .resume import PriorMismatch, PriorOutput, UnreadableRecord

if TYPE_CHECKING:
    from ..core import Question

__all__ = [
    "check_config",
    "check_existing",
    "check_files",
    "check_key",
    "lock_output",
    "open_output",
    "prior_of",
]


def lock_output(path: str) -> int:
    """Hold an advisory lock on ``--output`` for the whole run (released when the returned fd
    is closed), so a second process aimed at the same file is refused instead of interleaving
    its records with ours (two shards on one file once lost half the records and exited 0)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError as e:
        raise RunError(f"--output {path}: {e.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise RunError(
            f"--output {path}: another process (a toolnexus batch?) holds its lock and is "
            "writing it; wait for that run to end, or write to another file"
        ) from None
    return fd


def check_existing(cfg: RunConfig) -> None:
    """An ``--output`` that already holds records is continued (``--resume``,
    ``--retry-errors``) or replaced (``--overwrite``), never truncated by a plain re-run (one
    once cut a finished 300-record file to 20). Checked once the lock is held, so a file
    another run is writing is named as such."""
    output = cfg.output
    if output is None or cfg.resume or cfg.retry_errors or cfg.overwrite:
        return
    if sink_for(cfg.fmt).holds_run(output):
        say = _words(cfg)
        raise RunError(
            f"{say('output', output)} already holds records; add {say('resume')} to continue "
            f"it, or {say('overwrite')} to start over (the old file stays until the new run "
            "finishes)"
        )


def _words(cfg: RunConfig) -> Callable[..., str]:
    """``failures.option`` in the words of the run's surface (issue 43 item 7: a script is told
    ``resume=True``, ``toolnexus batch`` ``--resume``)."""
    from ..core import option

    return lambda name, value=True: option(name, cfg.surface, value)


def open_output(
    cfg: RunConfig, columns: list[str], questions: Mapping[str, Question]
) -> tuple[SinkWriter, PriorOutput | None]:
    """The writer of this run, and what ``--output`` already holds when it resumes."""
    sink = sink_for(cfg.fmt)
    prior = None
    if cfg.output is not None and (cfg.resume or cfg.retry_errors):
        prior = _read_prior(cfg.output, sink, question_set_sha256(questions))
        # Only a CSV run has a header to hold against this question set's columns.
        if prior.header is not None and prior.header in earlier_headers(columns):
            # A run written by an earlier version: continued under its own header (the new
            # records' schema_version, packed, position and reasked cells are not written).
            columns[:] = prior.header
        if prior.header is not None and prior.header != columns:
            raise RunError(
                f"--output {cfg.output}: its CSV columns differ from this question set's; "
                "resume with the same question file, or write to a new file"
            )
    staged = cfg.overwrite and cfg.output is not None and sink.holds_run(cfg.output)
    try:
        return sink.open(cfg.output, columns, questions, prior, staged), prior
    except OSError as e:
        raise RunError(f"--output {cfg.output}: {e.strerror}") from None


def prior_of(cfg: RunConfig, sha: str) -> PriorOutput | None:
    """What ``output`` holds when the run continues it (``resume`` / ``retry_errors``), read by
    its sink; None for a run that starts it."""
    if cfg.output is None or not (cfg.resume or cfg.retry_errors):
        return None
    return _read_prior(cfg.output, sink_for(cfg.fmt), sha)


def _read_prior(output: str, sink: Sink, sha: str) -> PriorOutput:
    """What ``--output`` holds, or one line saying why this run cannot continue it."""
    try:
        return sink.read_prior(output, sha)
    except PriorMismatch as e:
        raise RunError(f"--output {output}: cannot resume: {e}") from None
    except UnreadableRecord as e:
        # FILE:LINE, as report names it; a Parquet run's journal is named beside its file.
        if e.path == output:
            raise RunError(f"--output {output}:{e.line}: cannot resume from it: {e}") from None
        where = f"{e.path}:{e.line}"
        raise RunError(f"--output {output}: cannot resume from it: {where}: {e}") from None
    except (OSError, ValueError) as e:
        raise RunError(f"--output {output}: cannot resume from it: {e}") from None


def run_files(cfg: RunConfig) -> tuple[list[tuple[str, str | None]], list[tuple[str, str | None]]]:
    """The files a run writes and reads, named as a ``batch`` user gave them: its outputs
    (``--output``, ``--review-out``, ``--emit-cases``, a cache file it fills) and its inputs
    (the question file, each INPUT file or directory, ``--calibration``, the ``--replay``
    directory)."""
    cache = getattr(cfg.cache, "path", None)
    outputs = [
        ("--output", cfg.output),
        ("--review-out", cfg.review_out),
        ("--emit-cases", cfg.emit_cases),
        ("the cache", None if cache is None else os.fspath(cache)),
    ]
    inputs: list[tuple[str, str | None]] = [("the question file", cfg.questions_path)]
    for arg in cfg.inputs:
        reader = reader_for(arg)
        if not (reader is not None and reader.pattern):
            inputs.append(("an input", arg))
    inputs.append(("--calibration", cfg.calibration))
    inputs.append(("--replay", None if cfg.replay is None else os.fspath(cfg.replay)))
    return outputs, inputs


def check_files(
    cfg: RunConfig,
    outputs: Sequence[tuple[str, str | None]] = (),
    inputs: Sequence[tuple[str, str | None]] = (),
) -> None:
    """The one output rule (``records.outputs.check_outputs``) over the run's files
    (:func:`run_files`) and a caller's own (``batch``: ``--thresholds @FILE``, its cache), as
    a :class:`RunError`; an output matching an input pattern is refused too (its records would
    be read back as states)."""
    import fnmatch
    import glob

    from ..records import OutputError, check_outputs

    own_outputs, own_inputs = run_files(cfg)
    try:
        check_outputs([*own_outputs, *outputs], [*own_inputs, *inputs])
    except OutputError as e:
        raise RunError(str(e)) from None
    for flag, output in own_outputs:
        if output is None or output == "-":
            continue
        exists = os.path.exists(output)
        for arg in cfg.inputs:
            reader = reader_for(arg)
            if not (reader is not None and reader.pattern):
                continue
            if fnmatch.fnmatch(os.path.abspath(output), os.path.abspath(arg)) or any(
                os.path.samefile(p, output) for p in glob.glob(arg) if exists
            ):
                raise RunError(
                    f"{flag} {output} matches the input pattern {arg}; its records would be "
                    "read back as states: write it elsewhere"
                )


def _check_output(cfg: RunConfig) -> None:
    """An output onto the question file, onto an input, onto another output, or into a
    directory/glob input is refused before anything is written (the question file was once
    overwritten, exit 0; issue 42 item 1: every side output)."""
    if cfg.output is not None and cfg.overwrite and (cfg.resume or cfg.retry_errors):
        say = _words(cfg)
        raise RunError(
            f"{say('overwrite')} starts over; {say('resume')} and {say('retry_errors')} "
            "continue: pick one"
        )
    check_files(cfg)


def _check_cut_points(cfg: RunConfig) -> None:
    """A script's ``thresholds`` and ``question_thresholds`` as ``--thresholds`` reads them
    (issue 42 items 3 and 4): each pair no above yes, and a question's own cut-points only for
    a question of the set (once it is known)."""
    from collections.abc import Mapping

    from ..core import merged_thresholds, swapped_cut_points

    pairs = [("thresholds", cfg.thresholds)]
    for key, cuts in cfg.question_thresholds.items():
        where = f"question_thresholds[{key!r}]"
        if not isinstance(cuts, Mapping):
            raise RunError(f"{where}: expected a mapping of yes, no, min_confidence")
        if cfg.questions and key not in cfg.questions:
            source = cfg.questions_path or "the question set"
            raise RunError(
                f"{where}: {key!r} is not a question of {source} (its questions: "
                f"{', '.join(cfg.questions)})"
            )
        pairs.append((where, {**cfg.thresholds, **cuts}))
    for where, cuts in pairs:
        swapped = swapped_cut_points(merged_thresholds(cuts))  # names and ranges checked too
        if swapped is not None:
            raise RunError(f"{where}: {swapped}")


def check_config(cfg: RunConfig) -> None:
    """Every option checked before anything is read or written; one line for the first wrong."""
    from ..config import (
        MAX_CONCURRENCY,
        MIN_CONCURRENCY,
    )

    if not MIN_CONCURRENCY <= cfg.concurrency <= MAX_CONCURRENCY:
        raise RunError(
            f"--concurrency takes {MIN_CONCURRENCY}..{MAX_CONCURRENCY} requests in flight, "
            f"got {cfg.concurrency}"
        )
    if cfg.rate is not None and not cfg.rate > 0:
        raise RunError(f"--rate must be a positive number of requests per minute, got {cfg.rate}")
    if not 0 < cfg.patience < math.inf:
        raise RunError(f"--patience must be a positive number of seconds, got {cfg.patience}")
    sink = sink_for(cfg.fmt)
    if not sink.streams and cfg.output is None:
        raise RunError(
            f"--format {sink.name} writes one file, not a stream: name it with -o FILE.{sink.name}"
        )
    say = _words(cfg)
    if (cfg.resume or cfg.retry_errors) and cfg.output is None:
        output = "output=PATH" if cfg.surface == "library" else "--output FILE"
        raise RunError(
            f"{say('resume')} and {say('retry_errors')} need {output} (they read it back)"
        )
    if cfg.retry_errors and not cfg.resume and cfg.output and not sink.holds_run(cfg.output):
        # Issue 31 item 3: it once said "40 skipped (already in the output)", exited 0 and
        # left an empty file.
        raise RunError(
            f"{say('retry_errors')}: {say('output', cfg.output)} holds no records, so no error "
            f"to re-run; drop {say('retry_errors')} to send the states (or add {say('resume')})"
        )
    _check_cut_points(cfg)
    if cfg.inputs.count("-") > 1:
        raise RunError("stdin (-) can be given only once")
    if "-" in cfg.inputs and sys.stdin is None:  # fd 0 closed
        raise RunError("-: stdin is closed; pipe the JSONL states in, or name an input file")
    readers = [reader_for(arg) for arg in cfg.inputs]
    for arg, reader in zip(cfg.inputs, readers, strict=True):
        if reader is None:
            raise RunError(f"{arg}: no such input file or directory")
    if sink.needs_pyarrow or any(r is not None and r.needs_pyarrow for r in readers):
        # Before anything is read or sent: a missing extra is one line naming it.
        from ..records import require_pyarrow

        require_pyarrow()
    _check_output(cfg)


def check_key(classifier: Mapping[str, Any]) -> None:
    """A base URL carrying ``user:pass@`` while the key's variable is set too is refused (a
    request carries one credential). A batch to a backend's own endpoint with its key's
    variable unset is refused before the first request (issue 19: unrefused, a missing key
    wrote one 401 record per state). A
    ``--base-url`` (or ``$TYPESAFE_BASE_URL``) may be a server that takes no key, or carry its
    credentials as ``user:pass@``: it is sent to, and fail fast stops a run it refuses.
    ``classifier``: the run's ``create_classifier`` keywords."""
    if classifier.get("style", "systemone") != "systemone":
        return
    base_url, api_key_env = classifier.get("base_url"), classifier.get("api_key_env")
    from ..config import BACKENDS, resolve_backend
    from ..core import (
        redact_url,
        userinfo,
    )

    name = classifier.get("backend") or "typesafe"
    try:
        resolved = resolve_backend(
            name, base_url=base_url, api_key_env=api_key_env,
            supports={"images": False},
        )  # fmt: skip
    except ConfigError:
        return  # the classifier's own refusal says what is wrong
    if userinfo(resolved.base_url) and os.environ.get(resolved.api_key_env):
        # Issue 31 item 22: refused once, before the run, not as one config_error per state.
        raise RunError(
            f"the base URL {redact_url(resolved.base_url)} carries credentials (user:pass@) and "
            f"${resolved.api_key_env} is set too; a request carries one: unset "
            f"${resolved.api_key_env} or drop user:pass@ from the URL (nothing was sent)"
        )
    if base_url is not None:
        return
    resolved = resolve_backend(name, api_key_env=api_key_env)
    row = next(b for b in BACKENDS if b.name == name)
    if resolved.base_url != row.base_url or os.environ.get(resolved.api_key_env):
        return
    raise RunError(
        f"${resolved.api_key_env} is not set: export the API key for {resolved.base_url} in it "
        "(or name the variable that holds it with --api-key-env); nothing was sent"
    )
