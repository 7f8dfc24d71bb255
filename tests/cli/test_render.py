"""The one renderer (issue 4, "Output and exit codes"): "The table shows, per question: key, type,
the answer (noul probability; choice and its probability; score with its level label), confidence,
the threshold_band, and flags — near-uniform and uncalibrated stand out in colour and in words
(NO_COLOR and pipes get words). The header shows the served model, calibrated, cached, tokens,
and cost ("not reported" when absent). JSON records carry the decision's wire fields plus the
derived ones (near_uniform, level, label, band) and a flags list; a test pins the keys."

Golden files live in tests/golden/; regenerate with UPDATE_GOLDEN=1 after a deliberate change.
"""

from __future__ import annotations

import csv
import io
import json
import os
from typing import Any

import pytest

from paths import REPO, TESTS
from toolnexus import (
    ChoiceAnswer,
    ChoiceQuestion,
    Decision,
    NoulAnswer,
    NoulQuestion,
    ScoreQuestion,
    parse_decision,
)
from toolnexus.cli.render import (
    RECORD_KEYS,
    decision_record,
    default_format,
    render_decision,
)
from toolnexus.core.questions import normalize_questions
from toolnexus.records import DecisionRecord
from toolnexus.run.output import csv_columns, encode_line
from toolnexus.styles.recordings import read_recording

GOLDEN = TESTS / "golden"
MIXED = next(
    p for p in (REPO / "recordings").glob("*.json") if "action" in read_recording(p).questions
)

DESK = ChoiceQuestion(
    "Which desk owns this?",
    {
        "billing": "own it here when money moved: a duplicate charge, a refund owed",
        "shipping": "own it here when a physical parcel is late or damaged",
        "technical": "own it here when the product itself errors",
    },
)
FLAT_QS: dict[str, Any] = {
    "desk": DESK,
    "refund": NoulQuestion("Is a refund requested?"),
    "urgency": ScoreQuestion("How urgent?", ["routine", "today", "now"]),
}


def flat_decision() -> Decision:
    """Seed 000 example 3: a flat distribution, confident-looking, from an uncalibrated backend,
    with no cost reported."""
    body = {
        "model": "gpt-4o-mini",
        "calibrated": False,
        "answers": {
            "desk": {
                "type": "choice",
                "choice": "billing",
                "confidence": 0.95,
                "probabilities": {"billing": 0.34, "shipping": 0.33, "technical": 0.33},
            },
            "refund": {"type": "noul", "noul": 0.5},
            "urgency": {
                "type": "score",
                "score": 1.21,
                "confidence": 0.71,
                "legend": {"0": "routine", "1": "today", "2": "now"},
                "probabilities": {"0": 0.1, "1": 0.59, "2": 0.31},
            },
        },
        "usage": {"input_tokens": 516, "output_tokens": 72},
    }
    return parse_decision(body, FLAT_QS)


def mixed() -> tuple[Decision, dict[str, Any]]:
    r = read_recording(MIXED)
    qs = normalize_questions(r.questions)
    return parse_decision(r.response, qs), qs


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"differs from {path}"


def rendered(record: dict[str, Any], qs: Any, fmt: Any, width: int = 100) -> str:
    out = io.StringIO()
    render_decision(record, qs, fmt, out, width=width)
    return out.getvalue()


# --- the record -------------------------------------------------------------------------


def test_record_keys_are_pinned() -> None:
    record = decision_record(flat_decision(), FLAT_QS)
    assert (
        tuple(record)
        == RECORD_KEYS
        == (
            "model",
            "calibrated",
            "cached",
            "packed",
            "position",
            "reasked",
            "usage",
            "thresholds",
            "answers",
            "flags",
            "invalid",
        )
    )
    assert tuple(record["usage"]) == ("input_tokens", "output_tokens", "cost")
    a = record["answers"]
    assert tuple(a["desk"]) == (
        "type",
        "choice",
        "probabilities",
        "confidence",
        "near_uniform",
        "band",
        "thresholds",  # issue 42 item 6: the cut-points that decided the band
        "flags",
    )
    assert tuple(a["refund"]) == ("type", "noul", "band", "thresholds", "flags")
    assert tuple(a["urgency"]) == (
        "type",
        "score",
        "legend",
        "probabilities",
        "confidence",
        "level",
        "label",
        "band",
        "thresholds",
        "flags",
    )


def test_record_derives_flags_from_the_decision() -> None:
    record = decision_record(flat_decision(), FLAT_QS)
    assert record["usage"]["cost"] is None, "absent cost is None, never 0"
    assert record["answers"]["desk"]["near_uniform"] is True
    assert record["answers"]["desk"]["flags"] == ["near-uniform", "uncalibrated"]
    assert record["answers"]["refund"]["flags"] == ["uncalibrated", "uncertain"]
    assert record["answers"]["urgency"]["level"] == 1
    assert record["answers"]["urgency"]["label"] == "today"
    assert record["flags"] == ["near-uniform", "uncalibrated", "uncertain"]
    assert record["invalid"] is None


