"""``toolnexus filter QUESTIONS [INPUT...]``: grep by meaning, for pipes (issue 36 item 3).

Its options are the fields of ``filter_options.FilterFlags`` (and the backend's of
``options.BackendSettings``); those it shares with ``batch`` take ``batch``'s own option
definitions (``batch_options.BatchFlags``), so they read and check the same. The run is
``filter_run.run_filter`` (imported inside the command: registering ``filter`` costs only typer).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from .filter_options import FilterFlags
from .options import BackendSettings, backend_options, options_from

__all__ = ["filter_command"]


@backend_options
@options_from(FilterFlags, "filter_values")
def filter_command(
    questions: Annotated[
        Path,
        typer.Argument(help="Question-set YAML file.", metavar="QUESTIONS", show_default=False),
    ],
    inputs: Annotated[
        list[str] | None,
        typer.Argument(
            help="Text files, one state per line (JSONL with --state-field); - or none for stdin.",
            metavar="[INPUT]...",
            show_default=False,
        ),
    ] = None,
    *,
    filter_values: Mapping[str, Any],
    backend_values: Mapping[str, Any],
) -> None:
    """Keep the lines that pass the --where conditions: written unchanged, in input order.

    Lines are read as they come and evaluated packed (--pack, default auto) under the run's
    scheduler; a part-filled pack is sent after a short delay, so a pipe that stays open gets
    its answers. A line whose evaluation fails is dropped and said on stderr with its line
    number (--on-error keep writes it). --dry-run reads everything and prints the estimate;
    --max-cost / --max-tokens / --max-requests stop sending at the cap.

    Exit codes, as grep's: 0 a line passed; 1 none passed; 2 usage or input error; then, after
    writing what passed: 3 some lines failed at the backend; 4 the run stopped (a failure every
    request would repeat, like a wrong key); 5 a spend cap reached.
    """
    from .filter_run import FilterConfig, run_filter

    cfg = FilterConfig(inputs=list(inputs or ["-"]), **filter_values)
    code = run_filter(cfg, questions, BackendSettings(**backend_values))
    if code:
        raise typer.Exit(code)
