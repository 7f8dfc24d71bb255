"""The ``--format`` values of every command, as ``Literal`` types: Typer turns each into a
``Choice``, so ``--help`` lists the values and a wrong one is rejected the same way (one usage
line, exit 2) by every command. Each is exactly the keys of its renderer table in
``render.RENDERERS`` (a test checks), so a format cannot be offered without a renderer."""

from __future__ import annotations

from typing import Literal

__all__ = [
    "BatchFormat",
    "CanonicalView",
    "DecisionFormat",
    "DiffFormat",
    "LintFormat",
    "ReportFormat",
    "StatsFormat",
]

#: ``eval``: a Rich table on a terminal, JSON otherwise.
DecisionFormat = Literal["table", "json", "jsonl", "csv"]
#: ``batch``: streamed one record per line (``run.output``), or one Parquet file
#: (``run.parquet``).
BatchFormat = Literal["jsonl", "csv", "json", "parquet"]
#: ``check-criteria``: ``path:line:col: CODE message`` lines, one JSON array, or a SARIF 2.1.0
#: log (code-scanning annotations).
LintFormat = Literal["text", "json", "sarif"]
#: ``cache stats``.
StatsFormat = Literal["text", "json"]
#: ``canonical``: the bytes themselves, their sha256, or indented JSON (chosen by flags).
CanonicalView = Literal["raw", "sha256", "pretty"]
#: ``report``: Rich tables with in-terminal charts, the report object, or one HTML file.
ReportFormat = Literal["table", "json", "html"]
#: ``diff``: one line per change in words, or the diff object.
DiffFormat = Literal["text", "json"]
