"""Ids for ``toolnexus batch``: duplicates and the question-set hash.

- :class:`SeenIds` remembers every id of a run to find duplicates (``7`` and ``"7"`` are one id:
  ids compare by their text). It holds an 8-byte digest and an 8-byte location per id in one
  flat table (16 bytes a slot, at most half full), not a Python object per id, so 100,000
  states stay within the memory benchmark's 1.2x of 10,000.
- :func:`question_set_sha256` is what every record carries as ``questions_sha256``, so that
  ``--resume`` can refuse an output written for another question set.

CSV ids are escaped losslessly by the one record codec (``records.codec.escape_id``).
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core import Question

__all__ = ["SeenIds", "question_set_sha256"]


def _digest(key: str) -> int:
    raw = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(raw, "big") | 1  # 0 marks an empty slot


class SeenIds:
    """Open addressing over an ``array('Q')`` of (digest, location) pairs."""

    def __init__(self, capacity: int = 1024) -> None:
        self._cap = capacity
        self._table = array("Q", bytes(16 * capacity))
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, key: str, location: int) -> int | None:
        """Remember ``key`` at ``location`` (a non-negative int below 2**64); when ``key`` was
        already seen, return the FIRST location instead (and remember nothing)."""
        found = self._put(_digest(key), location)
        if found is None:
            self._count += 1
            if self._count * 2 > self._cap:
                self._grow()
        return found

    def _put(self, digest: int, location: int) -> int | None:
        table, mask = self._table, self._cap - 1
        i = digest & mask
        while True:
            slot = table[2 * i]
            if slot == 0:
                table[2 * i] = digest
                table[2 * i + 1] = location
                return None
            if slot == digest:
                return table[2 * i + 1]
            i = (i + 1) & mask

    def _grow(self) -> None:
        old = self._table
        self._cap *= 2
        self._table = array("Q", bytes(16 * self._cap))
        for j in range(0, len(old), 2):
            if old[j]:
                self._put(old[j], old[j + 1])


def question_set_sha256(questions: Mapping[str, Question]) -> str:
    """The question-set digest, :func:`toolnexus.core.canonical.questions_sha256`."""
    from ..core import questions_sha256

    return questions_sha256(questions)
