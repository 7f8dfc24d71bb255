"""``toolnexus check-criteria``: offline lint for question-set files (and the pre-commit hook).

Findings go to stdout, one per line, ``path:line:col: CODE message``; ``--format json`` prints
one JSON array of ``{path, line, col, code, message}``. A file that cannot be read is a
diagnostic on stderr and makes the exit code 2. Never imports httpx: it runs on every commit.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer

from .errors import EXIT_CONDITION, EXIT_OK, EXIT_USAGE
from .lintcodes import CODES
from .render.formats import LintFormat

_YAML_SUFFIXES = (".yaml", ".yml")

_CODE_TABLE = "\n".join(f"  {code}  {text}" for code, text in CODES.items())


def _expand(paths: Iterable[Path]) -> list[Path]:
    """Files as given; a directory stands for every *.yaml / *.yml file under it, sorted."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(
                sorted(p for p in path.rglob("*") if p.suffix in _YAML_SUFFIXES and p.is_file())
            )
        else:
            out.append(path)
    return out


#: ``check-criteria --help``; registered in ``app.py``.
HELP = (
    "Lint question-set YAML files offline: schema and shape errors, limits, duplicate keys, "
    "degenerate choice criteria, duplicate score levels, empty descriptions.\n\n"
    "A directory means every .yaml/.yml file under it. YAML files that are not question "
    "sets (no top-level 'questions' mapping) are skipped unless --strict or unless they "
    "declare question-set.schema.json in a yaml-language-server modeline.\n\n"
    "Exit codes: 0 clean; 1 findings; 2 usage error or unreadable file.\n\n"
    "\b\nCodes (stable):\n" + _CODE_TABLE
)


def check_criteria(
    files: Annotated[
        list[Path],
        typer.Argument(help="Question files or directories.", metavar="FILE", show_default=False),
    ],
    strict: Annotated[
        bool,
        typer.Option(
            "--strict", help="Report YAML files that are not question sets instead of skipping."
        ),
    ] = False,
    output: Annotated[LintFormat, typer.Option("--format", help="Findings format.")] = "text",
) -> None:
    from .questionfile import Finding, QuestionFileError, lint_file
    from .render import LintResult, render

    findings: list[Finding] = []
    unreadable = False
    for path in _expand(files):
        try:
            lint = lint_file(path, strict=strict)
        except QuestionFileError as e:
            sys.stderr.write(f"toolnexus: {e.message}\n")
            unreadable = True
            continue
        findings.extend(lint.findings)
    render(LintResult(tuple(findings)), output)
    if unreadable:
        raise typer.Exit(EXIT_USAGE)
    raise typer.Exit(EXIT_CONDITION if findings else EXIT_OK)
