"""The ONE renderer: decisions as a Rich table, JSON, JSONL or CSV.

Commands build data (``decision_record``) and hand it here; nothing else in the CLI prints a
result. Results go to stdout; diagnostics are written by the error boundary and the commands'
warning sinks to stderr.

Flags are words first: ``near-uniform``, ``uncalibrated``, ``uncertain`` and ``invalid`` are
spelled out in every format, and a terminal additionally shows them in colour. ``NO_COLOR`` and
pipes get the words alone (Rich honours both).
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable, Mapping
from typing import IO, Any, Literal

from ..decision import Answer, ChoiceAnswer, Decision, ScoreAnswer
from ..questions import Question
from ..validation import DEFAULT_THRESHOLDS, threshold_band, validate_decision

__all__ = [
    "CSV_COLUMNS",
    "FLAGS",
    "OUTPUT_FORMATS",
    "RECORD_KEYS",
    "OutputFormat",
    "answer_record",
    "csv_rows",
    "decision_record",
    "default_format",
    "make_console",
    "print_table",
    "render_decision",
    "write_csv",
    "write_json",
    "write_jsonl",
]

OutputFormat = Literal["table", "json", "jsonl", "csv"]
OUTPUT_FORMATS: tuple[OutputFormat, ...] = ("table", "json", "jsonl", "csv")

#: Every flag, in the order they are listed; the names are also the ``--fail-on`` conditions.
FLAGS = ("near-uniform", "uncalibrated", "uncertain", "invalid")

#: The keys of a decision record, in order (a test pins them).
RECORD_KEYS = (
    "model",
    "calibrated",
    "cached",
    "usage",
    "thresholds",
    "answers",
    "flags",
    "invalid",
)

#: The CSV columns, one row per answer.
CSV_COLUMNS = (
    "key",
    "type",
    "answer",
    "probability",
    "confidence",
    "band",
    "near_uniform",
    "level",
    "label",
    "flags",
    "model",
    "calibrated",
    "cached",
)

_STYLES = {
    "near-uniform": "bold yellow",
    "uncalibrated": "bold magenta",
    "uncertain": "yellow",
    "invalid": "bold red",
}
_BAND_STYLES = {"yes": "green", "no": "cyan", "uncertain": "yellow"}


def default_format(stream: IO[str] | None = None) -> OutputFormat:
    """A table for a person at a terminal, JSON for a pipe or a file."""
    out = stream if stream is not None else sys.stdout
    try:
        return "table" if out.isatty() else "json"
    except (AttributeError, ValueError):
        return "json"


def _ordered_flags(flags: Iterable[str]) -> list[str]:
    present = set(flags)
    return [f for f in FLAGS if f in present]


def answer_record(
    answer: Answer,
    *,
    calibrated: bool,
    thresholds: Mapping[str, float],
    invalid: bool = False,
) -> dict[str, Any]:
    """One answer's wire fields, its derived fields and its flags."""
    out = answer.to_wire()
    flags: list[str] = []
    if isinstance(answer, ChoiceAnswer):
        out["near_uniform"] = answer.near_uniform
        if answer.near_uniform:
            flags.append("near-uniform")
    elif isinstance(answer, ScoreAnswer):
        out["level"] = answer.level
        out["label"] = answer.label
    band = threshold_band(answer, thresholds)
    out["band"] = band
    if band == "uncertain":
        flags.append("uncertain")
    if not calibrated:
        flags.append("uncalibrated")
    if invalid:
        flags.append("invalid")
    out["flags"] = _ordered_flags(flags)
    return out


