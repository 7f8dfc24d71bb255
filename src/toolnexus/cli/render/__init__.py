"""The ONE renderer: every command builds a result object and hands it to :func:`render`.

:data:`RENDERERS` is the table: result type -> ``--format`` value -> the function that prints
it (check-jsonschema's reporter table keyed by ``--output-format`` is the model). The
``--format`` choices of each command are the ``Literal`` types in ``formats.py``, which a test
holds equal to the keys here. Results go to stdout; diagnostics, progress and warnings go to
stderr and are not written here.

Modules: ``records`` builds decision records (pure), ``decision`` prints them (Rich table,
JSON, JSONL, CSV; the CSV shape is ``records.codec``'s, the one ``batch`` writes too),
``formats`` names the choices.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from ...core import Question, printable, printable_data
from . import lint
from .decision import (
    default_format,
    make_console,
    print_table,
    render_decision,
    write_json,
    write_jsonl,
)
from .formats import (
    BatchFormat,
    CanonicalView,
    DecisionFormat,
    DiffFormat,
    LintFormat,
    ReportFormat,
    StatsFormat,
)
from .lint import LintResult, RulesResult

if TYPE_CHECKING:
    from ...core import FLAGS
    from ...records import RECORD_KEYS, DecisionRecord, answer_record, decision_record
    from ...report import Report

#: Names this package re-exports from the records room (``FLAGS`` from the core, where it is
#: defined), imported when first asked for: ``canonical`` and ``check-criteria`` import this
#: package and never build a record, so the records (and their codecs) stay out of their start-up.
_FROM_RECORDS = frozenset({"RECORD_KEYS", "answer_record", "decision_record"})


def __getattr__(name: str) -> Any:
    if name == "FLAGS":
        from ...core import FLAGS

        return FLAGS
    if name in _FROM_RECORDS:
        from ... import records

        return getattr(records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FLAGS",
    "RECORD_KEYS",
    "RENDERERS",
    "BatchFormat",
    "CacheStatsResult",
    "CanonicalResult",
    "CanonicalView",
    "DecisionFormat",
    "DecisionResult",
    "DiffFormat",
    "DiffResult",
    "LintFormat",
    "LintResult",
    "ReportFormat",
    "ReportResult",
    "RulesResult",
    "SchemaResult",
    "StatsFormat",
    "answer_record",
    "decision_record",
    "default_format",
    "make_console",
    "print_table",
    "render",
    "render_decision",
    "write_json",
    "write_jsonl",
]


@dataclass(frozen=True)
class DecisionResult:
    """``eval``: one decision record, the questions it answers (the table's row order) and the
    id its CSV row carries (the state's source)."""

    #: the typed record (``records.decision.record``), or a decision's JSON object
    record: DecisionRecord | Mapping[str, Any]
    questions: Mapping[str, Question]
    item_id: str = ""
    width: int | None = None


@dataclass(frozen=True)
class CacheStatsResult:
    """``cache stats``: where the cache is, its entry counts and its size on disk."""

    path: str
    entries: int = 0
    expired: int = 0
    bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "entries": self.entries,
            "expired": self.expired,
            "bytes": self.bytes,
        }


@dataclass(frozen=True)
class CanonicalResult:
    """``canonical``: the canonical bytes and their sha256 digest."""

    body: bytes
    sha256: str = field(default="")


@dataclass(frozen=True)
class SchemaResult:
    """``schema``: a JSON Schema as shipped (question-set files, or the report's JSON)."""

    text: str


@dataclass(frozen=True)
class ReportResult:
    """``report``: the typed report (``report.schema.json`` describes its JSON); ``width`` for
    the table."""

    report: Report
    width: int | None = None


@dataclass(frozen=True)
class DiffResult:
    """``diff``: what changed between two question sets (the object ``--format json`` prints)."""

    data: Mapping[str, Any]


Renderer = Callable[[Any, IO[str]], None]


def _decision(fmt: DecisionFormat) -> Renderer:
    def write(result: DecisionResult, out: IO[str]) -> None:
        render_decision(
            result.record, result.questions, fmt, out, width=result.width, item_id=result.item_id
        )

    return write


def _stats_text(result: CacheStatsResult, out: IO[str]) -> None:
    out.write(
        f"path     {printable(str(result.path))}\nentries  {result.entries}\n"
        f"expired  {result.expired}\nbytes    {result.bytes}\n"
    )


def _stats_json(result: CacheStatsResult, out: IO[str]) -> None:
    out.write(json.dumps(result.to_dict()) + "\n")


def _canonical_raw(result: CanonicalResult, out: IO[str]) -> None:
    # The bytes exactly: nothing added, not even a newline.
    out.flush()
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(result.body.decode("utf-8"))
    else:
        buffer.write(result.body)
        buffer.flush()


def _canonical_sha256(result: CanonicalResult, out: IO[str]) -> None:
    out.write(result.sha256 + "\n")


def _canonical_pretty(result: CanonicalResult, out: IO[str]) -> None:
    out.write(json.dumps(json.loads(result.body), indent=2, ensure_ascii=False) + "\n")


def _schema(result: SchemaResult, out: IO[str]) -> None:
    out.write(result.text if result.text.endswith("\n") else result.text + "\n")


def _plain(stream: IO[str]) -> bool:
    import os

    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return bool(os.environ.get("NO_COLOR")) or not tty


def _report_table(result: ReportResult, out: IO[str]) -> None:
    from .report import print_report

    console = make_console(out, result.width)
    with console.capture() as captured:
        print_report(result.report, console, plain=_plain(out))
    # Rich pads cells to their column width; trailing blanks are noise in a pipe or a golden.
    out.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def _report_json(result: ReportResult, out: IO[str]) -> None:
    write_json(result.report.to_json(), out)


def _report_html(result: ReportResult, out: IO[str]) -> None:
    # The chart library is imported here, on this path only (fast start for the rest).
    from ...report import report_html

    out.write(report_html(result.report))


def _diff_text(result: DiffResult, out: IO[str]) -> None:
    from .diff import write_diff

    write_diff(printable_data(result.data), out)


def _diff_json(result: DiffResult, out: IO[str]) -> None:
    write_json(result.data, out)


#: result type -> format -> renderer. The keys of each inner table are the ``--format``
#: choices (``formats.py``); ``batch`` streams its records through ``run.output`` with the
#: same record and CSV code (``BatchFormat`` lists its formats).
RENDERERS: dict[type, Mapping[str, Renderer]] = {
    DecisionResult: {
        "table": _decision("table"),
        "json": _decision("json"),
        "jsonl": _decision("jsonl"),
        "csv": _decision("csv"),
    },
    LintResult: {"text": lint.lint_text, "json": lint.lint_json, "sarif": lint.lint_sarif},
    RulesResult: {"text": lint.rules_text, "json": lint.rules_json, "sarif": lint.rules_sarif},
    CacheStatsResult: {"text": _stats_text, "json": _stats_json},
    SchemaResult: {"json": _schema},
    CanonicalResult: {
        "raw": _canonical_raw,
        "sha256": _canonical_sha256,
        "pretty": _canonical_pretty,
    },
    ReportResult: {"table": _report_table, "json": _report_json, "html": _report_html},
    DiffResult: {"text": _diff_text, "json": _diff_json},
}


def render(result: object, fmt: str, stream: IO[str] | None = None) -> None:
    """Print ``result`` in ``fmt`` to ``stream`` (stdout by default)."""
    out = stream if stream is not None else sys.stdout
    table = RENDERERS.get(type(result))
    if table is None or fmt not in table:
        # The --format choices make this unreachable from the command line.
        raise ValueError(f"no renderer for {type(result).__name__} as {fmt!r}")
    table[fmt](result, out)
    out.flush()
