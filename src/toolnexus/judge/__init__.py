"""SPEC §8B's judge layer over a classifier: ask, gate, Tape, and the assertion helpers."""
