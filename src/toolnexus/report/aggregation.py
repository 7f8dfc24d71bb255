"""Streaming statistics over one run: ``RunStats`` walks a run's records, counts each answer
in its question's accumulator (:mod:`.accumulators`, :mod:`.ranked`), joins each answer to its
label by id, and, when a second run follows, keeps per id the little it needs to say what
changed (:mod:`.compare`).

Records come from ``toolnexus batch``: ``{"id", "model", "calibrated", "usage", "answers",
"flags", ...}`` or an error record ``{"id", "error": {"code", "message"}}``. Every accumulator
can ``merge`` the same accumulator of a later chunk of the run (:mod:`.reader` counts chunks
side by side); which records count (the last of a repeated id) is the reader's business. What
a run spent (:class:`Usage`) is :mod:`.usage`'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from ..core import registry
from ..metrics import DEFAULT_DEFINITIONS, MetricDefinitions
from .accumulators import (
    FIRST_IDS,
    NoulStats,
    OtherStats,
    QuestionStats,
)
from .compare import Delta, Snapshot
from .fieldchecks import LabelError, RecordError, _shown, _valid_distribution
from .inputs import ReportInputError
from .judged import GateCounts
from .labels import Labels
from .levels import ScoreStats
from .model import QuestionReport, RunSummary
from .ranked import ChoiceStats
from .usage import MAX_TOKENS, Usage

__all__ = [
    "RunStats",
    "record_id",
]

#: The answer types whose distribution a valid record's answer must hold (issue 42 item 5).
_DISTRIBUTIONS = frozenset(("choice", "score"))

#: A question's plan, resolved when its key is first met: its stats, their bound ``add``, its
#: type, its label column in a labels row (0 for none), and its snapshot or delta (or None).
Plan = tuple[
    QuestionStats,
    Callable[[Mapping[str, Any], str | None, str], None],
    str,
    int,
    Snapshot | Delta | None,
]

# Each modelled type's accumulator, attached to its entry in the type registry (its "report"
# hook); a type without one (raw) is counted, not judged (OtherStats).
for _name, _stats in (("noul", NoulStats), ("choice", ChoiceStats), ("score", ScoreStats)):
    registry.attach(_name, registry.REPORT, _stats)


class RunStats:
    """Everything counted over one run file."""

    def __init__(
        self,
        path: str,
        labels: Labels | None = None,
        *,
        snapshot: bool = False,
        against: Mapping[str, Snapshot] | None = None,
    ) -> None:
        """``snapshot``: keep per id what a comparison with a later run needs (the first of two
        runs); ``against``: compare each answer, as it is counted, with the first run's
        snapshots (the second run)."""
        self.path = path
        self.labels = labels
        self.records = 0
        self.answered = 0
        self.labelled = 0
        self.errors: Counter[str] = Counter()
        #: the ids of the first error records, in file order
        self.error_ids: list[str] = []
        self.models: Counter[Any] = Counter()
        #: the question-set digests, styles and pack sizes the answered records carry (what a
        #: calibration map fitted on this run holds for; ``None``: a record does not say).
        #: Sets, not counts: the hot path adds a digest only when it differs from the last.
        self.digests: set[Any] = set()
        self.styles: set[Any] = set()
        self.packs: set[Any] = set()
        self._last_digest: Any = ()
        self.unasked = False
        #: recalibrated records by the sha256 of their calibration file
        self.recalibrated_by: Counter[str] = Counter()
        self.uncalibrated = 0
        #: what the run spent, and apart from it what cached answers had cost when first
        #: asked (issue 17: spent and cached usage are separate figures)
        self.spent = Usage()
        self.cached = Usage()
        self.cached_records = 0
        self.questions: dict[str, QuestionStats] = {}
        #: the first of two runs: per question, what a comparison needs of each id
        self.snapshots: dict[str, Snapshot] | None = {} if snapshot else None
        #: the second of two runs: per question, what changed since the first
        self.against = against
        self.deltas: dict[str, Delta] | None = {} if against is not None else None
        #: of two runs: the labelled ids (which labels no run used is said once for both)
        self.label_ids_seen: set[str] | None = set() if snapshot or against is not None else None
        #: per question key, resolved once (:data:`Plan`)
        self._plan: dict[str, Plan] = {}
        self._rows = labels.rows if labels is not None else {}
        #: each gate's actions, escalations and outcomes, counted in this pass (issue 35)
        self.gates = GateCounts()

    def _question(self, key: str, answer: Mapping[str, Any]) -> QuestionStats:
        qtype = answer.get("type")
        if not isinstance(qtype, str):
            raise ValueError(f"answer {key!r} has no type")
        cls: type[QuestionStats] | None = registry.attached(qtype, registry.REPORT)
        st = cls(key) if cls is not None else OtherStats(key, qtype)
        self.questions[key] = st
        return st

    def add(self, record: Any, sid: str) -> None:
        """Count one record (a dict) whose id (as text) is ``sid``; raises
        :class:`RecordError` (or KeyError, TypeError, ValueError) on a malformed record. The hot
        path of a report."""
        self.records += 1
        error = record.get("error")
        if error is not None:
            if type(error) is not dict or "code" not in error:
                raise RecordError(f"error is {_shown(error)}, not an object with a code")
            self.errors[str(error["code"])] += 1
            if len(self.error_ids) < FIRST_IDS:
                self.error_ids.append(sid)
            return
        answers = record["answers"]
        if type(answers) is not dict:
            raise RecordError(f"answers is {_shown(answers)}, not an object of answers by key")
        self.count_record(
            record.get("model"),
            record.get("questions_sha256"),
            record.get("recalibrated"),
            record.get("style"),
            record.get("packed"),
            record.get("calibrated"),
            record.get("cached"),
            record.get("usage"),
        )
        invalid = record.get("invalid")
        if invalid is not None and type(invalid) is not str:
            # issue 42 item 5: only null marks a valid record; false or 0 would skip its checks
            raise RecordError(f"invalid is {_shown(invalid)}, not null or a validation message")
        self._count_answers(answers, sid, invalid is None)
        gates = record.get("gates")
        if gates is not None:
            self.gates.add(gates, sid, self._rows.get(sid), self.labels)

    def count_record(
        self,
        model: Any,
        digest: Any,
        recalibrated: Any,
        style: Any,
        packed: Any,
        calibrated: Any,
        cached: Any,
        usage: Any,
    ) -> None:
        """An answered record's own fields (what :meth:`add` reads from a record object, and a
        Parquet run's columns hold); :attr:`records` is the caller's."""
        self.answered += 1
        if model is not None and type(model) is not str:
            raise RecordError(f"model is {_shown(model)}, not a model name")
        self.models[model] += 1
        if digest != self._last_digest:
            self.digests.add(digest)
            self._last_digest = digest
        if recalibrated is not None:
            sha = recalibrated.get("sha256") if type(recalibrated) is dict else None
            if type(sha) is not str:
                raise RecordError(f"recalibrated is {_shown(recalibrated)}, not a file's sha256")
            self.recalibrated_by[sha] += 1
        if style is not None or packed is not None:
            self._asked(style, packed)
        elif not self.unasked:
            self.unasked = True  # a record that does not say how it was asked
        if not calibrated:
            self.uncalibrated += 1
        if cached is True:
            self.cached_records += 1
            spent = self.cached
        elif cached is False or cached is None:
            spent = self.spent
        else:
            raise RecordError(f"cached is {_shown(cached)}, not true or false")
        if usage:
            n_in = usage.get("input_tokens") if type(usage) is dict else None
            n_out = usage.get("output_tokens") if type(usage) is dict else None
            if (
                type(n_in) is int
                and type(n_out) is int
                and 0 <= n_in <= MAX_TOKENS
                and 0 <= n_out <= MAX_TOKENS
                and usage.get("cost") is None
            ):
                spent.input_tokens += n_in
                spent.output_tokens += n_out
            else:
                spent.add(usage)

    def _count_answers(self, answers: dict[str, Any], sid: str, valid: bool = False) -> None:
        labelled = False
        plan = self._plan
        row = self._rows.get(sid)
        for key, answer in answers.items():
            if type(answer) is not dict:
                raise RecordError(f"answer {key!r} is {_shown(answer)}, not an object")
            step = plan.get(key)
            if step is None:
                step = plan[key] = self._step(key, answer)
            st, st_add, qtype, column, track = step
            if answer["type"] != qtype:
                raise RecordError(
                    f"answer {key!r} is {_shown(answer['type'])} here but {qtype} in earlier "
                    "records"
                )
            label = row[column] if row is not None and column else None
            if label:
                labelled = True
            else:
                label = None
            try:
                st_add(answer, label, sid)
                if valid and qtype in _DISTRIBUTIONS:
                    # after the accumulator has refused a value that is not a probability
                    _valid_distribution(answer)
            except LabelError as e:
                assert self.labels is not None
                raise ReportInputError(f"{self.labels.where(sid)}: {e}") from None
            except KeyError as e:
                raise RecordError(f"answer {key!r} has no {e}") from None
            except (RecordError, TypeError, ValueError) as e:
                raise RecordError(f"answer {key!r}: {e}") from None
            if track is not None:
                track.add(sid, st.category(answer), st.probabilities(answer))
        if labelled:
            self.labelled += 1
            if self.label_ids_seen is not None:
                self.label_ids_seen.add(sid)

    def plan_for(self, key: str, qtype: str) -> Plan:
        """The plan of question ``key`` (made when first met, as an answer of ``qtype``):
        its stats, their ``add``, their type, its label column (0: none) and its snapshot or
        delta."""
        step = self._plan.get(key)
        if step is None:
            step = self._plan[key] = self._step(key, {"type": qtype})
        return step

    def _asked(self, style: Any, packed: Any) -> None:
        """How a record was asked: ``style`` a name, ``packed`` a pack size (or an object with
        a ``size``, as packed requests may record it)."""
        if style is not None and type(style) is not str:
            raise RecordError(f"style is {_shown(style)}, not a style name")
        if type(packed) is dict:
            packed = packed.get("size")
        if packed is not None and (type(packed) is not int or packed < 1):
            raise RecordError(f"packed is {_shown(packed)}, not a pack size")
        self.styles.add(style)
        self.packs.add(packed)

    def _step(self, key: str, answer: Mapping[str, Any]) -> Plan:
        """The plan of a question key met for the first time in this run (or chunk)."""
        st = self.questions.get(key) or self._question(key, answer)
        column = self.labels.column(key) if self.labels is not None else None
        track: Snapshot | Delta | None = None
        if self.snapshots is not None:
            track = self.snapshots.setdefault(key, Snapshot())
        elif self.deltas is not None:
            before = self.against.get(key) if self.against is not None else None
            track = self.deltas.setdefault(key, Delta(before))
        return st, st.add, st.type, column or 0, track

    def detach(self) -> None:
        """Drop what only counting needs (the labels, the per-key plan) before this is sent to
        another process: a counted chunk travels without the labels file."""
        self.labels = None
        self._rows = {}
        self._plan = {}
        self.against = None  # the first run's snapshots stay where they are
        for delta in (self.deltas or {}).values():
            delta.before = None

    def merge(self, other: RunStats) -> None:
        """Add the counts of ``other``, the next chunk of the same run. Raises
        :class:`RecordError` when a question's type differs between the two (the caller reads
        the run in one piece to name the line)."""
        self.records += other.records
        self.answered += other.answered
        self.labelled += other.labelled
        self.errors.update(other.errors)
        self.error_ids.extend(other.error_ids[: FIRST_IDS - len(self.error_ids)])
        self.models.update(other.models)
        self.digests |= other.digests
        self.styles |= other.styles
        self.packs |= other.packs
        self.unasked = self.unasked or other.unasked
        self.recalibrated_by.update(other.recalibrated_by)
        self.uncalibrated += other.uncalibrated
        self.spent.merge(other.spent)
        self.cached.merge(other.cached)
        self.cached_records += other.cached_records
        self.gates.merge(other.gates)
        self._plan = {}
        for key, st in other.questions.items():
            mine = self.questions.get(key)
            if mine is None:
                self.questions[key] = st
            elif mine.type != st.type:
                raise RecordError(f"answer {key!r} is {st.type} in one chunk, {mine.type} before")
            else:
                mine.merge(st)
        if self.snapshots is not None and other.snapshots is not None:
            for key, snapshot in other.snapshots.items():
                self.snapshots.setdefault(key, Snapshot()).merge(snapshot)
        if self.deltas is not None and other.deltas is not None:
            for key, delta in other.deltas.items():
                self.deltas.setdefault(key, Delta(None)).merge(delta)
        if self.label_ids_seen is not None and other.label_ids_seen is not None:
            self.label_ids_seen |= other.label_ids_seen

    def summary(self) -> RunSummary:
        """The run's line in the report's ``runs`` list."""
        return RunSummary(
            path=self.path,
            records=self.records,
            answered=self.answered,
            labelled=self.labelled,
            errors=dict(sorted(self.errors.items())),
            models={str(m): n for m, n in self.models.most_common()},
            uncalibrated_records=self.uncalibrated,
            usage=self.spent.summary(),
            cached_records=self.cached_records,
            cached_usage=self.cached.summary(),
            error_ids=tuple(self.error_ids),
            recalibrated_by=dict(sorted(self.recalibrated_by.items())) or None,
        )

    def question_reports(
        self,
        target_precision: float | None = None,
        intervals: bool | None = None,
        definitions: MetricDefinitions = DEFAULT_DEFINITIONS,
    ) -> dict[str, QuestionReport]:
        """Per question key, in the order first met: its report over this run (``intervals``:
        each ECE with its bootstrap interval and noise floor; ``None``: up to
        ``AUTO_INTERVALS_MAX`` labelled answers; ``definitions``: issue 47's)."""
        return {
            key: self.question_report(key, target_precision, intervals, definitions)
            for key in self.questions
        }

    def question_report(
        self,
        key: str,
        target_precision: float | None = None,
        intervals: bool | None = None,
        definitions: MetricDefinitions = DEFAULT_DEFINITIONS,
    ) -> QuestionReport:
        """The report of question ``key`` (see :meth:`question_reports`)."""
        st = self.questions[key]
        return st.report(self.errors, target_precision, intervals, definitions)


def record_id(record: Any) -> str:
    """A record's id as text (batch counts ``7`` and ``"7"`` as one id)."""
    if type(record) is not dict:
        raise RecordError(f"a record is a JSON object, not {_shown(record)}")
    rid = record["id"]
    if type(rid) is str:
        return rid
    if type(rid) is int:
        return str(rid)
    raise RecordError(f"id is {_shown(rid)}, not a string or an integer")
