"""The driver's IND check on kept value hashes equals set containment, and the hashes round-trip through
the binary rows of ``state/ind_columns``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakemeta.arrays import binary_rows, uint64_rows
from lakemeta.inds.containment import contained


def random_sets(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """Sorted distinct hashes from a small universe (so that inclusions happen), extremes included."""
    universe = np.array([0, 1, 2, 3, 2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1, *range(10, 20)], np.uint64)
    return [np.sort(rng.choice(universe, rng.integers(0, 7), replace=False)) for _ in range(n)]


def test_contained_equals_set_inclusion_for_every_pair() -> None:
    rng = np.random.default_rng(3)
    sets = random_sets(rng, 40)
    bounds = np.cumsum([0, *(len(s) for s in sets)])
    rows = binary_rows(np.concatenate(sets), bounds, np.ones(len(sets), bool))
    offsets, hashes, kept = uint64_rows(rows)
    assert kept.all()
    deps, refs = (pair.ravel() for pair in np.meshgrid(np.arange(40), np.arange(40)))
    expected = [set(sets[d].tolist()) <= set(sets[r].tolist()) for d, r in zip(deps, refs, strict=True)]
    assert contained(deps, refs, offsets, hashes).tolist() == expected
    assert 40 < sum(expected) < 1600  # both answers occur, beyond the diagonal


def test_hash_rows_round_trip_with_nulls_and_slices() -> None:
    rng = np.random.default_rng(5)
    sets = random_sets(rng, 9)
    kept = np.array([True, False, True, True, False, True, True, True, False])
    bounds = np.cumsum([0, *(len(s) for s in sets)])
    rows = binary_rows(np.concatenate(sets), bounds, kept)
    assert rows.null_count == 3
    for start in (0, 2):
        part = rows.slice(start)
        offsets, hashes, stored = uint64_rows(pa.chunked_array([part]))
        assert stored.tolist() == kept[start:].tolist()
        for i, is_kept in enumerate(kept[start:]):
            got = hashes[offsets[i] : offsets[i + 1]]
            assert got.tolist() == (sets[start + i].tolist() if is_kept else [])