def decision_record(
    decision: Decision,
    questions: Mapping[str, Question],
    thresholds: Mapping[str, float] | None = None,
    *,
    validated: bool = False,
) -> dict[str, Any]:
    """A decision as one JSON-ready record: the wire fields (model, calibrated, usage, each
    answer's fields) plus the derived ones (near_uniform, level, label, band), a ``flags`` list
    per answer and for the whole decision, and ``invalid``: the ``validate_decision`` message,
    or ``None``. Answers follow the question order, then any answer nobody asked for.

    ``usage.cost`` is ``None`` when the backend did not report one: absent, not zero.
    ``validated=True`` says the caller's evaluate already validated fail-closed (the batch
    stream does), so the check is not paid twice on the hot path.
    """
    t = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    problem = None if validated else validate_decision(questions, decision)
    bad_key = problem.key if problem is not None else None
    keys = [k for k in questions if k in decision.answers]
    keys += [k for k in decision.answers if k not in questions]
    answers = {
        k: answer_record(
            decision.answers[k],
            calibrated=decision.calibrated,
            thresholds=t,
            invalid=k == bad_key,
        )
        for k in keys
    }
    flags: set[str] = {f for a in answers.values() for f in a["flags"]}
    if not decision.calibrated:
        flags.add("uncalibrated")
    if problem is not None:
        flags.add("invalid")
    return {
        "model": decision.model,
        "calibrated": decision.calibrated,
        "cached": decision.cached,
        "usage": {
            "input_tokens": decision.usage.input_tokens,
            "output_tokens": decision.usage.output_tokens,
            "cost": decision.usage.cost,
        },
        "thresholds": t,
        "answers": answers,
        "flags": _ordered_flags(flags),
        "invalid": problem.message if problem is not None else None,
    }


# --- machine formats ----------------------------------------------------------------------


def write_json(value: Any, stream: IO[str]) -> None:
    """One indented JSON document (non-ASCII written raw, key order as built)."""
    stream.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def write_jsonl(records: Iterable[Mapping[str, Any]], stream: IO[str]) -> None:
    """One compact JSON record per line."""
    for record in records:
        stream.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")


def _num(value: Any) -> str:
    return "" if value is None else repr(value) if isinstance(value, float) else str(value)


