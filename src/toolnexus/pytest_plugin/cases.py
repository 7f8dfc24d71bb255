"""Golden cases for ``pytest --toolnexus-cases FILE``: one JSON object per line, each a test
item that evaluates its state through the session's recordings and checks what it expects.

    {"id": "dup-refund",
     "questions": "questions/noul-small.yaml",
     "state": "Invoice INV-104 was charged twice. Please refund the duplicate.",
     "expect": {"answers": {"refund": {"band": "yes", "noul_at_least": 0.9}}}}

- ``id``: the item's name (default ``line-N``); unique in the file.
- ``questions``: a question file (relative to the cases file) or the question set inline, in
  wire form (``{"refund": {"type": "noul", "instructions": "..."}}``).
- ``state``: the state, text or JSON, as ``evaluate`` takes it.
- ``expect.answers``: per question key, ``assert_answer``'s keywords (``choice``,
  ``min_confidence``, ``band``, ``level``, ``noul_at_least``, ``thresholds``).
- ``expect.gates``: per gate of the question file's ``gates:``, the action it must take
  (``needs_input`` for an escalation): ``{"refund_gate": "permit"}``.

Blank lines are skipped. A line that is not such an object fails collection naming file:line.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..judge import assert_answer, assert_gate

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from .cassette import Cassette

__all__ = ["CASSETTE", "CaseItem", "CasesFile", "cassette_for", "load_gates", "load_questions"]

#: Where a session keeps its cassette (built on first use, closed at unconfigure).
CASSETTE = pytest.StashKey["Cassette"]()

#: The keys a case line may have, and what ``expect`` may hold.
CASE_KEYS = frozenset({"id", "questions", "state", "expect"})
EXPECT_KEYS = frozenset({"answers", "gates"})
ANSWER_KEYS = frozenset(
    {"choice", "min_confidence", "band", "level", "noul_at_least", "thresholds"}
)


@functools.cache
def _load(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    from ..questionfile import load_question_file

    question_set, gates = load_question_file(path)
    return dict(question_set.questions), gates


def load_questions(path: Path) -> dict[str, Any]:
    """A question file as ``eval`` loads it (the first error raises, one line with file:line)."""
    return _load(path)[0]


def load_gates(path: Path) -> dict[str, Any]:
    """A question file's ``gates:``: named SPEC §8B policies, in file order."""
    return _load(path)[1]


def cassette_for(config: pytest.Config) -> Cassette:
    """The session's cassette, built on first use from the options."""
    if CASSETTE not in config.stash:
        from .cassette import Cassette, recordings_dir

        record, rerecord = (config.getoption(o) for o in ("toolnexus_record", "toolnexus_rerecord"))
        config.stash[CASSETTE] = Cassette(
            recordings_dir(
                config.getoption("toolnexus_recordings"),
                invoked=config.invocation_params.dir,
                root=config.rootpath,
            ),
            mode="rerecord" if rerecord else "record" if record else "replay",
            base_url=config.getoption("toolnexus_base_url"),
        )
    return config.stash[CASSETTE]


class CaseError(Exception):
    """A malformed case line: the message is ``file:line: what``."""


def _case(obj: Any, where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise CaseError(f"{where}: a case is a JSON object")
    unknown = sorted(set(obj) - CASE_KEYS)
    if unknown:
        raise CaseError(f"{where}: unknown key {unknown[0]!r} ({', '.join(sorted(CASE_KEYS))})")
    for key in ("questions", "state", "expect"):
        if key not in obj:
            raise CaseError(f"{where}: missing {key!r}")
    if not isinstance(obj["questions"], str | dict):
        raise CaseError(f"{where}: 'questions' is a file path or a question set object")
    expect = obj["expect"]
    if not isinstance(expect, dict) or set(expect) - EXPECT_KEYS:
        raise CaseError(f"{where}: 'expect' is an object with 'answers' and/or 'gates'")
    gates = expect.get("gates", {})
    if not isinstance(gates, dict) or not all(isinstance(a, str) for a in gates.values()):
        raise CaseError(f"{where}: 'expect.gates' maps gate names to actions")
    if gates and not isinstance(obj["questions"], str):
        raise CaseError(f"{where}: 'expect.gates' needs a question file with gates:")
    answers = expect.get("answers", {})
    if not isinstance(answers, dict):
        raise CaseError(f"{where}: 'expect.answers' maps question keys to expectations")
    for key, want in answers.items():
        if not isinstance(want, dict) or set(want) - ANSWER_KEYS:
            raise CaseError(f"{where}: expect.answers.{key} takes {', '.join(sorted(ANSWER_KEYS))}")
    return obj


class CasesFile(pytest.File):
    """A JSONL file of golden cases, one item per line."""

    def collect(self) -> Iterator[CaseItem]:
        seen: set[str] = set()
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise self.CollectError(f"{self.path}: cannot read: {e}") from None
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{self.path}:{n}"
            try:
                case = _case(json.loads(line), where)
            except json.JSONDecodeError as e:
                raise self.CollectError(f"{where}: not JSON: {e.msg}") from None
            except CaseError as e:
                raise self.CollectError(str(e)) from None
            name = str(case.get("id") or f"line-{n}")
            if name in seen:
                raise self.CollectError(f"{where}: id {name!r} appears twice")
            seen.add(name)
            yield CaseItem.from_parent(self, name=name, case=case, line=n)


class CaseItem(pytest.Item):
    """One golden case: evaluate its state through the recordings, check ``expect``."""

    def __init__(self, *, case: dict[str, Any], line: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.line = line

    def _questions(self) -> Mapping[str, Any]:
        spec = self.case["questions"]
        if isinstance(spec, str):
            return load_questions(self.path.parent / spec)
        return dict(spec)

    def runtest(self) -> None:
        classifier = cassette_for(self.config).sync_classifier()
        with classifier:
            decision = classifier.evaluate(self.case["state"], self._questions())
        questions = self._questions()
        for key, want in self.case["expect"].get("answers", {}).items():
            assert_answer(decision, key, **want)
        gates = self.case["expect"].get("gates", {})
        if gates:
            known = load_gates(self.path.parent / self.case["questions"])
            for name, action in gates.items():
                if name not in known:
                    shown = ", ".join(known) or "none"
                    raise AssertionError(f"no gate {name!r} in {self.case['questions']} ({shown})")
                assert_gate(decision, known[name], action=action, questions=questions)

    def repr_failure(
        self,
        excinfo: ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | TerminalRepr:
        from ..core import ClassifierError

        # An unmet expectation or a bad input is its message, not a traceback into the plugin.
        if isinstance(excinfo.value, AssertionError | ClassifierError):
            return f"{self.path}:{self.line}: {excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.line - 1, f"case {self.name}"
