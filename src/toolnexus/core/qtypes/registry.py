"""The question-type registry: one :class:`QuestionType` per wire ``type``, its hooks in one
place. Pure: it imports nothing but the standard library.

Each type's module (``noul.py``, ``choice.py``, ``score.py``, ``raw.py``) defines the type's
question and answer values and registers them with their hooks; every consumer asks the
registry instead of switching on the type string::

    qtype = registry.of(answer_obj["type"])     # the registered type, or RAW for any other
    answer = qtype.decode(answer_obj, key, question)  # wire answer -> answer value

The core hooks (fields of :class:`QuestionType`), each pure:

- ``from_wire``: ``(obj, key, where) -> question``: a question-file / wire mapping, shapes
  checked (``questions.question_from_wire``)
- ``to_wire``: ``(question) -> dict``: the question as the wire carries it
- ``limits``: ``(key, question) -> None``: the client-side limits (``check_limits``)
- ``decode``: ``(obj, key, question | None) -> answer``: a wire answer (``parse_decision``)
- ``validate``: ``(question, answer) -> str | None``: what is wrong, seed 004's order
  (``validate_decision``)
- ``record``: ``(answer, out, flags) -> None``: the derived record fields and flags beside the
  wire fields (``records.decision_record``)
- ``band``: ``(answer, thresholds) -> "yes" | "no" | "uncertain"`` (``threshold_band``)
- ``sample``: ``(question) -> wire answer``: a valid answer of this question, from which the CSV
  columns are learnt (``records.sample_record``)
- ``synthetic``: ``(wire question, draws) -> wire answer``: ``serve --synthetic``'s answer
- ``text``: ``(answer record) -> str``: the answer's cell in ``eval``'s table (it gets the
  type's ``answer_record`` class, so it reads attributes)
- ``arrow``: ``(pyarrow module) -> [(field, DataType), ...]``: the answer's own fields in record
  order, between ``type`` and ``band``, for its Arrow/Parquet struct (the module is passed in,
  so no pure module imports pyarrow); ``None`` stores the answer as a raw one (its JSON text)
- the judge layer's readings (``bands.py``, ``policy.py``, ``assertions.py``), each of one
  answer value, None where the type has no such reading: ``probability`` (a noul's p: the
  answer reads as a §8B band, not as ``sure``), ``value`` (the one number: noul p, score
  value, choice confidence), ``gauge`` (the number a gate rule's ``below`` / ``at_least``
  compares: a noul's p, a score's value; None for a choice), ``confidence``, ``option`` (a
  choice's pick), ``level`` (a score's ``(index, label)``); ``sure``: ``(answer, high) ->
  bool``, §8B's exclusive "sure" (a choice iff ``confidence > high`` and not near-uniform);
  ``describe``: ``(answer) -> str``, its one line with its distribution (``assert_answer``)
- ``offers``: ``(question) -> criteria | None``: the options a question offers, by name (a
  choice's criteria); None for a type without options (a gate's ``is``, ``filter --where``,
  the degenerate-criteria warning)
- ``gauged``: whether a gate rule's ``below`` / ``at_least`` reads this type (it has a
  ``gauge``: noul, score)
- ``api_fields``: ``(wire question, loc, sink) -> None``: the API schema's checks of the
  type's own fields (its ``criteria``), each finding reported to an :class:`ApiSink` (``serve``'s
  422s, ``serve/rules.py``); ``api_rule``: ``(wire question) -> str | None``: the API's own 400
  for a well-formed question of the type (too many options or levels), None when it passes
- ``floor_thresholds``: ``(floor in hundredths) -> {name: value}``: the seed-004 thresholds a
  tuned floor writes (``thresholds --out``: a noul's ``yes`` / ``no`` pair, a choice's or a
  score's ``min_confidence``); None for a type nobody tunes
- ``limits_code``: the check-criteria code of a ``limits`` error (TN010: a choice's options)
- ``lint``: ``(obj, sink, where) -> None``: the criteria checks of a question-file entry,
  reported to a :class:`LintSink` with paths relative to the question (codes TN020..TN025,
  ``check-criteria``); ``None``: ``from_wire``'s error is the lint
- ``output_tokens``: ``(wire question) -> int``: the central estimate of the output tokens its
  answer bills (the spend caps' reservation, ``scheduler/budget.py``); fitted on the live
  captures, 20 for a type nobody measured
- ``llm``: :class:`LlmHooks`: how the llm style asks it (its line in the system prompt, the
  question as the model sees it, the strict answer schema, the fix-up of a plain-JSON reply);
  ``None``: the llm style refuses the type
- ``where_fields``: the answer attributes ``filter --where`` may compare, name -> whether it
  is a number (else text), the first the default; ``None``: ``--where`` cannot read the type
- ``recalibrated``: the wire fields ``--calibration`` may put beside the answer (its struct's
  ``recalibrated``, with ``band``)
- ``answer_record``: the type's :class:`AnswerRecord` class: one answer's record (wire fields,
  derived fields, ``band``, ``flags``) whose fields read as attributes (``record.noul``,
  ``record.level``); :func:`answer_record` gives any answer object its type's. Its
  ``written_null`` names the fields it writes even when null (a Parquet run keeps those null
  when read back, ``records.arrow``); which of its fields are maps comes from ``arrow``

Layers above the core attach their own hooks by slot name from their own module, so the
registry never imports upward (``tests/house/test_rooms.py``): :func:`attach` /
:func:`attached`. The slots in use:

- :data:`REPORT` (``"report"``): ``report/aggregation.py``: the class that accumulates one
  question's answers (``QuestionStats``); a type without one is counted, not judged.
- :data:`GATE` (``"gate"``): reserved for the judge layer's per-type conditions
  (``policy.py``), which today reads answers through the core readings above.
- :data:`DIFF` (``"diff"``): ``cli/setdiff.py``: ``(key, old, new) -> [Change]``, what changed
  between two questions of the type beside their instructions (``toolnexus diff``)
- :data:`CHECK_RULES` (``"check_rules"``): ``cli/questionrules.py``: ``(rules, key, obj,
  text, where) -> None``, ``check-rules``' findings on one question of the type
- :data:`CRITERIA` (``"criteria"``): ``questionfile/checker.py``: ``(checker, question, cpath,
  where) -> None``, ``check-criteria``'s advisory findings on a well-formed question
- :data:`CONSISTENCY` (``"consistency"``): ``consistency.py``: ``(answer, calibrated) ->
  flags``, the consistency flags an answer's own numbers earn (a core module, attached the
  same way so the check stays beside its rounding bounds)
- :data:`LABELS` (``"labels"``): ``report/judged.py``: a ``LabelReading``: how ``report``
  reads a record's answer of the type against a label (right or wrong, with what confidence)
  and says it in a few words (the review queue)
- :data:`ADVISORY` (``"advisory"``): ``cli/setdiff.py``: ``(question) -> {code: reason}``, the
  check-criteria advisory codes a question carries

``serve``'s request checks (``serve/rules.py``) are System One's API schema: the types it
knows are the API's, and each built-in type's own fields are checked by its ``api_fields`` and
``api_rule`` hooks; ``serve --synthetic`` accepts any type and answers it through its
``synthetic`` hook (:func:`of` gives ``raw``'s placeholder for a type nobody registered).

The question set stays closed (seed 001: noul, choice, score, and seed 004's raw for the rest):
the built-in types are the only ones a question file or the wire can name, and messages list
exactly them. :func:`register` is internal structure, for a type a test (or a later issue)
adds; an unregistered type is still a raw question, or refused with today's message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, TypeAlias

__all__ = [
    "ADVISORY",
    "BUILT_IN",
    "CHECK_RULES",
    "CONSISTENCY",
    "CRITERIA",
    "DIFF",
    "GATE",
    "LABELS",
    "REPORT",
    "AnswerRecord",
    "ApiSink",
    "Band",
    "LintPath",
    "LintSink",
    "LlmHooks",
    "QuestionType",
    "answer_record",
    "answers_probability",
    "attach",
    "attached",
    "find",
    "floored_by_confidence",
    "modelled",
    "of",
    "of_answer",
    "of_question",
    "question_classes",
    "register",
    "registered",
    "unregister",
]


#: A place in a question file, relative to one question: ``("criteria", "true")``.
LintPath: TypeAlias = tuple[str | int, ...]


class LintSink(Protocol):
    """Where a type's ``lint`` hook reports its findings (``questionfile/checker.py`` turns each
    path into the file's line and column)."""

    def add(self, path: LintPath, code: str, message: str, *, at_key: bool = False) -> None:
        """A finding at ``path`` (its key's position with ``at_key``)."""

    def unknown_fields(
        self, obj: Mapping[str, Any], path: LintPath, allowed: tuple[str, ...], what: str
    ) -> None:
        """A finding for each field of ``obj`` (at ``path``) not in ``allowed``."""


