"""``report RUN --labels L --fit-calibration cal.json`` (issue 24 §4): a recalibration map per
question key, fitted on the run's labelled answers, written as a calibration file
(``calibration.maps``), and the report's account of it (:class:`CalibrationFit`).

The maps are fitted on the wire's probabilities (of a recalibrated run too: a map applies to
what the backend answers). Where they hold is read from the records: the question-set digest
(``questions_sha256``), the served model (``model``), and how the answers were asked (a
record's ``style``, and its ``packed`` pack size, when it carries them; otherwise the default
of ``toolnexus batch``, systemone at pack size 1, and the report says it assumed so). A run of
several models or question sets has no one provenance: the fit is refused with one line.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .accumulators import NoulStats, QuestionStats
from .aggregation import RunStats
from .figures import CalibrationFit, FittedMap
from .inputs import ReportInputError
from .levels import ScoreStats
from .ranked import RankedStats

if TYPE_CHECKING:
    from ..calibration import CalibrationFile

__all__ = ["DEFAULT_PACK_SIZE", "DEFAULT_STYLE", "fit_calibration", "save_calibration"]

#: How ``toolnexus batch`` asks when a record does not say: one state per System One request.
DEFAULT_STYLE = "systemone"
DEFAULT_PACK_SIZE = 1


def _one(seen: Iterable[Any], what: str, path: str) -> Any:
    """The one value a run holds for ``what``, refused with one line when it holds several."""
    values = sorted((v for v in seen if v is not None), key=str)
    if len(values) > 1:
        shown = ", ".join(str(v)[:16] for v in values[:4])
        raise ReportInputError(
            f"{path}: --fit-calibration: the run holds answers of {len(values)} {what}s "
            f"({shown}); a map holds for one: fit on a run of one {what}"
        )
    return values[0] if values else None


def _provenance(stats: RunStats) -> tuple[dict[str, Any], str | None]:
    sha = _one(stats.digests, "question set", stats.path)
    model = _one(stats.models, "model", stats.path)
    unsaid = {None} if stats.unasked else set()
    style = _one(stats.styles | unsaid, "style", stats.path)
    pack = _one(stats.packs | unsaid, "pack size", stats.path)
    if sha is None or model is None:
        missing = "questions_sha256" if sha is None else "model"
        raise ReportInputError(
            f"{stats.path}: --fit-calibration: the records carry no {missing}; fit on a run "
            "written by toolnexus batch"
        )
    assumed = []
    if style is None:
        style = DEFAULT_STYLE
        assumed.append(f"style {DEFAULT_STYLE}")
    if pack is None:
        pack = DEFAULT_PACK_SIZE
        assumed.append(f"pack size {DEFAULT_PACK_SIZE}")
    note = (
        f"the records do not say how they were asked: assumed {' and '.join(assumed)} "
        "(toolnexus batch's default)"
        if assumed
        else None
    )
    return {"questions_sha256": sha, "model": model, "style": style, "pack_size": pack}, note


def _fit_one(st: QuestionStats) -> Any:
    """The fit (``MapFit``) or the reason there is none (``Skipped``) for one key."""
    from ..calibration import Skipped, fit_noul, fit_temperature_map

    if isinstance(st, NoulStats):
        return fit_noul(list(st.y_true), list(st.y_prob))
    if not isinstance(st, RankedStats):
        return Skipped(f"a {st.type} question has no map")
    names = list(st.classes)
    options = sorted(st.options, key=int) if isinstance(st, ScoreStats) else list(st.options)
    rows = [
        {names[i]: p for i, p in enumerate(row) if names[i] in st.options}
        for row in st._finish().rows
    ]
    return fit_temperature_map([names[i] for i in st.y_true], rows, options)


def fit_calibration(stats: RunStats, path: str) -> tuple[CalibrationFit, list[str]]:
    """Fit every labelled key of ``stats``, write the calibration file at ``path``, and return
    the report's account of it with one line per skipped key."""
    from ..calibration import CalibrationFile, Provenance, QuestionMap, Skipped

    if not any(st.labelled for st in stats.questions.values()):
        # Issue 42 item 2: labels that match nothing fit nothing; an old file is kept.
        raise ReportInputError(
            f"--fit-calibration {path}: no answer of the run has a label (the labels match no "
            "record); nothing written"
        )
    provenance, note = _provenance(stats)
    where = Provenance(**provenance)
    maps: dict[str, QuestionMap] = {}
    skipped: dict[str, str] = {}
    shown: dict[str, FittedMap] = {}
    for key, st in stats.questions.items():
        measured = st.wire if st.wire is not None else st  # fit what the backend answers
        fit = _fit_one(measured)
        if isinstance(fit, Skipped):
            skipped[key] = fit.reason
            shown[key] = FittedMap(st.type, measured.labelled, None, None, None, None, None,
                                   fit.reason)  # fmt: skip
            continue
        maps[key] = QuestionMap(st.type, where, fit)
        shown[key] = FittedMap(st.type, fit.labelled, fit.kind, dict(fit.params),
                               dict(fit.before), dict(fit.after), fit.note, None)  # fmt: skip
    sha = save_calibration(path, CalibrationFile(maps, skipped))
    lines = [f"{path}: question {k!r} skipped: {reason}" for k, reason in skipped.items()]
    return CalibrationFit(path, sha, provenance, note, shown), lines


def save_calibration(path: str | Path, cal: CalibrationFile) -> str:
    """Write ``cal`` to ``path``, whole or not at all (``records.outputs.whole_file``, issue 42
    item 2: here, not in ``calibration``, which ``records`` imports); the sha256 of the bytes
    written."""
    import hashlib

    from ..calibration import dumps_calibration
    from ..records import whole_file

    data = dumps_calibration(cal)
    with whole_file(path, "wb") as f:
        f.write(data)
    return hashlib.sha256(data).hexdigest()
