"""Data is printed as written: Rich markup in a question key, an option name, a level label, an
id or a model name never styles the terminal, never opens a hyperlink, and never ends in a
MarkupError (non-negotiable 3: no traceback for an input error; and a hostile server must not
decorate the terminal). Before, "[red]" as an option name printed nothing but colour, a
"[link=...]" key wrote an OSC 8 hyperlink, and a closing tag such as "[/tmp]" raised."""

from __future__ import annotations

import io
import json
from pathlib import Path

from clirun import run_cli
from toolnexus.cli.render.decision import make_console, print_table

KEY = "[bold red]k[/bold red]"
OPTION = "[link=http://e.vil]x[/link]"
LABEL = "writes to [/tmp] only"


def _record() -> dict[str, object]:
    return {
        "model": "jev-[blink]1[/blink]",
        "calibrated": True,
        "cached": False,
        "usage": {"input_tokens": 1, "output_tokens": 1, "cost": None},
        "answers": {
            KEY: {
                "type": "choice",
                "choice": OPTION,
                "probabilities": {OPTION: 0.9, "plain": 0.1},
                "confidence": 0.9,
                "band": "yes",
                "flags": [],
            },
            "risk": {
                "type": "score",
                "score": 1.0,
                "level": 1,
                "label": LABEL,
                "legend": {"0": "safe", "1": LABEL},
                "probabilities": {"0": 0.2, "1": 0.8},
                "confidence": 0.8,
                "band": "yes",
                "flags": [],
            },
        },
        "flags": [],
        "invalid": None,
    }


def test_the_decision_table_prints_data_as_written() -> None:
    out = io.StringIO()
    console = make_console(out, width=200)
    console.force_terminal = True  # styles on: markup would be applied if it were parsed
    print_table(_record(), {}, console)
    text = out.getvalue()
    for data in (KEY, OPTION, LABEL, "jev-[blink]1[/blink]"):
        assert data in text, data
    assert "\x1b]8;" not in text  # no hyperlink escape


def test_the_report_table_prints_data_as_written(tmp_path: Path) -> None:
    record = {k: v for k, v in _record().items() if k != "cached"}
    record["id"] = "[i]t0[/i]"
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps(record) + "\n", encoding="utf-8")
    ran = run_cli("report", str(run), "--format", "table")
    assert ran.code == 0, ran.stderr
    for data in (KEY, OPTION, LABEL, "jev-[blink]1[/blink]"):
        assert data in ran.out, data


# --- and control characters are shown, never sent to the terminal ---------------------------

ESC = "\x1b]52;c;ZXZpbA==\x07\x1b[2J"  # write the clipboard, clear the screen
BIDI = "\u202egnp.exe"  # reads as "exe.png"
SHOWN = ("\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J", "\\u202egnp.exe")


def _no_controls(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text


def test_controls_in_a_decision_are_shown_as_escapes() -> None:
    from toolnexus.cli.render.decision import render_decision

    record = _record()
    answers = record["answers"]
    assert isinstance(answers, dict)
    answers[ESC] = answers.pop(KEY)
    answers[ESC]["choice"] = BIDI
    answers[ESC]["probabilities"] = {BIDI: 0.9, "plain": 0.1}
    out = io.StringIO()
    render_decision(record, {}, "table", out, width=200)
    _no_controls(out.getvalue())
    for shown in SHOWN:
        assert shown in out.getvalue()


def test_controls_in_a_report_and_in_an_error_line_are_shown(tmp_path: Path) -> None:
    record = {k: v for k, v in _record().items() if k != "cached"}
    record["id"] = "t0"
    record["model"] = ESC
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps(record) + "\n", encoding="utf-8")
    ran = run_cli("report", str(run), "--format", "table")
    assert ran.code == 0, ran.stderr
    _no_controls(ran.out)
    assert SHOWN[0] in ran.out
    missing = run_cli("report", str(tmp_path / f"{ESC}.jsonl"))
    assert missing.code == 2
    _no_controls(missing.stderr)
    assert SHOWN[0] in missing.stderr


def test_controls_in_a_question_file_are_shown_by_diff_and_check_criteria(tmp_path: Path) -> None:
    old = tmp_path / "old.yaml"
    new = tmp_path / "new.yaml"
    old.write_text(
        "questions:\n  kind:\n    type: choice\n    instructions: Which?\n"
        "    criteria:\n      a: first\n      b: second\n",
        encoding="utf-8",
    )
    new.write_text(
        "questions:\n  kind:\n    type: choice\n    instructions: Which?\n"
        f'    criteria:\n      a: first\n      "{BIDI}": "x\\u001b[2J"\n',
        encoding="utf-8",
    )
    ran = run_cli("diff", str(old), str(new))
    assert ran.code == 1, ran.stderr
    _no_controls(ran.out)
    assert SHOWN[1] in ran.out
    linted = run_cli("check-criteria", str(new))
    _no_controls(linted.out + linted.stderr)