class ApiSink(Protocol):
    """Where a type's ``api_fields`` hook reports the API schema's findings (``serve/rules.py``
    turns each into the API's 422 error object; ``loc`` is relative to the request body)."""

    def error(self, kind: str, loc: list[Any], message: str, value: Any) -> None:
        """A finding of pydantic ``kind`` at ``loc`` about ``value``."""

    def text(self, value: Any, loc: list[Any], *, nullable: bool = True) -> None:
        """A finding unless ``value`` is text on the wire (a string, object or array; or null
        when ``nullable``)."""


#: How an answer reads against its thresholds (``validation.threshold_band``).
Band: TypeAlias = Literal["yes", "no", "uncertain"]


class AnswerRecord(dict[str, Any]):
    """One answer's record, as ``records.decision.answer_record`` builds it: the answer's wire
    fields, its type's derived fields, ``band``, ``flags`` and, recalibrated, ``recalibrated``.

    A dict, so every codec writes it byte for byte as before and a record read back from a run
    is one too; the typed reading is its attributes, which a renderer uses instead of string
    keys. Each type's module subclasses it with its own fields (``NoulRecord.noul``). An
    attribute of a field the answer lacks (an invalid answer, a run of an older shape) is
    None."""

    __slots__ = ()

    #: The fields this record writes even when they are null (a derived field with no value, as
    #: a score outside every level has no ``level``); every other field of a record holds a
    #: value or is absent. A run stored by columns (Parquet) holds a null for both: read back,
    #: these stay null and the others are left out, as the JSON record had them.
    written_null: ClassVar[frozenset[str]] = frozenset({"band"})

    @property
    def type(self) -> str:
        """The wire ``type``; "" when absent."""
        value = self.get("type")
        return value if isinstance(value, str) else ""

    @property
    def band(self) -> str:
        """``yes``, ``no`` or ``uncertain``; "" when absent."""
        value = self.get("band")
        return value if isinstance(value, str) else ""

    @property
    def flags(self) -> tuple[str, ...]:
        """The answer's flags, in ``validation.FLAGS`` order."""
        value = self.get("flags")
        return tuple(f for f in value if isinstance(f, str)) if isinstance(value, list) else ()

    @property
    def confidence(self) -> float | None:
        """The answer's confidence (choice, score); None for a type without one."""
        return number(self.get("confidence"))

    @property
    def recalibrated(self) -> Mapping[str, Any] | None:
        """What ``--calibration`` put beside the wire answer, or None."""
        value = self.get("recalibrated")
        return value if isinstance(value, Mapping) else None


