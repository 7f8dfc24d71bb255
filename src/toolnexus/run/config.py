"""What a batch run is asked to do: :class:`RunConfig`, one frozen value that ``run_batch``
reads and nothing else. ``toolnexus batch``'s flags are built into it (``cli/batch_options``;
a test checks the two field for field), and a script builds it directly.

Fields are the library's types, parsed: ``shard=(2, 3)``, ``pack="auto"``, ``fail_on=("invalid",)``,
``max_cost=Decimal("2.50")``. The messages a wrong value raises name the flag a CLI user gave
(``--concurrency takes 1..256 ...``): one wording for both. What to do next (continue with
``resume``, start over with ``overwrite``, raise a cap) speaks the run's ``surface``: a script
is told ``resume=True``, ``toolnexus batch`` ``--resume`` (issue 43 item 7)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..core import DEFAULT_BATCH_CONCURRENCY, DEFAULT_BATCH_PATIENCE, RunError
from .items import InputSpec

if TYPE_CHECKING:
    from ..core import Decision, Policy, Question, Surface
    from ..questionfile import GateFloor
    from ..scheduler import Admission, Caps, Price

__all__ = ["Recorder", "RunConfig", "apply_gate_floors", "caps_from"]

#: Called with each live decision as sent (``--record``): the state, the questions, the decision.
Recorder = Callable[[Any, "Mapping[str, Question]", "Decision"], None]


@dataclass(frozen=True)
class RunConfig:
    """One batch run: the questions, the inputs and how to read them, the output and how to
    continue it, the scheduler's settings, the spend caps and what each record carries.

    Every field but ``questions`` and ``inputs`` has the default ``toolnexus batch`` has."""

    #: the question set (``toolnexus.Noul``, ... or a question file as ``batch`` loads it)
    questions: Mapping[str, Question]
    #: JSONL/JSON-lines, CSV/TSV, Parquet or Arrow files, a directory, a glob, or ``-`` (stdin)
    inputs: tuple[str, ...]
    #: keyword arguments for ``create_classifier`` (``base_url=``, ``backend=``, ``model=``, ...)
    classifier: Mapping[str, Any] = field(default_factory=dict)
    #: named SPEC §8B policies each record is gated by (a question file's ``gates:``)
    gates: Mapping[str, Policy] = field(default_factory=dict)
    #: the file the questions came from: an ``output`` onto it is refused
    questions_path: str | None = None
    # -- reading the inputs
    id_field: str | None = None
    state_fields: tuple[str, ...] = ()
    image_field: str | None = None
    recursive: bool = False
    # -- the output
    #: a file, or None for stdout (Parquet needs a file)
    output: str | None = None
    #: a registered sink (``run.codecs``): jsonl, json, csv, parquet
    fmt: str = "jsonl"
    ordered: bool = False
    resume: bool = False
    retry_errors: bool = False
    overwrite: bool = False
    #: ``(I, N)``: only the ids whose sha256 falls in shard I of N
    shard: tuple[int, int] | None = None
    #: states per request, or ``"auto"``
    pack: int | Literal["auto"] = 1
    # -- the scheduler
    concurrency: int = DEFAULT_BATCH_CONCURRENCY
    #: requests per minute at most (None: ride the server's 429s)
    rate: float | None = None
    patience: float = DEFAULT_BATCH_PATIENCE
    #: extra admission members chained after the run's limiter (a ``scheduler.budget.Budget``)
    admission: tuple[Admission, ...] = ()
    # -- spend caps (the CLI hands a ``Budget`` built from them in ``admission``)
    max_cost: Decimal | None = None
    max_tokens: int | None = None
    max_requests: int | None = None
    price: Price | None = None
    # -- what each record carries
    #: ``--fail-on`` conditions, in ``core.FLAGS`` order
    fail_on: tuple[str, ...] = ()
    thresholds: Mapping[str, float] = field(default_factory=dict)
    question_thresholds: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: per gate of ``gates``, the floor that sets its cut-points (a thresholds file's ``gates:``,
    #: ``report --write-thresholds --gates``): ``{"merge": 0.75}`` or ``GateFloor`` values
    gate_floors: Mapping[str, GateFloor] = field(default_factory=dict)
    #: a calibration map file (``report --write-calibration``)
    calibration: str | None = None
    #: a decision cache (``toolnexus.cache``) the classifier reads and fills
    cache: Any = None
    #: writes each live exchange (``--record``); the state is kept for it
    record: Recorder | None = None
    #: the recordings directory a replaying classifier answers from (names it in a miss)
    replay: str | Path | None = None
    #: the caller already warned that the question set alone passes the wire's token limits:
    #: the states over them are then only counted
    said_over_limits: bool = False
    # -- after the run, and around it (``run.steps``, ``run.otel``)
    #: after a finished run, the records to review as a CSV (``--review-out``; needs ``output``)
    review_out: str | None = None
    #: after a finished run, golden cases as JSONL (``--emit-cases``; needs ``output``, input
    #: files and the question file's ``gates:``): the review queue's records, or every decided
    #: record with ``emit_cases_all``
    emit_cases: str | None = None
    emit_cases_all: bool = False
    #: one OpenTelemetry span around the run (``--otel``; the otel extra). False: only when the
    #: host asked (``opentelemetry-instrument``, ``OTEL_*`` exporters with the SDK installed)
    otel: bool = False
    #: whose words the run's messages speak (``failures.Surface``): a script is told
    #: ``resume=True`` / ``overwrite=True``, ``toolnexus batch`` ``--resume`` / ``--overwrite``
    #: (issue 43 item 7). ``batch`` sets ``"batch"``, ``toolnexus mcp`` ``"mcp"``.
    surface: Surface = "library"

    def __post_init__(self) -> None:
        # A list or one plain string from a caller outside the CLI: one field, never its letters.
        fields = self.state_fields
        fields = (fields,) if isinstance(fields, str) else tuple(fields)
        object.__setattr__(self, "state_fields", fields)
        inputs = self.inputs
        object.__setattr__(self, "inputs", (inputs,) if isinstance(inputs, str) else tuple(inputs))
        for name in ("review_out", "emit_cases"):
            path = getattr(self, name)
            if isinstance(path, os.PathLike):
                object.__setattr__(self, name, os.fspath(path))
        if self.gate_floors:
            from ..questionfile import gate_floor

            floors = {str(n): gate_floor(f, "gate_floors", str(n)) for n, f in
                      self.gate_floors.items()}  # fmt: skip
            object.__setattr__(self, "gate_floors", floors)

    @classmethod
    def from_question_file(
        cls, path: str | Path, inputs: str | tuple[str, ...], **fields: Any
    ) -> RunConfig:
        """The run ``toolnexus batch PATH INPUTS...`` does: the file's questions and ``gates:``,
        loaded as ``batch`` loads them (``toolnexus.questionfile``; a problem is a
        ``QuestionFileError``, one line at ``path:line:col``), ``questions_path`` set so an
        ``output`` onto the file is refused, and the file's ``model`` in ``classifier`` when
        neither ``classifier={"model": ...}`` nor ``$TOOLNEXUS_MODEL`` names one (``--model`` >
        ``$TOOLNEXUS_MODEL`` > the file's, the CLI's order). ``thresholds`` may be a
        thresholds file (``batch --thresholds @FILE``, a ``str`` or ``Path``): its cut-points, its
        ``questions:`` cut-points and its ``gates:`` floors set ``thresholds``,
        ``question_thresholds`` and ``gate_floors``. ``fields`` are the other fields."""
        from ..core import resolve_model
        from ..questionfile import load_question_file

        thresholds = fields.get("thresholds")
        if isinstance(thresholds, str | os.PathLike):
            from ..questionfile import read_gate_floors, read_thresholds

            top, per_key = read_thresholds(os.fspath(thresholds))
            floors = read_gate_floors(os.fspath(thresholds))
            fields.update(thresholds=top, question_thresholds=per_key, gate_floors=floors)
        (file_model, questions), gates = load_question_file(path)
        if isinstance(thresholds, str | os.PathLike):
            from ..questionfile import check_fitted_on

            # issue 42 item 3: a cut-point for a question the file lacks is refused; the
            # warnings (another question set, changed wording) are the CLI's to print
            check_fitted_on(os.fspath(thresholds), questions, os.fspath(path))
        classifier = dict(fields.pop("classifier", None) or {})
        model = resolve_model(classifier.get("model"), file_model, default=None)
        if model is not None:
            classifier["model"] = model
        return cls(
            questions,
            (inputs,) if isinstance(inputs, str) else tuple(inputs),
            classifier=classifier,
            gates=gates,
            questions_path=str(path),
            **fields,
        )

    def floored_gates(self) -> dict[str, Policy]:
        """``gates`` with ``gate_floors`` applied (:func:`apply_gate_floors`); ``run_batch``
        gates every record by these."""
        return apply_gate_floors(self.gates, self.gate_floors, self.questions_path)

    @property
    def spec(self) -> InputSpec:
        """How the inputs are read (``id_field`` / ``state_fields`` / ``image_field``)."""
        return InputSpec(self.id_field, self.state_fields, self.image_field, self.recursive)

    @property
    def caps(self) -> Caps:
        """The spend caps (``scheduler.budget.Caps``), checked."""
        return caps_from(self.max_cost, self.max_tokens, self.max_requests)


def caps_from(
    max_cost: str | Decimal | None, max_tokens: int | None, max_requests: int | None
) -> Caps:
    """``--max-cost`` / ``--max-tokens`` / ``--max-requests`` as caps, checked: a wrong one is
    one line naming the flag (``batch``, ``filter`` and the MCP server's tools share it)."""
    from decimal import InvalidOperation

    from ..core import ConfigError
    from ..scheduler import Caps

    cost = None
    if max_cost is not None:
        try:
            cost = Decimal(max_cost)
        except InvalidOperation:
            cost = None
        if cost is None or not cost.is_finite():
            raise RunError(f"--max-cost takes an amount in USD (like 2.50), got {max_cost!r}")
    try:
        return Caps(cost, max_tokens, max_requests)
    except ConfigError as e:
        raise RunError(e.detail.removeprefix("classifier: ")) from None


def apply_gate_floors(
    gates: Mapping[str, Policy],
    floors: Mapping[str, GateFloor],
    questions_path: str | os.PathLike[str] | None,
) -> dict[str, Policy]:
    """``gates`` with each gate's floor applied: its cut-points set by the floor in the policy's
    own sense, as ``report --gates --floors`` swept them (``report.sweep.at_floor``). A floor for
    a gate ``gates`` does not define is one line naming both (``eval`` and ``batch`` share it)."""
    if not floors:
        return dict(gates)
    from ..report import at_floor

    source = "the question set" if questions_path is None else os.fspath(questions_path)
    for name, floor in floors.items():
        if name not in gates:
            have = f"its gates: {', '.join(gates)}" if gates else "it has no gates: section"
            again = "QUESTIONS" if questions_path is None else source
            raise RunError(
                f"{floor.where}: gate {name!r} is not a gate of {source} ({have}); write the "
                f"floors again with report --gates {again}"
            )
    return {n: at_floor(p, floors[n].hundredths) if n in floors else p for n, p in gates.items()}
