"""The two-run comparison, streamed (report/compare.py): "the first run leaves, per question, a
Snapshot (per id its category and its probabilities ...); the second run is compared id by id
as it is read (Delta) and keeps nothing per id but the current top 10". Checked against the
definitions computed by brute force over whole maps."""

from __future__ import annotations

import heapq
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolnexus.report import compare
from toolnexus.report.compare import TOP_CHANGED, Delta, Snapshot, total_variation

OPTIONS = ("a", "b", "c", "d")
probability = st.integers(0, 100).map(lambda i: i / 100)
probs = st.dictionaries(st.sampled_from(OPTIONS), probability, min_size=1, max_size=4)


def _brute_tv(a: dict[str, float], b: dict[str, float]) -> float:
    """The module's definition: one shared key (a noul's {"yes": p}) is |p2 - p1|, else half
    the L1 distance over the union of options."""
    if len(a) == 1 and a.keys() == b.keys():
        return abs(sum(b.values()) - sum(a.values()))
    return 0.5 * sum(abs(b.get(k, 0.0) - a.get(k, 0.0)) for k in set(a) | set(b))


@given(probs, probs)
def test_total_variation_is_half_the_l1_distance_over_the_union(
    a: dict[str, float], b: dict[str, float]
) -> None:
    assert total_variation(a, b) == pytest.approx(_brute_tv(a, b), abs=1e-12)


@given(probs, probs)
def test_a_snapshot_row_measures_as_its_map_would(a: dict[str, float], b: dict[str, float]) -> None:
    snapshot = Snapshot()
    snapshot.add("x", None, a)
    assert snapshot.distance(0, b) == pytest.approx(_brute_tv(a, b), abs=1e-12)
    assert snapshot.distance(0, a) == 0.0


def test_a_noul_snapshot_is_the_distance_of_two_probabilities() -> None:
    snapshot = Snapshot()
    snapshot.add("x", "yes", {"yes": 0.9})
    assert snapshot.distance(0, {"yes": 0.25}) == pytest.approx(0.65)


answers = st.lists(
    st.tuples(st.sampled_from(OPTIONS), probs, st.sampled_from(OPTIONS), probs),
    min_size=0,
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(answers, st.integers(0, 60), st.integers(1, 4))
def test_streamed_comparison_equals_the_whole_maps_one(
    rows: list[Any], cut: int, chunks: int
) -> None:
    """Counted in chunks, pruned to the top 10 as it goes, merged: the same numbers as the
    comparison of two whole id -> answer maps (ids only in one run included)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compare, "_PRUNE_AT", 12)  # prune often
        _check_streamed(rows, cut, chunks)


def _check_streamed(rows: list[Any], cut: int, chunks: int) -> None:
    before = {f"i{n}": (c1, p1) for n, (c1, p1, _, _) in enumerate(rows)}
    after = {f"i{n}": (c2, p2) for n, (_, _, c2, p2) in enumerate(rows) if n >= cut // 2}
    after["only-after"] = ("a", {"a": 1.0})
    snapshots = [Snapshot() for _ in range(chunks)]
    for n, (sid, (cat, p)) in enumerate(before.items()):
        snapshots[n * chunks // max(len(before), 1)].add(sid, cat, p)
    snapshot = snapshots[0]
    for other in snapshots[1:]:
        snapshot.merge(other)
    deltas = [Delta(snapshot) for _ in range(chunks)]
    for n, (sid, (cat, p)) in enumerate(after.items()):
        deltas[n * chunks // len(after)].add(sid, cat, p)
    delta = deltas[0]
    for other in deltas[1:]:
        delta.merge(other)

    common = [sid for sid in after if sid in before]
    # total_variation (checked against the brute force above) sums in the same order as a
    # snapshot row: the same floats, so near-ties rank the same way on both sides.
    distances = {sid: total_variation(before[sid][1], after[sid][1]) for sid in common}
    for sid in common:
        assert distances[sid] == pytest.approx(_brute_tv(before[sid][1], after[sid][1]), abs=1e-12)
    assert len(snapshot) == len(before)
    assert (delta.seen, delta.compared) == (len(after), len(common))
    assert delta.changed == sum(1 for sid in common if before[sid][0] != after[sid][0])
    assert delta.distance_sum == pytest.approx(sum(distances.values()), abs=1e-9)
    moved = [
        (distances[sid], sid)
        for sid in common
        if distances[sid] > 0 or before[sid][0] != after[sid][0]
    ]
    want = heapq.nsmallest(TOP_CHANGED, moved, key=lambda m: (-m[0], m[1]))
    got = [(d, sid) for d, sid, _, _ in delta.top()]
    assert [sid for _, sid in got] == [sid for _, sid in want]
    assert [d for d, _ in got] == pytest.approx([d for d, _ in want], abs=1e-12)
