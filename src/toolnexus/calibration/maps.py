"""The calibration map file: what ``report --fit-calibration`` writes and ``eval``/``batch
--calibration`` apply. Pure (``json``, ``hashlib``, ``math``): applying a map never loads numpy.

A file holds, per question key, the map and where it holds: the question-set digest (the
``questions_sha256`` batch records carry), the served model (``model`` as the decision echoes
it) and how the answers were asked (style, pack size). A map is refused for answers from any
other (seed 000: a threshold tuned against one backend does not transfer to another; a pack-20
or llm-style map says nothing about pack-1 systemone answers). The bytes are canonical (sorted
keys, two-space indent, one trailing newline) and their sha256 is what a recalibrated decision
records::

    {"format": "toolnexus-calibration", "version": 1,
     "questions": {"<key>": {"type": "noul", "provenance": {...}, "kind": "platt",
                             "params": {"slope": ..., "intercept": ...}, "labelled": 812,
                             "before": {"ece", "brier", "log_loss"}, "after": {...},
                             "candidates": {...}, "note": null}},
     "skipped": {"<key>": "<reason>"}}

Wire probabilities are never changed: the recalibrated ones go beside them.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..core import ConfigError, choice_confidence, registry
from .transforms import isotonic_apply, platt_apply, temperature_apply

__all__ = [
    "FORMAT",
    "KINDS",
    "VERSION",
    "CalibrationFile",
    "CalibrationFileError",
    "CalibrationMismatch",
    "LoadedCalibration",
    "MapFit",
    "Provenance",
    "QuestionMap",
    "dumps_calibration",
    "load_calibration",
    "parse_calibration",
]

FORMAT = "toolnexus-calibration"
VERSION = 1
#: The map kinds each question type may carry.
KINDS: Mapping[str, tuple[str, ...]] = {
    "noul": ("platt", "isotonic"),
    "choice": ("temperature",),
    "score": ("temperature",),
}
_REFIT = "refit it with toolnexus report --fit-calibration"


class CalibrationFileError(ConfigError):
    """A calibration file that cannot be read or breaks its format (one line: file, key)."""


class CalibrationMismatch(ConfigError):
    """A map fitted for other answers (model, question set, style or pack size) than these."""


@dataclass(frozen=True)
class Provenance:
    """Where a map holds: the question-set digest, the served model, the style and pack size."""

    questions_sha256: str
    model: str
    style: str
    pack_size: int

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def differences(self, other: Provenance) -> tuple[str, str]:
        """The fields that differ, as ``(this side, other side)`` texts."""
        mine, theirs = [], []
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if a != b:
                name = f.name.replace("_", " ")
                shown = (str(a)[:12], str(b)[:12]) if f.name == "questions_sha256" else (a, b)
                mine.append(f"{name} {shown[0]}")
                theirs.append(f"{name} {shown[1]}")
        return ", ".join(mine), ", ".join(theirs)


@dataclass(frozen=True)
class MapFit:
    """A fitted map: its kind and parameters, the labelled records it was fitted on, and its
    cross-validated metrics before and after (``ece``, ``brier``, ``log_loss``). ``candidates``
    holds every kind tried with its cross-validated metrics or the reason it was refused;
    ``note`` a documented outcome such as a temperature held at its bound."""

    kind: str
    params: Mapping[str, Any]
    labelled: int
    before: Mapping[str, float | None]
    after: Mapping[str, float | None]
    candidates: Mapping[str, Any] = field(default_factory=dict)
    note: str | None = None


@dataclass(frozen=True)
class QuestionMap:
    """One question's map and the answers it was fitted on."""

    type: str
    provenance: Provenance
    fit: MapFit

    def recalibrate_noul(self, p: float) -> float:
        """The recalibrated probability of a noul answer."""
        params = self.fit.params
        if self.fit.kind == "platt":
            return platt_apply(p, params["slope"], params["intercept"])
        return isotonic_apply(p, params["x"], params["y"])

    def recalibrated(self, answer: Mapping[str, Any]) -> dict[str, Any]:
        """The fields that go beside a wire answer (``noul``, or ``probabilities`` and the
        ``confidence`` recomputed from them). ``answer`` is not changed.

        The confidence is the wire's own formula, ``clip((max p - 1/n) / (1 - 1/n), 0, 1)``
        over the n options or levels (issue 33: one meaning of confidence), so a
        ``min_confidence`` band reads the same quantity before and after ``--calibration``;
        the live API's score confidences fit the same formula on levels (README)."""
        if registry.answers_probability(self.type):  # a noul: its p, by Platt or isotonic
            return {"noul": self.recalibrate_noul(answer["noul"])}
        probs = temperature_apply(answer["probabilities"], self.fit.params["temperature"])
        n = max(len(probs), len(answer.get("legend") or ()))
        return {
            "probabilities": probs,
            "confidence": choice_confidence(max(probs.values(), default=0.0), n),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "provenance": self.provenance.to_json(),
            "kind": self.fit.kind,
            "params": dict(self.fit.params),
            "labelled": self.fit.labelled,
            "before": dict(self.fit.before),
            "after": dict(self.fit.after),
            "candidates": dict(self.fit.candidates),
            "note": self.fit.note,
        }


