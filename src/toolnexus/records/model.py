"""The batch record: what ``toolnexus batch`` writes per state and every reader of a run reads.

A run holds two kinds of record, each a frozen dataclass:

- :class:`DecisionRecord`: the state's id, the question-set digest (``questions_sha256``) and the
  decision as ``decision_record`` renders it (wire fields, derived fields, flags).
- :class:`ErrorRecord`: the id, the digest and ``error: {code, message}``.

``to_object`` is the JSON object written to JSONL and JSON runs, keys in the order pinned by the
golden files; ``record_from_object`` reads one back, each field as its metadata or annotation
says (``records.fields.compile_from_object``), each answer as its type's record
(``qtypes.registry.answer_record``).

Every record carries ``schema_version`` (:data:`SCHEMA_VERSION`), right after ``id``: the id
stays the first key (what ``jq .id``, a CSV's first column and every eye looks for), and the
version comes before every field whose meaning it governs, in decision and error records alike.
A record without it was written before versions (version 0: the shape of
``tests/golden/runs-v0``) and is read, and written back, without it, never with a made-up one.
A record of a newer version than :data:`SCHEMA_VERSION` is refused (:func:`schema_problem`):
reading it as today's shape would be a guess. The codecs (``records.codec``) turn these
objects into lines of each format and back. Pure: no I/O.

``cached`` marks a decision answered from the decision cache: its ``usage`` is what the backend
billed when the decision was first made, not tokens this run spent, so a reader sums spent and
cached usage apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..core import DEFAULT_THRESHOLDS, ReportError, registry
from .fields import from_object_of as _from_object
from .fields import to_object_of as _to_object
from .fields import wire, wire_fields

__all__ = [
    "ASKED_KEYS",
    "ERROR_FIELDS",
    "GATES",
    "QUESTIONS_SHA256",
    "RECALIBRATED",
    "RECORD_KEYS",
    "SCHEMA_VERSION",
    "SCHEMA_VERSION_KEY",
    "DecisionRecord",
    "ErrorRecord",
    "GateOutcomes",
    "Record",
    "RecordUsage",
    "RecordVersionError",
    "id_problem",
    "record_from_object",
    "schema_problem",
    "thresholds_struct",
]

#: The record shape this toolnexus writes and the newest it reads (issue 30 item 7); bump it
#: when a reader of the old shape would misread the new one.
#:
#: - 1: the key itself (issue 30 item 7).
#: - 2: each answer carries ``thresholds: {yes, no, min_confidence}``, the cut-points that
#:   decided its ``band`` (a question's own from ``--thresholds @FILE``, else the run's; the
#:   record's top-level ``thresholds`` stays the run default; a struct in Parquet, one JSON cell
#:   in CSV), issue 42 item 6. This round's later issues add their fields in this same step
#:   (refusals, latency and retry counts): one version for the round, not one per field.
#:
#: A reader reads every version up to this one: an answer of version 0 or 1 has no
#: ``thresholds`` (its band was decided by the record's top-level ones, or by a thresholds file
#: the record does not name).
SCHEMA_VERSION = 2
#: The key every record carries it under, second after ``id``.
SCHEMA_VERSION_KEY = "schema_version"
#: What to do about a record of a newer shape.
UPGRADE_HINT = "upgrade toolnexus (pip install -U toolnexus-classifier) to read it"


class RecordVersionError(ReportError, ValueError):
    """A record of a ``schema_version`` this toolnexus does not read; ``str(e)`` says which
    and what to do (a reader adds the file and line)."""


def schema_problem(obj: Mapping[str, Any]) -> str | None:
    """Why this toolnexus cannot read the record ``obj`` (a run's JSON object) by its
    ``schema_version``, or None: none (version 0, written before versions) and 0 to
    :data:`SCHEMA_VERSION` are read; a newer one asks for an upgrade."""
    version = obj.get(SCHEMA_VERSION_KEY)
    if version is None or (type(version) is int and 0 <= version <= SCHEMA_VERSION):
        return None
    if type(version) is int and version > SCHEMA_VERSION:
        return (
            f"record schema_version {version} is newer than this toolnexus reads (up to "
            f"{SCHEMA_VERSION}): {UPGRADE_HINT}"
        )
    shown = repr(version)
    shown = shown if len(shown) <= 40 else shown[:40] + "..."
    return (
        f"record schema_version {shown} is not one toolnexus writes (an integer, at most "
        f"{SCHEMA_VERSION}); fix or remove that record"
    )


#: The field every record carries: the question-set digest of the questions it answered.
QUESTIONS_SHA256 = "questions_sha256"

#: The key a recalibrated decision adds after them (``eval``/``batch --calibration``): the
#: calibration file and its sha256. Absent otherwise, so other records keep their bytes.
RECALIBRATED = "recalibrated"
#: The key a gated decision adds after ``invalid`` (a question file with ``gates:``, issue 35):
#: per gate name, ``{"action", "escalated", "reason"}``. Absent otherwise, so other records keep
#: their bytes.
GATES = "gates"
#: The key an error record's fields are written under: a record read back is an error record
#: when it holds one (not null).
_ERROR_KEY = "error"
#: The fields of one gate's outcome in a record, in order.
GATE_FIELDS = ("action", "escalated", "reason")


class GateOutcomes(dict[str, dict[str, Any]]):
    """A record's ``gates`` as ``records.gates`` builds them, with ``json``: their compact JSON
    text, put together from text prepared once per gate and outcome (issue 35, Speed: a batch
    record's gates cost their JSON encoding more than their evaluation). The JSON codecs write
    that text instead of encoding the objects again; it is what ``json.dumps(..., separators=(",",
    ":"), ensure_ascii=False)`` gives for them. The record owns them: they are not changed after
    the record is built. (No ``__init__`` of its own: ``gate_records`` sets ``json`` as it
    builds one, without a Python call per record.)"""

    __slots__ = ("json",)
    json: str


@dataclass(frozen=True)
class RecordUsage:
    """``usage``: tokens billed for the decision; ``cost`` is None when not reported."""

    input_tokens: int = field(default=0, metadata=wire(arrow=lambda pa: pa.int64()))
    output_tokens: int = field(default=0, metadata=wire(arrow=lambda pa: pa.int64()))
    cost: float | None = field(default=None, metadata=wire(arrow=lambda pa: pa.float64()))

    def to_object(self) -> dict[str, Any]:
        return _to_object(type(self))(self)


def _struct(cls: type) -> Callable[[Any], Any]:
    """The Arrow struct of a record class's typed fields (``usage``, ``error``)."""

    def arrow(pa: Any) -> Any:
        return pa.struct([pa.field(f.name, f.arrow(pa)) for f in wire_fields(cls) if f.arrow])

    return arrow


def _string(pa: Any) -> Any:
    return pa.string()


def _int64(pa: Any) -> Any:
    return pa.int64()


def _bool(pa: Any) -> Any:
    return pa.bool_()


def thresholds_struct(pa: Any) -> Any:
    """The Arrow struct of a set of cut-points: the record's ``thresholds`` and, from
    schema_version 2, each answer's."""
    return pa.struct([pa.field(n, pa.float64()) for n in DEFAULT_THRESHOLDS])


def _answers_out(answers: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    return {k: dict(v) for k, v in answers.items()}


def _gates_out(gates: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    if type(gates) is GateOutcomes:
        # not copied: built for this record alone (records.gates), and the JSON codecs
        # write its prepared text without reading it (issue 35, Speed)
        return gates
    return {k: dict(v) for k, v in gates.items()}


def _usage_out(usage: RecordUsage) -> dict[str, Any]:
    return usage.to_object()


def _recalibrated_arrow(pa: Any) -> Any:
    return pa.struct([pa.field(n, pa.string()) for n in ("file", "sha256")])


# How the fields a plain annotation does not say are read back (``records.fields``: each gets
# its key's JSON value, None when absent; the annotated ones read as their type says).


def _same(value: Any) -> Any:
    # the id: record_from_object has checked it (a string or an integer), and reads no record
    # without one
    return value


# ``type(value) is dict`` first: a run's JSON objects are dicts, and the ABC check costs a
# read record a few percent (instruction counts, bench in the commit that made this).


def _thresholds_read(value: Any) -> dict[str, Any]:
    return dict(value) if type(value) is dict or isinstance(value, Mapping) else {}


def _answers_read(value: Any) -> dict[str, registry.AnswerRecord]:
    # each answer as its type's record (NoulRecord ...), what a renderer reads by attribute
    if type(value) is not dict and not isinstance(value, Mapping):
        return {}
    of, out = registry.of, {}
    for k, v in value.items():
        if type(v) is dict:  # a run's answer: registry.answer_record without its checks
            out[k] = of(v.get("type")).answer_record(v)
        elif isinstance(v, Mapping):
            out[k] = registry.answer_record(v)
    return out


def _recalibrated_read(value: Any) -> dict[str, str] | None:
    if value is None or not isinstance(value, Mapping):
        return None
    return {k: v for k, v in value.items() if isinstance(v, str)}


def _gates_read(value: Any) -> Mapping[str, Mapping[str, Any]] | None:
    if type(value) is GateOutcomes:
        return value  # built by records.gates: already checked, and its JSON text kept
    if value is None or not isinstance(value, Mapping):
        return None
    return {k: v for k, v in value.items() if isinstance(v, Mapping)}


#: The metadata of ``schema_version``, the same in both record kinds: written second, after
#: ``id``, and left out for a record read from a run written before versions.
_VERSION = wire(head=True, omit_none=True, after="id", arrow=_int64)
_SHA = wire(head=True, omit_none=True, arrow=_string)


@dataclass(frozen=True)
class DecisionRecord:
    """One decided state. ``answers`` maps each question key to its answer's record
    (``answer_record``: wire fields, ``band``, ``flags`` ...), in question order.

    Each field's :func:`~toolnexus.records.fields.wire` metadata is the one place its key,
    place, JSON form and Arrow column are said: ``to_object``, :data:`RECORD_KEYS`,
    :data:`ASKED_KEYS`, the CSV columns and the Arrow schema derive from it."""

    id: str | int = field(metadata=wire(head=True, arrow=_string, required=True, read=_same))
    questions_sha256: str | None = field(default=None, metadata=_SHA)
    model: str = field(default="", metadata=wire(arrow=_string))
    calibrated: bool = field(default=False, metadata=wire(arrow=_bool))
    #: answered from the decision cache: ``usage`` was spent by the run that first asked
    cached: bool = field(default=False, metadata=wire(arrow=_bool))
    #: how the state was asked (:data:`ASKED_KEYS`); None in a record written before them
    packed: int | None = field(default=None, metadata=wire(omit_none=True, asked=True,
                                                            arrow=_int64))  # fmt: skip
    position: int | None = field(default=None, metadata=wire(omit_none=True, asked=True,
                                                              arrow=_int64))  # fmt: skip
    reasked: bool | None = field(default=None, metadata=wire(omit_none=True, asked=True,
                                                              arrow=_bool))  # fmt: skip
    usage: RecordUsage = field(
        default_factory=RecordUsage, metadata=wire(out=_usage_out, arrow=_struct(RecordUsage))
    )
    thresholds: Mapping[str, float] = field(
        default_factory=dict,
        metadata=wire(out=dict, copies=True, arrow=thresholds_struct, read=_thresholds_read),
    )
    #: the Arrow struct of ``answers`` is built from the question set (``records.arrow``)
    answers: Mapping[str, Mapping[str, Any]] = field(
        default_factory=dict, metadata=wire(out=_answers_out, copies=True, read=_answers_read)
    )
    flags: tuple[str, ...] = field(
        default=(), metadata=wire(out=list, arrow=lambda pa: pa.list_(pa.string()))
    )
    invalid: str | None = field(default=None, metadata=wire(arrow=_string))
    #: per gate of the question file: what it decided (``GATE_FIELDS``); None: no gates. Not
    #: a typed Arrow column: a Parquet run keeps it in ``extra``.
    gates: Mapping[str, Mapping[str, Any]] | None = field(
        default=None,
        metadata=wire(omit_none=True, extra=True, out=_gates_out, copies=True, read=_gates_read),
    )
    #: ``{"file", "sha256"}`` of the calibration map that recalibrated its answers (each
    #: answer then carries ``recalibrated`` beside its wire probabilities)
    recalibrated: Mapping[str, str] | None = field(
        default=None,
        metadata=wire(
            omit_none=True,
            extra=True,
            out=dict,
            copies=True,
            arrow=_recalibrated_arrow,
            read=_recalibrated_read,
        ),
    )
    #: the record shape (:data:`SCHEMA_VERSION`); None: read from a record written before it
    schema_version: int | None = field(default=SCHEMA_VERSION, metadata=_VERSION)

    @property
    def key(self) -> str:
        """The id as text: what ``--resume``, ``--shard`` and duplicate checks compare."""
        return str(self.id)

    @classmethod
    def from_body(
        cls, item_id: str | int, questions_sha256: str | None, body: Mapping[str, Any]
    ) -> DecisionRecord:
        """The record of a decision's JSON object ``body`` (what ``decision_record`` returns)
        for one state. The batch path builds the record directly (``records.decision.record``);
        this reads one back."""
        return _decision(item_id, questions_sha256, body, cls)

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> DecisionRecord:
        """The record of its JSON object ``obj`` (``to_object``'s, or an earlier shape), each
        field read as its metadata says (``records.fields.compile_from_object``); the id and
        ``schema_version`` are the caller's to check (:func:`record_from_object` does)."""
        read: Callable[[Mapping[str, Any]], DecisionRecord] = _from_object(cls)
        return read(obj)

    def to_object(self) -> dict[str, Any]:
        """The JSON object a JSONL/JSON run holds, keys in the golden files' order."""
        return _to_object(type(self))(self)


@dataclass(frozen=True)
class ErrorRecord:
    """One state that got no decision: a stable ``code`` (``cli/errors.py``'s table) and a
    one-line ``message`` naming where and what to do, written as ``error: {code, message}``."""

    id: str | int = field(metadata=wire(head=True, arrow=_string, required=True, read=_same))
    code: str = field(metadata=wire(nest=_ERROR_KEY, after="questions_sha256", arrow=_string))
    message: str = field(metadata=wire(nest=_ERROR_KEY, after="code", arrow=_string))
    questions_sha256: str | None = field(default=None, metadata=_SHA)
    #: the record shape (:data:`SCHEMA_VERSION`); None: read from a record written before it
    schema_version: int | None = field(default=SCHEMA_VERSION, metadata=_VERSION)

    def __post_init__(self) -> None:
        # One line, always: a CSV row and a JSONL line must stay one physical line.
        object.__setattr__(self, "message", " ".join(self.message.split()))

    @property
    def key(self) -> str:
        return str(self.id)

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> ErrorRecord:
        """The record of its JSON object ``obj`` (as :meth:`DecisionRecord.from_object`)."""
        read: Callable[[Mapping[str, Any]], ErrorRecord] = _from_object(cls)
        return read(obj)

    def to_object(self) -> dict[str, Any]:
        return _to_object(type(self))(self)


#: The keys of a decision, in order, after ``id`` and ``questions_sha256`` (a test pins them):
#: the decision's own fields, not the head and not the keys a record adds only when they apply.
RECORD_KEYS = tuple(f.name for f in wire_fields(DecisionRecord) if not (f.head or f.extra))
#: How the state was asked (issue 31 item 1): the size of the request that answered it, the
#: state's index in that request's ``states``, and whether a packed answer was asked again
#: alone. A record written before they existed lacks them; it is read back (and rewritten)
#: without them, never with made-up values.
ASKED_KEYS = tuple(f.name for f in wire_fields(DecisionRecord) if f.asked)
#: The fields an error record writes under ``error``, in order.
ERROR_FIELDS = tuple(f.name for f in wire_fields(ErrorRecord) if f.nest == _ERROR_KEY)


Record: TypeAlias = DecisionRecord | ErrorRecord


def id_problem(value: Any) -> str | None:
    """Why ``value`` is not an input id, else None: the one rule for the ids ``batch`` reads and
    ``report --labels`` joins on. An id is a non-empty string or an integer (``7`` and ``"7"``
    are one id); a bool, a float, a list or an object is refused, shown cut to 40 characters."""
    if value is None or value == "":
        # One message for an absent key, null and "" (issue 31 item 13: "" once read "not a
        # string or integer", null "missing").
        return "missing, null or empty: an id is a non-empty string or an integer"
    if isinstance(value, bool) or not isinstance(value, str | int):
        shown = repr(value)
        return f"not a string or integer: {shown if len(shown) <= 40 else shown[:40] + '...'}"
    return None


def _decision(
    item_id: str | int,
    sha: str | None,
    body: Mapping[str, Any],
    cls: type[DecisionRecord] = DecisionRecord,
) -> DecisionRecord:
    # from_body: the head keys are given, the rest is the body's.
    head = {"id": item_id, QUESTIONS_SHA256: sha, SCHEMA_VERSION_KEY: SCHEMA_VERSION}
    return cls.from_object({**body, **head})


def record_from_object(obj: Any) -> Record | None:
    """The record a JSON object holds, or None when it is not a record (no ``id``, or an id
    that is neither a string nor an integer). Raises :class:`RecordVersionError` for a record
    of a ``schema_version`` this toolnexus does not read (:func:`schema_problem`)."""
    if not isinstance(obj, Mapping):
        return None
    item_id = obj.get("id")
    if isinstance(item_id, bool) or not isinstance(item_id, str | int):
        return None
    problem = schema_problem(obj)
    if problem is not None:
        raise RecordVersionError(f"record {str(item_id)[:40]!r}: {problem}")
    # ``error`` present (and not null) makes it an error record, as it always has.
    if obj.get(_ERROR_KEY) is not None:
        return ErrorRecord.from_object(obj)
    return DecisionRecord.from_object(obj)
