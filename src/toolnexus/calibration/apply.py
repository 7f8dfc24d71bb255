"""Applying a calibration file to a decision: ``create_classifier(calibration=FILE)`` (issue 24
§5). Pure (no numpy): the maps of :mod:`.maps`, the transforms of :mod:`.transforms`.

The wire's answers are never changed: the recalibrated ones go beside them in
``Decision.recalibrated``. A map fitted for another question set, model, style or pack size is
refused with one line naming both (:class:`.maps.CalibrationMismatch`; seed 000: a threshold
tuned against one backend does not transfer to another).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ..core import Answer, Decision
from .maps import LoadedCalibration, Provenance

__all__ = ["asked_style", "recalibrate_decision"]


def asked_style(style: str) -> str:
    """The way of asking a map holds for: a replay (``static``) answers what System One
    answered when it was recorded."""
    return "systemone" if style == "static" else style


def recalibrate_decision(
    loaded: LoadedCalibration, decision: Decision, questions_sha256: str, style: str
) -> Decision:
    """``decision`` with ``recalibrated`` answers for every key the file maps (raises
    ``CalibrationMismatch`` for a map fitted for other answers)."""
    asked = Provenance(questions_sha256, decision.model, asked_style(style), decision.packed)
    out: dict[str, Answer] = {}
    for key, answer in decision.answers.items():
        qmap = loaded.map_for(key, asked)
        if qmap is None or qmap.type != answer.type:
            continue
        wire: Mapping[str, object] = answer.to_wire()
        out[key] = dataclasses.replace(answer, **qmap.recalibrated(wire))
    if not out:
        return decision
    return dataclasses.replace(decision, recalibrated=out, calibration_sha256=loaded.sha256)
