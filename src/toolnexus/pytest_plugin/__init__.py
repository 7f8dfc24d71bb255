"""The pytest plugin (entry point ``pytest11``): decisions replayed from recordings in tests,
recorded on demand, assertion helpers, and golden cases as test items (issue 36 item 1).

It loads in every pytest run where toolnexus is installed, so importing it costs nothing: only
pytest, the standard library and the pure answer modules here; the classifier, httpx, aiohttp
and YAML are imported when a fixture or a golden case is first used (a subprocess test holds it).

Options:

- ``--toolnexus-recordings DIR``: the recordings directory (default: ``recordings/`` in the
  rootdir; a given path is relative to where pytest runs).
- ``--toolnexus-record``: a request no recording answers is sent to ``--toolnexus-base-url``
  (a ``toolnexus serve``, or the live API when not given; the key is read from
  ``$TYPESAFE_API_KEY`` at call time), recorded, and answered FROM THE RECORDING.
- ``--toolnexus-rerecord``: every request is recorded again (once per session).
- ``--toolnexus-cases FILE``: golden cases, one per JSONL line, each a test item.

Fixtures: ``toolnexus_classifier`` (a blocking ``toolnexus.sync`` classifier over the
recordings), ``toolnexus_async_classifier`` (the same, async), ``toolnexus_questions`` and
``toolnexus_gates`` (a question file's questions and its ``gates:``, relative to the rootdir)
and ``toolnexus_cassette`` (the session's recordings).
Without ``--toolnexus-record`` a request with no recording fails its test in one line: the
state, the question-set digest, and the exact command that records it.

Golden cases are collected by ``pytest_collect_file`` (not ``pytest_generate_tests``: a case
file needs no test function written for it); ``pytest_configure`` adds each cases file to the
paths pytest collects, so ``pytest --toolnexus-cases cases.jsonl`` runs them wherever the file
lives. The line format is in ``pytest_cases.py`` and the README.
"""

from __future__ import annotations

import itertools
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..judge import assert_answer, assert_gate, describe_answer
from .cases import CASSETTE as _CASSETTE
from .cases import CasesFile, cassette_for, load_gates, load_questions

if TYPE_CHECKING:
    from ..classifier import Classifier
    from ..core import Policy, Question
    from ..sync import SyncClassifier
    from .cassette import Cassette, RecordingFailed, RecordingMiss

__all__ = ["assert_answer", "assert_gate", "describe_answer"]

_PLUGIN = "toolnexus.pytest_plugin"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("toolnexus", "toolnexus recordings and golden cases")
    group.addoption(
        "--toolnexus-recordings",
        metavar="DIR",
        default=None,
        help="Directory of toolnexus recordings (default: recordings/ in the rootdir).",
    )
    group.addoption(
        "--toolnexus-record",
        action="store_true",
        help="Record requests that no recording answers, against --toolnexus-base-url.",
    )
    group.addoption(
        "--toolnexus-rerecord",
        action="store_true",
        help="Record every request again (once per session).",
    )
    group.addoption(
        "--toolnexus-base-url",
        metavar="URL",
        default=None,
        help="System One base URL to record against (a `toolnexus serve`; default: the live "
        "API). The key is read from $TYPESAFE_API_KEY at call time.",
    )
    group.addoption(
        "--toolnexus-cases",
        metavar="FILE",
        action="append",
        default=[],
        help="Golden cases (JSONL): each line runs as a test item (repeatable).",
    )


def pytest_configure(config: pytest.Config) -> None:
    # A cases file is collected wherever it lives, not only under the paths given.
    for value in config.getoption("toolnexus_cases") or ():
        path = str(config.invocation_params.dir / value)
        if path not in config.args:
            config.args.append(path)


def _cases_paths(config: pytest.Config) -> set[Path]:
    invoked = config.invocation_params.dir
    return {(invoked / v).resolve() for v in config.getoption("toolnexus_cases") or ()}


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.resolve() in _cases_paths(parent.config):
        return CasesFile.from_parent(parent, path=file_path)
    return None


def pytest_unconfigure(config: pytest.Config) -> None:
    cassette = config.stash.get(_CASSETTE, None)
    if cassette is not None:
        cassette.close()


