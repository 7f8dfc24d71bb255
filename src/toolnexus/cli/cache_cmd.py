"""``toolnexus cache stats|clear``: the persistent decision cache that ``batch --cache`` uses.

Where it lives: ``--cache-dir DIR``, else ``TOOLNEXUS_CACHE_DIR``, else platformdirs' user cache
directory for ``toolnexus``; the file is ``decisions.sqlite3`` in it. The cache holds decision
bodies keyed by sha256 digests: never a credential.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from .errors import CliError
from .render.formats import StatsFormat

#: The SQLite file inside the cache directory.
CACHE_FILE = "decisions.sqlite3"

CacheDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        envvar="TOOLNEXUS_CACHE_DIR",
        help="Directory of the decision cache (default: the user cache dir for toolnexus).",
        metavar="DIR",
    ),
]

cache_app = typer.Typer(
    name="cache",
    help="Inspect or clear the persistent decision cache (batch --cache).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def cache_path(cache_dir: Path | None) -> Path:
    """The cache file: ``cache_dir`` (flag or env) or the platform's user cache directory."""
    if cache_dir is None:
        import platformdirs

        cache_dir = Path(platformdirs.user_cache_dir("toolnexus"))
    if cache_dir.exists() and not cache_dir.is_dir():
        raise CliError(f"--cache-dir {cache_dir}: exists and is not a directory")
    for parent in cache_dir.parents:
        if parent.exists() and not parent.is_dir():
            raise CliError(f"--cache-dir {cache_dir}: {parent} is a file, not a directory")
    return cache_dir / CACHE_FILE


@cache_app.command("stats")
def stats(
    cache_dir: CacheDirOpt = None,
    fmt: Annotated[StatsFormat, typer.Option("--format", help="Output format.")] = "text",
) -> None:
    """Print where the cache is, its entry counts and its size on disk."""
    from ..cache import SqliteCache
    from .render import CacheStatsResult, render

    path = cache_path(cache_dir)
    result = CacheStatsResult(str(path))
    if path.exists():
        with SqliteCache(path) as cache:
            stats = cache.stats().to_dict()
        result = CacheStatsResult(
            str(stats["path"]), int(stats["entries"]), int(stats["expired"]), int(stats["bytes"])
        )
    render(result, fmt)


@cache_app.command("clear")
def clear(cache_dir: CacheDirOpt = None) -> None:
    """Delete every cached decision."""
    from ..cache import SqliteCache
    from ..core import CacheError

    path = cache_path(cache_dir)
    removed = 0
    if path.exists():
        try:
            with SqliteCache(path) as cache:
                removed = cache.clear()
        except CacheError as e:
            if not e.damaged:
                raise
            # What the damaged-cache message tells the user to do: the file goes, and the
            # cache starts empty; nothing in it could be read anyway.
            for suffix in ("", "-wal", "-shm"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)
            sys.stderr.write(f"toolnexus: cache: removed the damaged cache file {path}\n")
            return
    sys.stderr.write(f"toolnexus: cache: removed {removed} entries from {path}\n")