@dataclass(frozen=True)
class CalibrationFile:
    """Maps per question key, and the keys that were skipped with their reason."""

    maps: Mapping[str, QuestionMap]
    skipped: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "questions": {k: m.to_json() for k, m in sorted(self.maps.items())},
            "skipped": dict(sorted(self.skipped.items())),
        }


@dataclass(frozen=True)
class LoadedCalibration:
    """A file as read: its maps, where it came from, and the sha256 of its bytes."""

    file: CalibrationFile
    path: str
    sha256: str

    def map_for(self, key: str, answers: Provenance) -> QuestionMap | None:
        """The map for ``key`` (``None`` when the file has none), refused with one line naming
        both sides when it was fitted for other answers than ``answers``."""
        qmap = self.file.maps.get(key)
        if qmap is None:
            return None
        if qmap.provenance != answers:
            fitted, these = qmap.provenance.differences(answers)
            raise CalibrationMismatch(
                f"classifier: {self.path}: question {key!r}: the map was fitted for {fitted}; "
                f"these answers are {these}: a calibration tuned against one backend does not "
                "transfer to another (seed 000); fit a map on answers asked this way"
            )
        return qmap


def dumps_calibration(cal: CalibrationFile) -> bytes:
    """The canonical bytes of a calibration file."""
    text = json.dumps(cal.to_json(), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


def load_calibration(path: str | Path) -> LoadedCalibration:
    """Read and validate a calibration file; one line naming the file on any failure."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise CalibrationFileError(
            f"classifier: {path}: cannot read the calibration file ({e.strerror})"
        ) from None
    return LoadedCalibration(parse_calibration(data, str(path)), str(path),
                             hashlib.sha256(data).hexdigest())  # fmt: skip


class _Bad(Exception):
    """A format failure, located by the caller."""


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _Bad(f"{what} must be a finite number, got {value!r}")
    return float(value)


def _probability_list(value: Any, what: str) -> list[float]:
    if not isinstance(value, list) or not value:
        raise _Bad(f"{what} must be a non-empty list of probabilities")
    out = [_number(v, what) for v in value]
    if any(not 0.0 <= v <= 1.0 for v in out):
        raise _Bad(f"{what} holds a value outside 0..1")
    return out


def _params(kind: str, params: Any) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise _Bad("params must be an object")
    if kind == "platt":
        return {n: _number(params.get(n), f"params.{n}") for n in ("slope", "intercept")}
    if kind == "isotonic":
        x, y = (
            _probability_list(params.get("x"), "params.x"),
            _probability_list(params.get("y"), "params.y"),
        )
        if len(x) != len(y):
            raise _Bad(f"params.x has {len(x)} points and params.y {len(y)}")
        if any(a >= b for a, b in itertools.pairwise(x)):
            raise _Bad("params.x must be strictly increasing")
        if any(a > b for a, b in itertools.pairwise(y)):
            raise _Bad("params.y must be non-decreasing")
        return {"x": x, "y": y}
    t = _number(params.get("temperature"), "params.temperature")
    if t <= 0:
        raise _Bad(f"params.temperature must be positive, got {t}")
    return {"temperature": t}


def _metrics(value: Any, what: str) -> dict[str, float | None]:
    if not isinstance(value, dict):
        raise _Bad(f"{what} must be an object of ece, brier, log_loss")
    return {n: None if value.get(n) is None else _number(value.get(n), f"{what}.{n}")
            for n in ("ece", "brier", "log_loss")}  # fmt: skip


def _provenance(value: Any) -> Provenance:
    if not isinstance(value, dict):
        raise _Bad("provenance must be an object")
    texts = []
    for name in ("questions_sha256", "model", "style"):
        text = value.get(name)
        if not isinstance(text, str) or not text:
            raise _Bad(f"provenance.{name} must be a non-empty string")
        texts.append(text)
    pack = value.get("pack_size")
    if isinstance(pack, bool) or not isinstance(pack, int) or pack < 1:
        raise _Bad(f"provenance.pack_size must be a whole number >= 1, got {pack!r}")
    return Provenance(texts[0], texts[1], texts[2], pack)


def _question(entry: Any) -> QuestionMap:
    if not isinstance(entry, dict):
        raise _Bad("must be an object")
    qtype, kind = entry.get("type"), entry.get("kind")
    if not isinstance(qtype, str) or qtype not in KINDS:
        raise _Bad(f"type must be one of {', '.join(KINDS)}, got {qtype!r}")
    if kind not in KINDS[qtype]:
        raise _Bad(f"a {qtype} map is {' or '.join(KINDS[qtype])}, got kind {kind!r}")
    labelled = entry.get("labelled")
    if isinstance(labelled, bool) or not isinstance(labelled, int) or labelled < 0:
        raise _Bad(f"labelled must be a whole number, got {labelled!r}")
    note = entry.get("note")
    if note is not None and not isinstance(note, str):
        raise _Bad("note must be a string or null")
    candidates = entry.get("candidates", {})
    if not isinstance(candidates, dict):
        raise _Bad("candidates must be an object")
    fit = MapFit(kind, _params(kind, entry.get("params")), labelled,
                 _metrics(entry.get("before"), "before"), _metrics(entry.get("after"), "after"),
                 candidates, note)  # fmt: skip
    return QuestionMap(qtype, _provenance(entry.get("provenance")), fit)


def parse_calibration(data: bytes, source: str) -> CalibrationFile:
    """Validate the bytes of a calibration file; ``source`` names it in the one-line error."""
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        line = f":{e.lineno}" if isinstance(e, json.JSONDecodeError) else ""
        raise CalibrationFileError(
            f"classifier: {source}{line}: not a JSON calibration file; {_REFIT}"
        ) from None
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise CalibrationFileError(
            f'classifier: {source}: not a calibration file (no "format": "{FORMAT}"); {_REFIT}'
        )
    if obj.get("version") != VERSION:
        raise CalibrationFileError(
            f"classifier: {source}: calibration file version {obj.get('version')!r}, this "
            f"toolnexus reads version {VERSION}; {_REFIT}"
        )
    questions, skipped = obj.get("questions"), obj.get("skipped", {})
    if not isinstance(questions, dict) or not isinstance(skipped, dict):
        raise CalibrationFileError(
            f"classifier: {source}: questions and skipped must be objects; {_REFIT}"
        )
    maps = {}
    for key, entry in questions.items():
        try:
            maps[key] = _question(entry)
        except _Bad as e:
            raise CalibrationFileError(
                f"classifier: {source}: question {key!r}: {e}; {_REFIT}"
            ) from None
    return CalibrationFile(maps, {str(k): str(v) for k, v in skipped.items()})
