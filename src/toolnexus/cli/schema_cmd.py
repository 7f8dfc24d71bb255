"""``toolnexus schema``: print the JSON Schema of question-set files (placeholder)."""

from __future__ import annotations

from .app import app


@app.command("schema")
def schema() -> None:
    """Print the JSON Schema for question-set YAML files."""
    from importlib.resources import files

    text = (files("toolnexus") / "question-set.schema.json").read_text(encoding="utf-8")
    print(text, end="" if text.endswith("\n") else "\n")
