"""Which states a ``toolnexus batch`` run evaluates: its shard, minus what ``--resume`` already
has, plus the errors ``--retry-errors`` re-runs; a repeated id becomes a ``duplicate_id`` error."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from ..core import DUPLICATE_ID
from .config import RunConfig
from .ids import SeenIds
from .items import InputItem
from .resume import PriorOutput
from .summary import RunSummary

__all__ = ["select", "shard_of"]


def shard_of(key: str, count: int) -> int:
    """The 1-based shard of an id: sha256 of its UTF-8 text, so every machine and every Python
    agrees (``hash()`` is salted per process)."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def _where(cfg: RunConfig, source: int, line: int, key: str) -> str:
    """``INPUT:line`` for a JSONL/CSV item, the path (its id) for a state file."""
    return f"{cfg.inputs[source]}:{line}" if line else key


def select(
    items: Iterator[InputItem],
    cfg: RunConfig,
    prior: PriorOutput | None,
    summary: RunSummary,
    retried: set[str],
) -> Iterator[InputItem]:
    """The items this run evaluates: its shard, minus what ``--resume`` already has; with
    ``--retry-errors``, the ids whose last record is an error (noted in ``retried``).

    A second item with an id already seen (``7`` and ``"7"`` are one id) becomes a
    ``duplicate_id`` error item naming where the first was read; it is never evaluated."""
    seen = SeenIds()
    for item in items:
        key = item.key
        if cfg.shard is not None and shard_of(key, cfg.shard[1]) != cfg.shard[0]:
            summary.other_shards += 1
            continue
        first = seen.add(key, (item.source << 40) | item.line)
        if first is not None:
            if prior is not None and key in prior:
                summary.skipped += 1  # reported by the run that first met it
                continue
            here, there = (
                _where(cfg, item.source, item.line, key),
                _where(cfg, first >> 40, first & ((1 << 40) - 1), key),
            )
            yield InputItem(
                item.id,
                error=(
                    DUPLICATE_ID.code,
                    f"{here}: id {item.id!r} was already read at {there}; give each state its "
                    'own id (7 and "7" are one id)',
                ),
            )
            continue
        if prior is not None:
            if key in prior.errors and cfg.retry_errors:
                retried.add(key)
            elif key in prior:
                summary.skipped += 1
                continue
            elif not cfg.resume:
                summary.not_in_output += 1  # --retry-errors alone: never "already in" it
                continue
        yield item