def number(value: Any) -> float | None:
    """``value`` when it is a number (not a bool), else None: a record field read back."""
    return None if isinstance(value, bool) or not isinstance(value, int | float) else value


def _no_limits(key: str, question: Any) -> None:
    return None


def _no_api_fields(question: Mapping[str, Any], loc: list[Any], sink: ApiSink) -> None:
    return None


def _no_record(answer: Any, out: dict[str, Any], flags: list[str]) -> None:
    return None


#: Output tokens of an answer of a type nobody measured (``scheduler/budget.py``).
OTHER_ANSWER_TOKENS = 20


def _other_answer_tokens(question: Mapping[str, Any]) -> int:
    return OTHER_ANSWER_TOKENS


def _uncertain(answer: Any, thresholds: Mapping[str, float]) -> Band:
    return "uncertain"


def _none(answer: Any) -> Any:
    return None


def _never_sure(answer: Any, high: float) -> bool:
    return False


def _as_wire(question: Any, wire: dict[str, Any]) -> dict[str, Any]:
    return wire


def _no_fixup(question: Any, answer: dict[str, Any]) -> None:
    return None


@dataclass(frozen=True)
class LlmHooks:
    """How the llm style (``llm_wire.py``) asks a type over a chat endpoint."""

    #: the type's line in the system prompt: what to answer and the answer's JSON shape
    prompt: str
    #: ``(question) -> JSON schema``: the strict ``response_format`` for one answer
    schema: Callable[[Any], dict[str, Any]]
    #: ``(question, wire form) -> object``: the question as the model sees it
    question: Callable[[Any, dict[str, Any]], dict[str, Any]] = _as_wire
    #: ``(question, answer) -> None``: fill in what a plain-JSON reply leaves to the question
    reply: Callable[[Any, dict[str, Any]], None] = _no_fixup