def csv_rows(record: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row per answer of a decision record, keyed by ``CSV_COLUMNS``."""
    rows: list[dict[str, str]] = []
    for key, a in record["answers"].items():
        atype = a.get("type", "")
        answer: Any = None
        probability: Any = None
        if atype == "noul":
            answer = a.get("noul")
            probability = a.get("noul")
        elif atype == "choice":
            answer = a.get("choice")
            probability = a.get("probabilities", {}).get(answer)
        elif atype == "score":
            answer = a.get("score")
        rows.append(
            {
                "key": key,
                "type": atype,
                "answer": _num(answer),
                "probability": _num(probability),
                "confidence": _num(a.get("confidence")),
                "band": a.get("band", ""),
                "near_uniform": _num(a.get("near_uniform")).lower(),
                "level": _num(a.get("level")),
                "label": a.get("label", ""),
                "flags": " ".join(a.get("flags", [])),
                "model": record["model"],
                "calibrated": str(record["calibrated"]).lower(),
                "cached": str(record["cached"]).lower(),
            }
        )
    return rows


def write_csv(
    records: Iterable[Mapping[str, Any]],
    stream: IO[str],
    *,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """A header row, then one row per answer of every record. ``extra`` names leading columns
    and, per record, where to read them (``{"index": "index"}`` reads ``record["index"]``)."""
    lead = list(extra or {})
    writer = csv.DictWriter(stream, fieldnames=[*lead, *CSV_COLUMNS], lineterminator="\n")
    writer.writeheader()
    for record in records:
        front = {name: _num(record.get(str(src))) for name, src in (extra or {}).items()}
        for row in csv_rows(record):
            writer.writerow({**front, **row})


# --- the table ----------------------------------------------------------------------------


def _fixed(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return f"{value:.2f}"


def _answer_text(a: Mapping[str, Any]) -> str:
    atype = a.get("type")
    if atype == "noul":
        return _fixed(a.get("noul"))
    if atype == "choice":
        choice = a.get("choice")
        p = a.get("probabilities", {}).get(choice)
        return f"{choice} (p {_fixed(p)})"
    if atype == "score":
        return f"{_fixed(a.get('score'))}, level {a.get('level')}: {a.get('label')}"
    return "(raw answer)"


def _usage_text(record: Mapping[str, Any]) -> tuple[str, str]:
    usage = record["usage"]
    tokens = f"{usage['input_tokens']} in / {usage['output_tokens']} out"
    cost = usage.get("cost")
    return tokens, "not reported" if cost is None else f"${cost}"


def _styled_flags(flags: Iterable[str]) -> Any:
    from rich.text import Text

    text = Text()
    for i, flag in enumerate(flags):
        if i:
            text.append(", ")
        text.append(flag, style=_STYLES.get(flag, ""))
    return text


def make_console(stream: IO[str], width: int | None = None) -> Any:
    """A Rich console on ``stream``. Colour only for a terminal without ``NO_COLOR``; the
    words are always there."""
    import os

    from rich.console import Console

    # Rich alone keeps bold under NO_COLOR (the convention only forbids colour); we promise
    # plain words, so NO_COLOR turns styling off entirely.
    plain = bool(os.environ.get("NO_COLOR"))
    return Console(
        file=stream,
        width=width,
        highlight=False,
        emoji=False,
        soft_wrap=False,
        color_system=None if plain else "auto",
    )


def print_table(
    record: Mapping[str, Any],
    questions: Mapping[str, Question],
    console: Any,
    *,
    title: str | None = None,
) -> None:
    """The header line and one row per question (plus any answer nobody asked for)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    tokens, cost = _usage_text(record)
    header = Text()
    if title:
        header.append(title + "\n", style="bold")
    header.append(f"model {record['model']}  calibrated ")
    if record["calibrated"]:
        header.append("yes")
    else:
        header.append("no (uncalibrated)", style=_STYLES["uncalibrated"])
    header.append(f"  cached {'yes' if record['cached'] else 'no'}\n")
    header.append(f"tokens {tokens}  cost {cost}")
    console.print(header)

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("key", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("answer", ratio=1)
    table.add_column("confidence", justify="right", no_wrap=True)
    table.add_column("band", no_wrap=True)
    table.add_column("flags", no_wrap=True)
    answers: Mapping[str, Any] = record["answers"]
    for key in [*questions, *(k for k in answers if k not in questions)]:
        a = answers.get(key)
        if a is None:
            table.add_row(
                key, questions[key].type, "(no answer)", "-", "-", _styled_flags(["invalid"])
            )
            continue
        band = str(a.get("band", ""))
        table.add_row(
            key,
            str(a.get("type", "")),
            _answer_text(a),
            _fixed(a.get("confidence")),
            Text(band, style=_BAND_STYLES.get(band, "")),
            # "uncertain" is already the band column; the rest stand out here.
            _styled_flags(f for f in a.get("flags", []) if f != "uncertain"),
        )
    console.print(table)
    if record.get("invalid"):
        console.print(Text(f"invalid: {record['invalid']}", style=_STYLES["invalid"]))


def render_decision(
    record: Mapping[str, Any],
    questions: Mapping[str, Question],
    fmt: OutputFormat,
    stream: IO[str] | None = None,
    *,
    width: int | None = None,
) -> None:
    """Print one decision record in ``fmt`` to ``stream`` (stdout by default)."""
    out = stream if stream is not None else sys.stdout
    if fmt == "table":
        console = make_console(out, width)
        with console.capture() as captured:
            print_table(record, questions, console)
        # Rich pads every cell to its column width; trailing blanks are noise in a pipe, a
        # diff or a golden file.
        out.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))
    elif fmt == "json":
        write_json(record, out)
    elif fmt == "jsonl":
        write_jsonl([record], out)
    elif fmt == "csv":
        write_csv([record], out)
    else:  # the option's choices make this unreachable from the command line
        raise ValueError(f"unknown output format {fmt!r}")
    out.flush()