@pytest.mark.parametrize(
    ("thresholds", "band"),
    [
        pytest.param(None, "uncertain", id="default-0.8"),
        pytest.param({"yes": 0.5}, "yes", id="yes-inclusive-at-0.5"),
        pytest.param({"no": 0.5}, "no", id="no-inclusive-at-0.5"),
    ],
)
def test_record_bands_follow_thresholds(thresholds: Any, band: str) -> None:
    record = decision_record(flat_decision(), FLAT_QS, thresholds)
    assert record["answers"]["refund"]["band"] == band


def test_an_invalid_decision_is_flagged_with_its_message() -> None:
    d = Decision(
        model="m",
        answers={"desk": ChoiceAnswer("nope", {"nope": 1.0}, 1.0), "extra": NoulAnswer(0.1)},
    )
    qs = {"desk": DESK, "refund": NoulQuestion("r?")}
    record = decision_record(d, qs)
    assert record["invalid"] == 'classifier: invalid decision: missing answer "refund"'
    assert "invalid" in record["flags"]
    assert list(record["answers"]) == ["desk", "extra"], "question order, then the unasked"
    table = rendered(record, qs, "table")
    assert "(no answer)" in table and "invalid: classifier: invalid decision" in table


# --- goldens ----------------------------------------------------------------------------


def test_golden_json_record_of_the_mixed_capture() -> None:
    d, qs = mixed()
    check_golden("mixed-batch.record.json", rendered(decision_record(d, qs), qs, "json"))


def test_golden_json_record_of_a_flat_uncalibrated_decision() -> None:
    check_golden(
        "flat-uncalibrated.record.json",
        rendered(decision_record(flat_decision(), FLAT_QS), FLAT_QS, "json"),
    )


def test_golden_table_of_the_mixed_capture() -> None:
    d, qs = mixed()
    check_golden("mixed-batch.table.txt", rendered(decision_record(d, qs), qs, "table"))


def test_golden_table_of_a_flat_uncalibrated_decision() -> None:
    text = rendered(decision_record(flat_decision(), FLAT_QS), FLAT_QS, "table")
    check_golden("flat-uncalibrated.table.txt", text)
    assert "\x1b[" not in text, "a pipe gets words, no colour"
    assert "near-uniform" in text and "uncalibrated" in text
    assert "cost not reported" in text


# --- colour ------------------------------------------------------------------------------


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("no_color", "want_colour"),
    [pytest.param(None, True, id="terminal-colour"), pytest.param("1", False, id="NO_COLOR")],
)
def test_flags_stand_out_in_colour_and_words(
    monkeypatch: pytest.MonkeyPatch, no_color: str | None, want_colour: bool
) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    out = _Tty()
    render_decision(decision_record(flat_decision(), FLAT_QS), FLAT_QS, "table", out, width=100)
    text = out.getvalue()
    assert ("\x1b[" in text) is want_colour
    assert "near-uniform" in text and "uncalibrated" in text


def test_default_format_is_table_only_for_a_terminal() -> None:
    assert default_format(_Tty()) == "table"
    assert default_format(io.StringIO()) == "json"


# --- machine formats ---------------------------------------------------------------------


def test_jsonl_is_one_compact_record_per_line() -> None:
    d, qs = mixed()
    text = rendered(decision_record(d, qs), qs, "jsonl")
    assert text.count("\n") == 1
    assert json.loads(text) == decision_record(d, qs)


def test_csv_is_the_one_shape_batch_writes() -> None:
    """Issue 8 §3: "One CSV shape for eval --format csv and batch --format csv (the same
    columns for the same answer, flags written the same way)"."""
    d, qs = mixed()
    record = decision_record(d, qs)
    text = rendered(record, qs, "csv")
    header, row = text.splitlines()
    batch_columns = csv_columns(record)
    assert header.split(",") == batch_columns
    line = encode_line(DecisionRecord.from_body("", None, record), "csv", batch_columns)
    assert row + "\n" == line.decode("utf-8")
    (cells,) = csv.DictReader(io.StringIO(text))
    assert cells["id"] == "" and cells["error.code"] == ""
    assert cells["answers.team.choice"] == "billing"
    assert json.loads(cells["answers.team.probabilities"])["billing"] == 1.0
    assert cells["answers.urgency.level"] == "1" and cells["answers.urgency.label"]
    assert cells["answers.technical.band"] == "uncertain"
    # Flags are words separated by spaces, in every flags column.
    assert cells["answers.technical.flags"].split(" ") == record["answers"]["technical"]["flags"]
    assert cells["flags"].split(" ") == record["flags"]
