"""``toolnexus schema [question-set|report]``: print a JSON Schema that ships in the package.

``question-set`` (the default) describes question-set files, so an editor can be pointed at the
output (``toolnexus schema > question-set.schema.json``) or at the file in a checkout with
``# yaml-language-server: $schema=<path>`` at the top of a question file. ``report`` describes
what ``toolnexus report --format json`` prints.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .errors import fail

SCHEMA_RESOURCE = "question-set.schema.json"
#: Each printable schema: (package, resource).
SCHEMAS = {
    "question-set": ("toolnexus", SCHEMA_RESOURCE),
    "report": ("toolnexus.report", "report.schema.json"),
}


def schema_text(which: str = "question-set") -> str:
    """The schema as shipped, byte for byte."""
    from importlib.resources import files

    package, resource = SCHEMAS[which]
    return (files(package) / resource).read_text(encoding="utf-8")


def schema(
    which: Annotated[
        str,
        typer.Argument(
            help="question-set (question files, the default) or report (report --format json).",
            metavar="[question-set|report]",
        ),
    ] = "question-set",
) -> None:
    """Print a JSON Schema (draft 2020-12): question-set files, or the JSON of `report`."""
    if which not in SCHEMAS:
        fail(f"schema takes question-set or report, got {which!r}")
    from .render import SchemaResult, render

    render(SchemaResult(schema_text(which)), "json")
