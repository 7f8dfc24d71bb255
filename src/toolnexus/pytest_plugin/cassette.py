"""The pytest plugin's recordings: replay from a directory, record what is missing, and hand
back the SAME decision either way.

A cassette answers ``evaluate(state, questions)`` from the recordings directory (the files
``recordings.py`` writes and ``eval --replay DIR`` reads, matched by the ``static`` style on
the canonical question set plus the canonical state). In record mode a miss is sent once to the
live backend (``eval --record``'s ``Backend``, so the file is the one ``eval --record`` would
write), the file is read back, and the decision is decoded from the file exactly as a replay
decodes it: a test that passes while recording passes on replay (jevkit-pytest's record mode
returns the live object and its replay the decoded one; issue 36 item 1).

Imported only when a fixture or a golden case is used: it pulls in the classifier.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..core import QUESTIONS_DIGEST, ClassifierError, StaticMiss
from ..styles import StaticStyle, read_recording

if TYPE_CHECKING:
    from ..classifier import Classifier
    from ..cli import Backend
    from ..core import Decision, Question
    from ..sync import SyncClassifier

__all__ = ["Cassette", "Mode", "RecordingFailed", "RecordingMiss"]

Mode = Literal["replay", "record", "rerecord"]


class RecordingMiss(StaticMiss):
    """No recording answers this request and the run does not record. The plugin turns it
    into a one-line test failure naming the command that records it."""

    def __init__(self, miss: StaticMiss, directory: Path) -> None:
        super().__init__(
            f"classifier: no recording in {directory} for state {miss.state_preview!r} with "
            f"{QUESTIONS_DIGEST} {miss.questions_sha256[:12]}",
            questions_sha256=miss.questions_sha256,
            state_preview=miss.state_preview,
        )
        self.directory = directory


class RecordingFailed(ClassifierError):
    """The live backend failed a request the run was recording: its one line, naming where."""


@dataclass
class Cassette:
    """One recordings directory for a test session.

    ``mode``: ``replay`` (a miss is :class:`RecordingMiss`), ``record`` (a miss is recorded
    against ``base_url``, or the live API when None), ``rerecord`` (every request is recorded
    once in the session, then replayed). The key is read from the environment by the live
    classifier at call time (``TYPESAFE_API_KEY``, or ``api_key_env``), never stored here.
    """

    directory: Path
    mode: Mode = "replay"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None

    def __post_init__(self) -> None:
        self._entries: list[Any] = []
        self._static: StaticStyle | None = None
        self._live: Backend | None = None
        self._fresh: set[str] = set()  # request names recorded in this session (rerecord)
        if self.directory.is_dir() and any(self.directory.glob("*.json")):
            from ..cli import BackendSettings, classifier_options

            # Exactly what ``eval --replay DIR`` answers from (recordings of requests toolnexus
            # would not send as they are left out).
            replay = classifier_options(BackendSettings(replay=self.directory))
            self._entries = list(replay["decisions"])
        self._static = StaticStyle(self._entries)

    async def evaluate(self, state: Any, questions: dict[str, Question]) -> Decision:
        """The recorded decision for ``state`` under ``questions``, recording it first when
        the mode says so. A custom style's ``evaluate``: ``questions`` are prepared."""
        assert self._static is not None
        name = self._name(state, questions)
        if self.mode != "rerecord" or name in self._fresh:
            try:
                return await self._static.decide(state, questions)
            except StaticMiss as miss:
                if self.mode == "replay":
                    raise RecordingMiss(miss, self.directory) from None
        await self._record(state, questions)
        self._fresh.add(name)
        return await self._static.decide(state, questions)

    def _name(self, state: Any, questions: Mapping[str, Question]) -> str:
        from ..core import lift_with_questions
        from ..styles import recording_name

        lifted = lift_with_questions(state, questions)
        return recording_name("", questions, lifted.state, lifted.key_assets())

    async def _record(self, state: Any, questions: dict[str, Question]) -> None:
        from ..core import lift_with_questions
        from ..styles import recording_name

        live = self._backend()
        # Backend.evaluate writes the file ``eval --record`` writes (decision.to_wire(), the
        # endpoint with ${ENV} left unexpanded, no headers, no key).
        try:
            await live.evaluate(state, questions)
        except ClassifierError as e:
            # The library's line names the URL (redacted), the status and the request id.
            raise RecordingFailed(f"recording failed: {e.detail}") from e
        lifted = lift_with_questions(state, questions)
        path = self.directory / recording_name(
            live.model, questions, lifted.state, lifted.key_assets()
        )
        # Read back and decoded as a replay decodes it: the object the test gets is the one
        # every later replay gives.
        self._entries.append(read_recording(path).to_recorded_decision())
        self._static = StaticStyle(self._entries)

    def _backend(self) -> Backend:
        if self._live is None:
            from ..cli import BackendSettings, build_backend

            settings = BackendSettings(
                base_url=self.base_url,
                model=self.model,
                api_key_env=self.api_key_env,
                record=self.directory,
            )
            self._live = build_backend(settings)
        return self._live

    def sync_classifier(self) -> SyncClassifier:
        """A blocking classifier (``toolnexus.sync``) answering through this cassette."""
        from ..sync import create_classifier

        return create_classifier(style="custom", evaluate=self.evaluate)

    def async_classifier(self) -> Classifier:
        """An async classifier answering through this cassette, for a test's own event loop.
        The work runs on the sync facade's loop (a worker thread waits on it), so one live
        classifier serves both kinds of test and nothing is bound to the test's loop."""
        import asyncio

        from ..classifier import create_classifier
        from ..sync import background

        async def evaluate(state: Any, questions: dict[str, Question]) -> Decision:
            return await asyncio.to_thread(background.run, self.evaluate(state, questions))

        return create_classifier(style="custom", evaluate=evaluate)

    def close(self) -> None:
        """Close the live classifier, if recording opened one (on the sync facade's loop)."""
        if self._live is not None:
            from ..sync import background

            live, self._live = self._live, None
            background.run(live.classifier.aclose())


def recordings_dir(value: str | os.PathLike[str] | None, *, invoked: Path, root: Path) -> Path:
    """``--toolnexus-recordings``: a given path is relative to where pytest was invoked (as
    pytest's own path options are); the default ``recordings/`` is the rootdir's."""
    if value is None:
        return root / "recordings"
    return invoked / Path(value)
