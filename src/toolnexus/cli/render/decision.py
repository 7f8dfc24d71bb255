"""A decision result printed as a Rich table, JSON, JSONL or CSV (the ``eval`` formats).

Flags are words first: every name of ``validation.FLAGS`` (``near-uniform``, ``uncalibrated``,
``uncertain``, the consistency flags, ``invalid``) is spelled out in every format, and a
terminal additionally shows them in colour. ``NO_COLOR`` and
pipes get the words alone (Rich honours both).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from typing import IO, TYPE_CHECKING, Any

from ...core import Question, printable, printable_data, registry
from .formats import DecisionFormat

if TYPE_CHECKING:
    # The records are imported by the functions that print one: ``canonical`` and
    # ``check-criteria`` import this package and never print a record (fast start).
    from ...records import DecisionRecord

_STYLES = {
    "near-uniform": "bold yellow",
    "uncalibrated": "bold magenta",
    "uncertain": "yellow",
    # An answer whose numbers disagree with each other (issue 33): not invalid, not to trust.
    "choice-not-top": "red",
    "score-not-mean": "red",
    "confidence-off-formula": "red",
    "usage-missing": "magenta",
    "invalid": "bold red",
}
_BAND_STYLES = {"yes": "green", "no": "cyan", "uncertain": "yellow"}


def default_format(stream: IO[str] | None = None) -> DecisionFormat:
    """A table for a person at a terminal, JSON for a pipe or a file."""
    out = stream if stream is not None else sys.stdout
    try:
        return "table" if out.isatty() else "json"
    except (AttributeError, ValueError):
        return "json"


# --- machine formats ----------------------------------------------------------------------


def write_json(value: Any, stream: IO[str]) -> None:
    """One indented JSON document (non-ASCII written raw, key order as built)."""
    stream.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def write_jsonl(records: Iterable[Mapping[str, Any]], stream: IO[str]) -> None:
    """One compact JSON record per line."""
    for record in records:
        stream.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")


# --- the table ----------------------------------------------------------------------------


def _fixed(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "-"
    return f"{value:.2f}"


def _answer_text(a: registry.AnswerRecord) -> str:
    # Each type writes its own cell (qtypes/); a type nobody registered reads "(raw answer)".
    return registry.of(a.type).text(a)


def _usage_text(record: DecisionRecord) -> tuple[str, str]:
    usage = record.usage
    tokens = f"{usage.input_tokens} in / {usage.output_tokens} out"
    cost = usage.cost
    return tokens, "not reported" if cost is None else f"${cost}"


def _typed(record: DecisionRecord | Mapping[str, Any], item_id: str = "") -> DecisionRecord:
    """The typed record a renderer reads: ``record`` itself, or a decision's JSON object (what
    ``decision_record`` returns) read as one."""
    from ...records import DecisionRecord

    if isinstance(record, DecisionRecord):
        return record
    return DecisionRecord.from_body(item_id, None, record)


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
        # Every string printed is data (question keys, option names, level labels, ids, model
        # names): "[red]" or "[link=...]" in one must print as written, never style the
        # terminal or open a hyperlink, and "[/tmp]" must not end in a MarkupError. Styles
        # come only from Text objects and style= arguments.
        markup=False,
        soft_wrap=False,
        color_system=None if plain else "auto",
    )


def print_table(
    record: DecisionRecord | Mapping[str, Any],
    questions: Mapping[str, Question],
    console: Any,
    *,
    title: str | None = None,
) -> None:
    """The header line and one row per question (plus any answer nobody asked for), read from
    the typed record's attributes (each answer as its type's answer record)."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    record = _typed(record)
    tokens, cost = _usage_text(record)
    header = Text()
    if title:
        header.append(title + "\n", style="bold")
    header.append(f"model {record.model}  calibrated ")
    if record.calibrated:
        header.append("yes")
    else:
        header.append("no (uncalibrated)", style=_STYLES["uncalibrated"])
    header.append(f"  cached {'yes' if record.cached else 'no'}\n")
    header.append(f"tokens {tokens}  cost {cost}")
    console.print(header)

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("key", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("answer", ratio=1)
    table.add_column("confidence", justify="right", no_wrap=True)
    table.add_column("band", no_wrap=True)
    table.add_column("flags", no_wrap=True)
    answers = record.answers
    for key in [*questions, *(k for k in answers if k not in questions)]:
        found = answers.get(key)
        if found is None:
            table.add_row(
                key, questions[key].type, "(no answer)", "-", "-", _styled_flags(["invalid"])
            )
            continue
        a = registry.answer_record(found)
        band = a.band
        table.add_row(
            key,
            a.type,
            _answer_text(a),
            _fixed(a.confidence),
            Text(band, style=_BAND_STYLES.get(band, "")),
            # "uncertain" is already the band column; the rest stand out here.
            _styled_flags(f for f in a.flags if f != "uncertain"),
        )
    console.print(table)
    if record.invalid:
        console.print(Text(f"invalid: {record.invalid}", style=_STYLES["invalid"]))
    gates = record.gates
    if gates is not None:
        for name, g in gates.items():
            # A gate that escalated declined to decide: shown as such, never as an action.
            said = "escalated: " if g.get("escalated") else ""
            line = Text(f"gate {name}: {g.get('action')} ({said}{g.get('reason')})")
            if g.get("escalated"):
                line.stylize(_STYLES["uncertain"])
            console.print(line)


def _table(
    record: DecisionRecord, questions: Mapping[str, Question], out: IO[str], width: int | None
) -> None:
    from ...records import record_body

    console = make_console(out, width)
    shown = {printable(k): q for k, q in questions.items()}
    with console.capture() as captured:
        print_table(printable_data(record_body(record)), shown, console)
    # Rich pads every cell to its column width; trailing blanks are noise in a pipe, a diff or
    # a golden file.
    out.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def _csv(record: Mapping[str, Any], out: IO[str], item_id: str) -> None:
    # The same header and row code as `batch --format csv`: one row per state.
    from ...records import (
        csv_header,
        csv_line,
    )

    row = {"id": item_id, **record}
    header = csv_header(row)
    out.write(csv_line(header, header))
    out.write(csv_line(header, row))


def render_decision(
    record: DecisionRecord | Mapping[str, Any],
    questions: Mapping[str, Question],
    fmt: DecisionFormat,
    stream: IO[str] | None = None,
    *,
    width: int | None = None,
    item_id: str = "",
) -> None:
    """Print one decision record in ``fmt`` to ``stream`` (stdout by default). ``item_id`` is
    the CSV ``id`` cell (``eval`` puts the state's source there). ``record`` is the typed
    record, or a decision's JSON object (``decision_record``), printed as given."""
    out = stream if stream is not None else sys.stdout
    if fmt == "table":
        _table(_typed(record), questions, out, width)
        out.flush()
        return
    from ...records import DecisionRecord, record_body

    if isinstance(record, DecisionRecord):
        record = record_body(record)
    if fmt == "json":
        write_json(record, out)
    elif fmt == "jsonl":
        write_jsonl([record], out)
    elif fmt == "csv":
        _csv(record, out, item_id)
    else:  # the option's choices make this unreachable from the command line
        raise ValueError(f"unknown output format {fmt!r}")
    out.flush()
