"""``toolnexus schema``: print the JSON Schema of question-set files.

The schema ships inside the package, so an editor can be pointed at the output
(``toolnexus schema > question-set.schema.json``) or at the file in a checkout with
``# yaml-language-server: $schema=<path>`` at the top of a question file.
"""

from __future__ import annotations

SCHEMA_RESOURCE = "question-set.schema.json"


def schema_text() -> str:
    """The schema as shipped, byte for byte."""
    from importlib.resources import files

    return (files("toolnexus") / SCHEMA_RESOURCE).read_text(encoding="utf-8")


def schema() -> None:
    """Print the JSON Schema (draft 2020-12) for question-set YAML files."""
    from .render import SchemaResult, render

    render(SchemaResult(schema_text()), "json")
