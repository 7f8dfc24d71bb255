"""Decision records: a decision as the typed record every format of it prints from.

``record`` is what ``batch`` writes per state and ``eval`` renders: the wire fields plus the
derived ones and the flags, built as a ``DecisionRecord`` directly (its answers each their type's
answer record); ``decision_record`` is its JSON object without the state's id, for callers of
that shape. Pure: no I/O, no rich.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core import (
    DEFAULT_THRESHOLDS,
    FLAGS,
    Answer,
    Checked,
    Decision,
    Question,
    consistency_flags,
    merged_thresholds,
    registry,
    threshold_band,
    validate_decision,
)
from .fields import to_object_of
from .gates import gate_records
from .model import SCHEMA_VERSION, DecisionRecord, RecordUsage

if TYPE_CHECKING:
    from ..calibration import LoadedCalibration, Provenance
    from ..core import Policy

__all__ = [
    "Recalibrator",
    "answer_record",
    "decision_record",
    "record",
    "record_body",
    "sample_record",
]


@dataclass(frozen=True)
class Recalibrator:
    """``--calibration FILE`` for answers of this question set asked this way: the maps that
    ``report --fit-calibration`` wrote, refused (one line naming both sides) for answers of
    another question set or style before anything is sent, and for another model or pack size
    (the decision's ``packed``) at the first decision (seed 000: a threshold tuned against one
    backend does not transfer to another)."""

    loaded: LoadedCalibration
    questions_sha256: str
    style: str

    @classmethod
    def load(
        cls, path: str, questions_sha256: str, style: str, pack: int | None = None
    ) -> Recalibrator:
        """The maps of ``path``, refused now for another question set or style, and for
        another pack size when every answer's is known (``pack=1``: a run that never packs)."""
        from ..calibration import load_calibration

        # A replay answers what System One answered when it was recorded.
        asked = "systemone" if style == "static" else style
        out = cls(load_calibration(path), questions_sha256, asked)
        for key, qmap in out.loaded.file.maps.items():
            fitted = qmap.provenance
            size = fitted.pack_size if pack is None else pack
            out.loaded.map_for(key, out.provenance(fitted.model, size))
        return out

    def provenance(self, model: str, pack_size: int) -> Provenance:
        from ..calibration import Provenance

        return Provenance(self.questions_sha256, model, self.style, pack_size)

    def apply(
        self,
        answers: Mapping[str, registry.AnswerRecord],
        decision: Decision,
        thresholds: Mapping[str, Mapping[str, float]],
        *,
        any_model: bool = False,
    ) -> dict[str, str] | None:
        """Put ``recalibrated: {noul | probabilities, confidence, band}`` beside each mapped
        wire answer (which stays as it was: ``near_uniform`` is still the wire's), its band
        under that key's ``thresholds``; the
        record's ``recalibrated`` (file and sha256), or ``None`` when no answer had a map.
        ``any_model``: a sample record (the CSV header), whose model is made up."""
        applied = False
        for key, record in answers.items():
            qmap = self.loaded.file.maps.get(key)
            if qmap is None:
                continue
            fitted = qmap.provenance
            asked = (fitted.model, fitted.pack_size) if any_model else (decision.model,
                                                                      decision.packed)  # fmt: skip
            qmap = self.loaded.map_for(key, self.provenance(*asked))
            if qmap is None or qmap.type != record.type:
                continue
            rec = qmap.recalibrated(record)
            moved = dataclasses.replace(decision.answers[key], **rec)
            rec["band"] = threshold_band(moved, thresholds[key])
            record["recalibrated"] = rec
            applied = True
        if not applied:
            return None
        return {"file": self.loaded.path, "sha256": self.loaded.sha256}


#: The fields of the record classes in their constructors' order (what ``record`` fills in).
_DECISION = tuple(f.name for f in dataclasses.fields(DecisionRecord))
_USAGE = tuple(f.name for f in dataclasses.fields(RecordUsage))


def _ordered_flags(flags: Iterable[str]) -> list[str]:
    present = set(flags)
    return [f for f in FLAGS if f in present]


def answer_record(
    answer: Answer,
    *,
    calibrated: bool,
    thresholds: Mapping[str, float],
    invalid: bool = False,
    usage_reported: bool = True,
) -> registry.AnswerRecord:
    """One answer's wire fields, its derived fields, ``band`` and the ``thresholds`` that
    decided it, and its flags, as its type's answer record
    (a reply's missing usage is flagged on each of its answers, as ``uncalibrated`` is, so
    ``report`` counts it)."""
    qtype = registry.of_answer(answer)
    out = (registry.AnswerRecord if qtype is None else qtype.answer_record)(answer.to_wire())
    flags: list[str] = list(consistency_flags(answer, calibrated=calibrated))
    cuts = merged_thresholds(thresholds)
    if qtype is None:
        band = threshold_band(answer, cuts)  # refuses what is not an answer
    else:
        # The type's derived fields (near_uniform; level, label) and flags, beside the wire's.
        qtype.record(answer, out, flags)
        band = qtype.band(answer, cuts)
    out["band"] = band
    # The cut-points that decided the band (issue 42 item 6, schema_version 2): a question's
    # own from --thresholds @FILE, else the run's (the record's top-level thresholds).
    out["thresholds"] = cuts
    if band == "uncertain":
        flags.append("uncertain")
    if not calibrated:
        flags.append("uncalibrated")
    if not usage_reported:
        flags.append("usage-missing")
    if invalid:
        flags.append("invalid")
    out["flags"] = _ordered_flags(flags)
    return out


