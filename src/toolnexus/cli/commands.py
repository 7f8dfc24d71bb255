"""Registers every command on the app. Each command module imports its heavy dependencies
inside the command function, so registering them costs only typer."""

from __future__ import annotations

# Command modules add themselves to `app` on import. Keep this list sorted.
from . import (  # noqa: F401
    batch_cmd,
    cache_cmd,
    canonical_cmd,
    check_cmd,
    eval_cmd,
    schema_cmd,
)
