"""``toolnexus check-criteria``: offline lint for question-set files (and the pre-commit hook).

Findings go to stdout, one per line, ``path:line:col: CODE message``; ``--format json`` prints
one JSON array of ``{path, line, col, code, severity, message}``; ``--format sarif`` a SARIF
2.1.0 log. A file that cannot be read is a diagnostic on stderr and makes the exit code 2.
Never imports httpx: it runs on every commit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from ..questionfile import RULES
from .render.formats import LintFormat

_CODE_TABLE = "\n".join(f"  {r.code}  {r.summary}" for r in RULES)


#: ``check-criteria --help``; registered in ``app.py``.
HELP = (
    "Lint question-set YAML files offline: schema and shape errors, limits, duplicate keys, "
    "degenerate criteria, and how well-formed questions still fail (no 'none of these' "
    "option, token budgets, YAML comments that cut text, generation requests, ...).\n\n"
    "A directory means every .yaml/.yml file under it. YAML files without a top-level "
    "'questions' key are skipped (a named file with one line on stderr) unless --strict, "
    "unless they declare question-set.schema.json in a yaml-language-server modeline, or "
    "unless a top-level key is a typo of questions, gates or model.\n\n"
    "Silence one finding with '# toolnexus: ignore[TNxxx] reason' on the line of its key (a "
    "question's key line covers the whole question). Defaults come from "
    "[tool.toolnexus.check-criteria] (select, ignore, level, strict) in the nearest "
    "pyproject.toml; flags win.\n\n"
    "Exit codes: 0 clean; 1 findings; 2 usage error or unreadable file. Only findings at or "
    "above warning fail; info findings (shown with --level info) never do.\n\n"
    "\b\nCodes (stable; --explain CODE says why and the fix):\n" + _CODE_TABLE
)


def check_criteria(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Question files or directories.", metavar="FILE", show_default=False),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict", help="Report YAML files that are not question sets instead of skipping."
        ),
    ] = False,
    output: Annotated[LintFormat, typer.Option("--format", help="Findings format.")] = "text",
    select: Annotated[
        list[str] | None,
        typer.Option("--select", help="Only these codes or prefixes (TN05, TN050; repeatable)."),
    ] = None,
    ignore: Annotated[
        list[str] | None,
        typer.Option("--ignore", help="Drop these codes or prefixes (repeatable)."),
    ] = None,
    level: Annotated[
        Literal["info", "warning", "error"] | None,
        typer.Option("--level", help="Least severity shown [default: warning]."),
    ] = None,
    state: Annotated[
        str | None,
        typer.Option("--state", help="A sample state: check the whole request's token budget."),
    ] = None,
    as_: Annotated[
        Literal["text", "json", "yaml"] | None,
        typer.Option("--as", help="How to read --state (default: by its suffix)."),
    ] = None,
    list_rules: Annotated[
        bool, typer.Option("--list-rules", help="Print every rule and exit.")
    ] = False,
    explain: Annotated[
        str | None, typer.Option("--explain", help="Why a rule exists, and its fix.")
    ] = None,
) -> None:
    from .offline import check_criteria as run

    raise typer.Exit(
        run(
            files or [],
            strict=strict,
            fmt=output,
            select=select or [],
            ignore=ignore or [],
            level=level,
            state=state,
            as_=as_,
            list_rules=list_rules,
            explain=explain,
        )
    )
