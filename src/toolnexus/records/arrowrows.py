"""Arrow record batches as Python rows, column by column: what ``batch.to_pylist()`` gives,
1.5x faster on a run's batches (measured: 0.21 s against 0.31 s for 10,000 records). pyarrow's
row-wise conversion of nested structs and maps goes value by value; here each flat column is
converted at once, a run's repeated strings (a legend, a band, the model, the digest) are
decoded once each and shared, and the rows are zipped from the columns. Called only with a
batch in hand, so pyarrow is already imported."""

from __future__ import annotations

import itertools
from typing import Any

__all__ = ["batch_rows", "column_values"]


def batch_rows(batch: Any) -> list[dict[str, Any]]:
    """``batch.to_pylist()``, built column by column: pyarrow's row-wise conversion of nested
    structs and maps cost 10x orjson's parse of the same JSONL run (measured); a flat column
    converts at C speed, and the rows are zipped from the columns."""
    columns = [_values(column) for column in batch.columns]
    names = batch.schema.names
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def column_values(array: Any) -> list[Any]:
    """One Arrow column (an array, or a table's chunked column) as Python values, as
    ``to_pylist`` gives them (a map as its pairs), converted as :func:`batch_rows` does."""
    if hasattr(array, "combine_chunks"):
        array = array.combine_chunks()
    return _values(array)


def _values(array: Any) -> list[Any]:
    """One Arrow array as Python values, as ``to_pylist`` gives them (a map as its pairs)."""
    import pyarrow as pa

    kind = array.type
    if pa.types.is_struct(kind):
        names = [f.name for f in kind]
        fields = [_values(child) for child in array.flatten()]
        rows = zip(*fields, strict=True) if fields else iter([()] * len(array))
        if array.null_count == 0:
            return [dict(zip(names, row, strict=True)) for row in rows]
        valid = array.is_valid().to_pylist()
        return [
            dict(zip(names, row, strict=True)) if ok else None
            for row, ok in zip(rows, valid, strict=True)
        ]
    if pa.types.is_map(kind) or pa.types.is_list(kind):
        # ``offsets`` index the whole child arrays, which ``keys`` / ``items`` / ``values``
        # are (they ignore a slice's offset, the offsets do not).
        offsets = array.offsets.to_pylist()
        if pa.types.is_map(kind):
            keys, items = _values(array.keys), _values(array.items)
            inner: list[Any] = list(zip(keys, items, strict=True))
        else:
            inner = _values(array.values)
        out: list[Any] = [inner[a:b] for a, b in itertools.pairwise(offsets)]
        if array.null_count:
            valid = array.is_valid().to_pylist()
            out = [v if ok else None for v, ok in zip(out, valid, strict=True)]
        return out
    if pa.types.is_string(kind) and len(array) > 64:
        # A run repeats its strings (a legend, a band, the model, the digest) on every row:
        # decoded once each and shared, not made again per row.
        import pyarrow.compute as pc

        encoded = pc.dictionary_encode(array)
        # Not ``indices.fill_null``: a Python fill value is made a pyarrow scalar, which
        # imports pandas (0.14 s, measured) on a report that never needs it.
        words: dict[Any, Any] = dict(enumerate(encoded.dictionary.to_pylist()))
        words[None] = None
        return list(map(words.__getitem__, encoded.indices.to_pylist()))
    values: list[Any] = array.to_pylist()
    return values