def record(
    item_id: str | int,
    questions_sha256: str | None,
    decision: Decision,
    questions: Mapping[str, Question],
    thresholds: Mapping[str, float] | None = None,
    *,
    validated: bool | Checked = False,
    recalibrator: Recalibrator | None = None,
    any_model: bool = False,
    question_thresholds: Mapping[str, Mapping[str, float]] | None = None,
    gates: Mapping[str, Policy] | None = None,
) -> DecisionRecord:
    """A decision as the typed record of state ``item_id``: the wire fields (model,
    calibrated, usage, each answer's fields) plus the derived ones (near_uniform, level, label,
    band), a ``flags`` list per answer and for the whole decision, and ``invalid``: the
    ``validate_decision`` message, or ``None``. Answers follow the question order, then any
    answer nobody asked for, each its type's :class:`~toolnexus.core.qtypes.registry.AnswerRecord`.
    Built directly: no JSON object is made and read back (issue 30 item 2).

    ``usage.cost`` is ``None`` when the backend did not report one: absent, not zero.
    ``validated`` passes a verdict already reached, so a decision is validated once on every
    path: ``True`` when the caller's evaluate validated fail-closed (the batch stream), or the
    style's :class:`~toolnexus.core.validation.Checked` (a cache that validated to decide what to
    store). ``gates``: the question file's named policies; the record then carries ``gates``
    (``gate_records``).
    """
    t = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    if isinstance(validated, Checked):
        problem = validated.invalid
    else:
        problem = None if validated else validate_decision(questions, decision)
    bad_key = problem.key if problem is not None else None
    keys = [k for k in questions if k in decision.answers]
    keys += [k for k in decision.answers if k not in questions]
    # ``--thresholds @FILE`` may give a question its own cut-points (report --write-thresholds)
    per_key = {k: {**t, **question_thresholds[k]} if question_thresholds and k in
               question_thresholds else t for k in keys}  # fmt: skip
    answers = {
        k: answer_record(
            decision.answers[k],
            calibrated=decision.calibrated,
            thresholds=per_key[k],
            invalid=k == bad_key,
            usage_reported=decision.usage.reported,
        )
        for k in keys
    }
    flags: set[str] = {f for a in answers.values() for f in a["flags"]}
    if not decision.calibrated:
        flags.add("uncalibrated")
    if not decision.usage.reported:
        flags.add("usage-missing")
    if problem is not None:
        flags.add("invalid")
    recalibrated = (
        recalibrator.apply(answers, decision, per_key, any_model=any_model)
        if recalibrator
        else None
    )
    usage = object.__new__(RecordUsage)
    vars(usage).update(zip(_USAGE, (decision.usage.input_tokens, decision.usage.output_tokens,
                                    decision.usage.cost), strict=True))  # fmt: skip
    rec = object.__new__(DecisionRecord)
    # The frozen dataclass's __init__ sets its 16 fields one object.__setattr__ at a time (3 us,
    # a third of an eval's record); the values go in at once, in its fields' order.
    vars(rec).update(zip(_DECISION, (
        item_id,
        questions_sha256,
        decision.model,
        decision.calibrated,
        decision.cached,
        decision.packed,
        decision.position,
        decision.reasked,
        usage,
        t,
        answers,
        tuple(_ordered_flags(flags)),
        problem.message if problem is not None else None,
        # A valid decision (validated here, or fail-closed by the batch stream) has no answer
        # a gate could find invalid: the per-answer check is paid only for an invalid one.
        gate_records(gates, decision.answers, questions if problem is not None else None)
        if gates
        else None,
        recalibrated,
        SCHEMA_VERSION,
    ), strict=True))  # fmt: skip
    return rec


def record_body(rec: DecisionRecord) -> dict[str, Any]:
    """The decision's own JSON object: ``rec.to_object()`` without the head keys (``id``,
    ``schema_version``, ``questions_sha256``): what ``eval`` prints and ``decision_record``
    returns. It shares the record's answers, thresholds and gates (a record is not changed
    after it is built), so a caller that changes the object copies it first."""
    return to_object_of(type(rec), body=True)(rec)


def decision_record(
    decision: Decision,
    questions: Mapping[str, Question],
    thresholds: Mapping[str, float] | None = None,
    *,
    validated: bool | Checked = False,
    recalibrator: Recalibrator | None = None,
    any_model: bool = False,
    question_thresholds: Mapping[str, Mapping[str, float]] | None = None,
    gates: Mapping[str, Policy] | None = None,
) -> dict[str, Any]:
    """A decision as one JSON-ready object: :func:`record`'s fields without a state's id (the
    object ``eval --format json`` prints). Kept for callers of the JSON shape; the library's
    own paths build the typed record."""
    return record_body(
        record(
            "", None, decision, questions, thresholds, validated=validated,
            recalibrator=recalibrator, any_model=any_model,
            question_thresholds=question_thresholds, gates=gates,
        )
    )  # fmt: skip


def sample_record(
    questions: Mapping[str, Question],
    thresholds: Mapping[str, float] | None = None,
    recalibrator: Recalibrator | None = None,
    gates: Mapping[str, Policy] | None = None,
    questions_sha256: str | None = None,
) -> DecisionRecord:
    """A decision record for this question set, to learn the CSV columns from the record
    itself (so the header can never drift from :func:`record`)."""
    from ..core import parse_decision

    answers: dict[str, Any] = {}
    for key, q in questions.items():
        qtype = registry.of_question(q)
        answers[key] = qtype.sample(q) if qtype is not None else {"type": q.type}
    body = {"model": "m", "answers": answers, "usage": {"input_tokens": 0, "output_tokens": 0}}
    return record(
        "", questions_sha256, parse_decision(body, questions), questions, thresholds,
        recalibrator=recalibrator, any_model=True, gates=gates,
    )  # fmt: skip
