"""One decision of each built-in type, the fixture the typed-record tests share
(tests/records/test_records_typed.py, tests/records/test_records_readback.py): the questions and
the reply body that answers them."""

from __future__ import annotations

from typing import Any

from toolnexus import ChoiceQuestion, NoulQuestion, ScoreQuestion

QS: dict[str, Any] = {
    "holds": NoulQuestion("Does it hold?"),
    "pick": ChoiceQuestion("Which?", {"a": "A", "b": "B"}),
    "grade": ScoreQuestion("How good?", ["bad", "ok", "good"]),
}
BODY = {
    "model": "m",
    "answers": {
        "holds": {"type": "noul", "noul": 0.9},
        "pick": {
            "type": "choice",
            "choice": "a",
            "probabilities": {"a": 0.7, "b": 0.3},
            "confidence": 0.7,
        },
        "grade": {
            "type": "score",
            "score": 2.0,
            "legend": {"0": "bad", "1": "ok", "2": "good"},
            "probabilities": {"0": 0.1, "1": 0.1, "2": 0.8},
            "confidence": 0.8,
        },
    },
    "usage": {"input_tokens": 5, "output_tokens": 2},
}