@dataclass(frozen=True, eq=False)
class QuestionType:
    """One question type's hooks (the table in the module docstring says what each does)."""

    name: str
    question: type
    answer: type
    from_wire: Callable[[Mapping[str, Any], str, str], Any]
    to_wire: Callable[[Any], dict[str, Any]]
    decode: Callable[[Mapping[str, Any], str, Any], Any]
    validate: Callable[[Any, Any], str | None]
    sample: Callable[[Any], dict[str, Any]]
    synthetic: Callable[[Mapping[str, Any], Any], dict[str, Any]]
    text: Callable[[Any], str]
    limits: Callable[[str, Any], None] = _no_limits
    record: Callable[[Any, dict[str, Any], list[str]], None] = _no_record
    band: Callable[[Any, Mapping[str, float]], Band] = _uncertain
    arrow: Callable[[Any], list[tuple[str, Any]]] | None = None
    recalibrated: tuple[str, ...] = ()
    llm: LlmHooks | None = None
    output_tokens: Callable[[Mapping[str, Any]], int] = _other_answer_tokens
    lint: Callable[[Mapping[str, Any], LintSink, str], None] | None = None
    where_fields: Mapping[str, bool] | None = None
    answer_record: type[AnswerRecord] = AnswerRecord
    probability: Callable[[Any], float | None] = _none
    value: Callable[[Any], float | None] = _none
    gauge: Callable[[Any], float | None] = _none
    confidence: Callable[[Any], float | None] = _none
    option: Callable[[Any], str | None] = _none
    level: Callable[[Any], tuple[int, str] | None] = _none
    sure: Callable[[Any, float], bool] = _never_sure
    offers: Callable[[Any], Mapping[str, Any] | None] = _none
    api_fields: Callable[[Mapping[str, Any], list[Any], ApiSink], None] = _no_api_fields
    api_rule: Callable[[Mapping[str, Any]], str | None] = _none
    gauged: bool = False
    #: the record field naming the chosen option, which must be one of its probabilities'
    #: keys (a choice's ``choice``); None for a type whose answer names no option
    option_field: str | None = None
    limits_code: str = "TN011"
    floor_thresholds: Callable[[int], dict[str, float]] | None = None
    describe: Callable[[Any], str] = repr
    #: False for ``raw``: the open end of the union, answered as received.
    is_modelled: bool = True
    #: Hooks the layers above the core attach by slot name (:func:`attach`).
    slots: dict[str, Any] = field(default_factory=dict)


#: The slots the layers above the core attach hooks under (module docstring).
REPORT = "report"
GATE = "gate"
DIFF = "diff"
ADVISORY = "advisory"
CHECK_RULES = "check_rules"
CONSISTENCY = "consistency"
LABELS = "labels"
CRITERIA = "criteria"

_TYPES: dict[str, QuestionType] = {}
#: The question classes of the modelled types, for ``isinstance`` checks.
_CLASSES: dict[type, QuestionType] = {}
#: The answer classes, for dispatch on an answer value.
_ANSWERS: dict[type, QuestionType] = {}
#: Slot hooks attached before their type is registered wait here (import order is free).
_PENDING: dict[tuple[str, str], Any] = {}
RAW_NAME = "raw"
#: The closed set (seed 001's modelled types in its order, then seed 004's raw): what messages
#: list, whatever else a test registers.
BUILT_IN = ("noul", "choice", "score", RAW_NAME)


