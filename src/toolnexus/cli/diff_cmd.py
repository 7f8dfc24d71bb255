"""``toolnexus diff OLD NEW``: what an edit to a question-set file changes, question by question,
with the changes that silently break what was tuned on the old set called out.

OLD and NEW are files, or ``REV:path`` read with ``git show`` (``HEAD~1:questions/triage.yaml``)
when no file of that name exists. The comparison lives in ``setdiff``; the one renderer prints it.

Exit codes, as ``diff`` has them: 0 the canonical bytes are equal; 1 they differ; 2 error.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..core import EXIT_CONDITION
from .render.formats import DiffFormat


def diff_command(
    old: Annotated[
        str,
        typer.Argument(
            help="The question-set file before the edit, or REV:path from git.",
            metavar="OLD",
            show_default=False,
        ),
    ],
    new: Annotated[
        str,
        typer.Argument(
            help="The question-set file after the edit, or REV:path from git.",
            metavar="NEW",
            show_default=False,
        ),
    ],
    fmt: Annotated[
        DiffFormat,
        typer.Option("--format", help="text (words, for people) or json (for tools)."),
    ] = "text",
) -> None:
    """Compare two question sets: questions, instructions, options, levels, criteria, model;
    breaking changes called out; the canonical sha256 before and after; whether cached
    decisions and recordings still apply.

    Exit codes: 0 the canonical bytes are equal; 1 they differ; 2 usage or input error.
    """
    from .render import DiffResult, render
    from .setdiff import diff_sets, load_side

    result = diff_sets(load_side(old), load_side(new))
    render(DiffResult(result), fmt)
    if not result["equal"]:
        raise typer.Exit(EXIT_CONDITION)
