"""``toolnexus check-criteria``: offline lint for question-set files (and the pre-commit hook).

Findings go to stdout, one per line, ``path:line:col: CODE message``; ``--format json`` prints
one JSON array of ``{path, line, col, code, message}``. A file that cannot be read is a
diagnostic on stderr and makes the exit code 2. Never imports httpx: it runs on every commit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .lintcodes import CODES
from .render.formats import LintFormat

_CODE_TABLE = "\n".join(f"  {code}  {text}" for code, text in CODES.items())


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
    from .offline import check_criteria as run

    raise typer.Exit(run(files, strict=strict, fmt=output))
