"""AStree specialisation search and Def. 6.2 errors against brute force."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from lakemeta.agreesets import AStree, fd_errors, masks_from_indices
from lakemeta.agreesets.bitmasks import mask_to_indices
from lakemeta.reference.dynast import DynASt
from tests.unit.agreesets.brute import as_batch, random_rows, violating_pairs


@pytest.mark.parametrize("n_columns", [4, 70])
def test_specialisations_equal_filter(n_columns: int) -> None:
    rng = np.random.default_rng(n_columns)
    state = DynASt([f"c{i}" for i in range(n_columns)])
    state.apply_batch(inserted=as_batch(random_rows(rng, 40, n_columns, n_values=2), n_columns))
    masks = state.multiset.entry_masks()
    held = state.multiset.entry_counts() > 0
    sets = [frozenset(mask_to_indices(m)) for m in masks]
    for _ in range(60):
        required = frozenset(rng.choice(n_columns, int(rng.integers(0, 4)), replace=False).tolist())
        excluded = frozenset(rng.choice(n_columns, int(rng.integers(0, 3)), replace=False).tolist())
        found = state.astree.specialisations(
            masks_from_indices([required], n_columns)[0], masks_from_indices([excluded], n_columns)[0]
        )
        expected = [e for e, s in enumerate(sets) if held[e] and required <= s and not (s & excluded)]
        assert found.tolist() == expected


def test_fd_errors_equal_violating_pairs() -> None:
    """Def. 6.2 from the multiset's counts == Def. 6.1 by comparing every pair, also for X = {}."""
    rng = np.random.default_rng(11)
    n_columns = 4
    for trial in range(5):
        rows = random_rows(rng, int(rng.integers(2, 30)), n_columns, null_rate=0.0)
        state = DynASt([f"c{i}" for i in range(n_columns)])
        result = state.apply_batch(inserted=as_batch(rows, n_columns))
        state.apply_batch(deleted_positions=result.inserted_positions[:1])
        rows = rows[1:]
        pairs = len(rows) * (len(rows) - 1) // 2
        tree = AStree(state.multiset)  # built afresh from the multiset, like the maintained one
        for rhs in range(n_columns):
            lhs_sets = [
                frozenset(c)
                for k in range(n_columns)
                for c in combinations([a for a in range(n_columns) if a != rhs], k)
            ]
            lhs = masks_from_indices(lhs_sets, n_columns)
            for index in (state.astree, tree):
                errors = fd_errors(index, len(rows), lhs, rhs)
                expected = [violating_pairs(rows, x, rhs) / pairs if pairs else 0.0 for x in lhs_sets]
                assert np.allclose(errors, expected), (trial, rhs)
