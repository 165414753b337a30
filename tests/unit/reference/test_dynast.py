"""Incremental state equals recomputation on the final snapshot, for random batch sequences (Property 1)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.agreesets import AgreeSetMultiset, masks_from_indices
from lakemeta.reference.dynast import DynASt
from tests.unit.agreesets.brute import Row, as_batch, evidence_multiset

VALUES = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))


def expected_multiset(rows: list[Row], n_columns: int, null_equals_null: bool) -> AgreeSetMultiset:
    counts = evidence_multiset(rows, null_equals_null)
    sets = list(counts)
    return AgreeSetMultiset.from_arrays(
        n_columns, masks_from_indices(sets, n_columns), np.array([counts[s] for s in sets], dtype=np.int64)
    )


@st.composite
def batch_sequences(draw: st.DrawFn) -> tuple[int, list[tuple[list[int], list[Row]]]]:
    n_columns = draw(st.sampled_from([1, 3, 5, 66]))
    row = st.tuples(*[VALUES] * n_columns)
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        delete_ranks = draw(st.lists(st.integers(0, 1000), max_size=8))
        inserted = draw(st.lists(row, max_size=12))
        steps.append((delete_ranks, inserted))
    return n_columns, steps


@settings(max_examples=40, deadline=None)
@given(batch_sequences(), st.booleans(), st.booleans(), st.integers(1, 7))
def test_incremental_equals_recomputation(
    sequence: tuple, null_equals_null: bool, factorize: bool, chunk_size: int
) -> None:
    n_columns, steps = sequence
    state = DynASt(
        [f"c{i}" for i in range(n_columns)],
        null_equals_null=null_equals_null,
        factorize=factorize,
        chunk_size=chunk_size,
    )
    snapshot: dict[int, Row] = {}
    for delete_ranks, inserted in steps:
        live = sorted(snapshot)
        doomed = sorted({live[r % len(live)] for r in delete_ranks}) if live else []
        for position in doomed:
            del snapshot[position]
        result = state.apply_batch(deleted_positions=doomed, inserted=as_batch(inserted, n_columns))
        snapshot.update(zip(result.inserted_positions.tolist(), inserted, strict=True))
        assert state.n_rows == len(snapshot)
        assert state.multiset == expected_multiset(list(snapshot.values()), n_columns, null_equals_null)
    assert state.recompute() == state.multiset
    held = state.multiset.entry_counts() > 0
    assert np.array_equal(
        state.astree.flagged[state.astree.entry_node[np.flatnonzero(held)]],
        np.ones(int(held.sum()), dtype=bool),
    )
    assert not state.astree.flagged[state.astree.entry_node[np.flatnonzero(~held)]].any()


def test_delete_everything_then_reinsert() -> None:
    rows = [("x", "1"), ("x", "1"), ("y", "1"), ("x", "2")] * 3
    state = DynASt(["a", "b"], chunk_size=5)
    first = state.apply_batch(inserted=as_batch(rows, 2))
    full = state.multiset.as_dict()
    assert state.multiset == expected_multiset(rows, 2, True)
    state.apply_batch(deleted_positions=first.inserted_positions)
    assert state.n_rows == 0 and len(state.multiset) == 0 and state.multiset.total() == 0
    again = state.apply_batch(inserted=as_batch(rows, 2))
    assert sorted(again.inserted_positions.tolist()) == sorted(first.inserted_positions.tolist())
    assert state.multiset.as_dict() == full


def test_update_is_delete_plus_insert_and_lookup_by_value() -> None:
    rows = [("x", None), ("y", "1"), ("x", None), ("z", "2")]
    state = DynASt(["a", "b"])
    state.apply_batch(inserted=as_batch(rows, 2))
    doomed = state.positions_of(as_batch([("x", None), ("x", None), ("q", "1")], 2))
    assert doomed[2] == -1 and len(set(doomed[:2].tolist())) == 2
    replacement = [("y", "2"), ("y", "2")]
    state.apply_batch(deleted_positions=doomed[:2], inserted=as_batch(replacement, 2))
    assert state.multiset == expected_multiset([rows[1], rows[3], *replacement], 2, True)
    assert 0 < state.products.performed <= state.products.unfactorised