def register(qtype: QuestionType) -> QuestionType:
    """Add ``qtype`` (its module calls this once at import); a second registration of the same
    name replaces the first, so a reloaded module does not fail."""
    old = _TYPES.get(qtype.name)
    if old is not None:
        _CLASSES.pop(old.question, None)
        _ANSWERS.pop(old.answer, None)
    _TYPES[qtype.name] = qtype
    _CLASSES[qtype.question] = qtype
    _ANSWERS[qtype.answer] = qtype
    for (name, slot), hook in list(_PENDING.items()):
        if name == qtype.name:
            qtype.slots[slot] = hook
    return qtype


def unregister(name: str) -> None:
    """Remove a type a test registered; the built-ins (:data:`BUILT_IN`) cannot be removed."""
    if name in BUILT_IN:
        raise ValueError(f"the built-in question type {name!r} cannot be unregistered")
    found = _TYPES.pop(name, None)
    if found is not None:
        _CLASSES.pop(found.question, None)
        _ANSWERS.pop(found.answer, None)
    for pending in [k for k in _PENDING if k[0] == name]:
        del _PENDING[pending]


def find(name: object) -> QuestionType | None:
    """The type registered under ``name`` (``raw`` included), else ``None``."""
    return _TYPES.get(name) if isinstance(name, str) else None


def of(name: object) -> QuestionType:
    """The type registered under ``name``, or ``raw`` for a type the library does not model."""
    found = _TYPES.get(name) if isinstance(name, str) else None
    return found if found is not None else _TYPES[RAW_NAME]


def _by_class(table: dict[type, QuestionType], value: object) -> QuestionType | None:
    # A subclass of a registered class is of its type (isinstance, as before the registry).
    for cls in type(value).__mro__[1:]:
        found = table.get(cls)
        if found is not None:
            return found
    return None


def of_question(question: object) -> QuestionType | None:
    """The type of a question value (an instance of a registered question class)."""
    found = _CLASSES.get(type(question))  # the hot path: one lookup
    return found if found is not None else _by_class(_CLASSES, question)


def of_answer(answer: object) -> QuestionType | None:
    """The type of an answer value (an instance of a registered answer class)."""
    found = _ANSWERS.get(type(answer))  # the hot path: one lookup
    return found if found is not None else _by_class(_ANSWERS, answer)


def answer_record(obj: Mapping[str, Any]) -> AnswerRecord:
    """``obj`` (an answer's record, built here or read back from a run) as its type's
    :class:`AnswerRecord`: itself when it is one, else a copy in the class of its ``type``."""
    if isinstance(obj, AnswerRecord):
        return obj
    return of(obj.get("type")).answer_record(obj)


def modelled(name: object) -> bool:
    """Whether ``name`` is a type the library models (not ``raw``, not unregistered)."""
    found = find(name)
    return found is not None and found.is_modelled


def registered() -> tuple[QuestionType, ...]:
    """Every registered type: the built-ins in seed 001's order, then any other in the order
    it was registered."""
    first = [_TYPES[name] for name in BUILT_IN if name in _TYPES]
    return (*first, *(t for name, t in _TYPES.items() if name not in BUILT_IN))


def question_classes() -> tuple[type, ...]:
    """Every registered question class (``isinstance`` against the open union)."""
    return tuple(_CLASSES)


def answers_probability(name: object) -> bool:
    """Whether an answer of type ``name`` is a probability (it has the ``probability`` reading:
    a noul), so a chart reads it as ``p``, not a top-1 confidence."""
    return of(name).probability is not _none


def option_field(name: object) -> str | None:
    """The record field of a ``name`` answer that names its chosen option, or None (also for
    a type not registered)."""
    qtype = find(name)
    return None if qtype is None else qtype.option_field


def floored_by_confidence(name: object) -> bool:
    """Whether a tuned floor of type ``name`` is a ``min_confidence`` (a choice's, a score's:
    its ``floor_thresholds``), not a yes/no pair on its probability (a noul's)."""
    written = of(name).floor_thresholds
    return written is not None and "min_confidence" in written(0)


def attach(name: str, slot: str, hook: Any) -> None:
    """Give type ``name`` a hook of a layer above the core, under ``slot`` (module docstring)."""
    _PENDING[(name, slot)] = hook
    found = _TYPES.get(name)
    if found is not None:
        found.slots[slot] = hook


def attached(name: object, slot: str) -> Any:
    """The hook type ``name`` has under ``slot``, or ``None``."""
    found = find(name)
    return found.slots.get(slot) if found is not None else None