def record_command(config: pytest.Config, nodeid: str, miss: RecordingMiss) -> str:
    """The exact command line that records what ``nodeid`` missed."""
    args = ["pytest"]
    if _PLUGIN in _plugins_named(config):
        args += ["-p", _PLUGIN]
    root = config.rootpath
    if config.getoption("toolnexus_recordings") is not None:
        args += ["--toolnexus-recordings", _relative(miss.directory, root)]
    args.append("--toolnexus-record")
    base_url = config.getoption("toolnexus_base_url")
    if base_url:
        from ..core import redact_url

        # A failure line is shown and logged: credentials in the URL never are.
        args += ["--toolnexus-base-url", redact_url(base_url)]
    for case in sorted(_cases_paths(config)):
        if nodeid.startswith(f"{_relative(case, root)}::"):
            args += ["--toolnexus-cases", _relative(case, root)]
    args.append(nodeid)
    line = shlex.join(args)
    if config.invocation_params.dir == root:
        return line
    return f"cd {shlex.quote(str(root))} && {line}"  # node ids are relative to the rootdir


def _relative(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _plugins_named(config: pytest.Config) -> list[str]:
    """The ``-p NAME`` values pytest was invoked with (this plugin is one when not installed)."""
    args = list(config.invocation_params.args)
    named = [b for a, b in itertools.pairwise(args) if a == "-p"]
    return named + [a[2:] for a in args if a.startswith("-p") and len(a) > 2]


def _ours(error: BaseException | None) -> RecordingMiss | RecordingFailed | None:
    """The cassette's miss or recording failure in ``error``'s chain, if there is one."""
    from .cassette import RecordingFailed, RecordingMiss

    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, RecordingMiss | RecordingFailed):
            return error
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    except Exception as error:
        # Only a run that used the recordings can miss one; nothing is imported otherwise.
        miss = _ours(error) if _CASSETTE in item.config.stash else None
        if miss is None:
            raise
    # Failed outside the except block: the line alone, not the error chained under it.
    from ..core import QUESTIONS_DIGEST
    from .cassette import RecordingFailed

    if isinstance(miss, RecordingFailed):
        pytest.fail(f"toolnexus: {miss.detail}", pytrace=False)
    config = item.config
    pytest.fail(
        f"toolnexus: no recording in {_relative(miss.directory, config.rootpath)} for state "
        f"{miss.state_preview!r} with {QUESTIONS_DIGEST} {miss.questions_sha256[:12]}; "
        f"record it with: {record_command(config, item.nodeid, miss)}",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def toolnexus_cassette(pytestconfig: pytest.Config) -> Cassette:
    """The session's recordings directory, replaying (and recording, with the options)."""
    return cassette_for(pytestconfig)


@pytest.fixture
def toolnexus_classifier(toolnexus_cassette: Cassette) -> Iterator[SyncClassifier]:
    """A blocking classifier (``toolnexus.sync``) that answers from the recordings."""
    classifier = toolnexus_cassette.sync_classifier()
    with classifier:
        yield classifier


@pytest.fixture
def toolnexus_async_classifier(toolnexus_cassette: Cassette) -> Classifier:
    """The same recordings behind an async classifier (``await c.evaluate(...)``) for a test
    that runs its own event loop."""
    return toolnexus_cassette.async_classifier()


@pytest.fixture(scope="session")
def toolnexus_questions(pytestconfig: pytest.Config) -> Callable[[str], dict[str, Question]]:
    """``load(path)``: a question file (relative to the rootdir) as the question set."""

    def load(path: str | Path) -> dict[str, Any]:
        return load_questions(pytestconfig.rootpath / path)

    return load


@pytest.fixture(scope="session")
def toolnexus_gates(pytestconfig: pytest.Config) -> Callable[[str], dict[str, Policy]]:
    """``load(path)``: a question file's ``gates:`` (named SPEC §8B policies) for
    ``assert_gate``, by name, relative to the rootdir."""

    def load(path: str | Path) -> dict[str, Policy]:
        return load_gates(pytestconfig.rootpath / path)

    return load
