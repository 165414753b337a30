"""Value-set tallies (``values.hashes``) against Python's counting."""

from __future__ import annotations

from collections import Counter

import numpy as np

from lakemeta.values.hashes import shared_count, tally


def test_a_tally_sums_signs_per_hash_and_drops_zeros() -> None:
    rng = np.random.default_rng(3)
    hashes = rng.integers(0, 20, 500).astype(np.uint64) * np.uint64(2**60 // 7)
    signs = rng.choice([-1, 1], 500)
    counted = Counter()
    for h, s in zip(hashes.tolist(), signs.tolist(), strict=True):
        counted[h] += s
    distinct, counts, rows = tally(hashes, signs)
    assert np.all(np.diff(distinct.astype(np.float64)) > 0)
    assert np.array_equal(hashes[rows], distinct)
    expected = {h: c for h, c in counted.items() if c}
    assert dict(zip(distinct.tolist(), counts.tolist(), strict=True)) == expected
    empty = tally(np.zeros(0, np.uint64), np.zeros(0, np.int64))
    assert len(empty[0]) == len(empty[1]) == len(empty[2]) == 0


def test_shared_count_is_the_size_of_the_intersection() -> None:
    rng = np.random.default_rng(8)
    for _ in range(20):
        x = np.unique(rng.integers(0, 50, rng.integers(0, 30)).astype(np.uint64))
        y = np.unique(rng.integers(0, 50, rng.integers(0, 30)).astype(np.uint64))
        assert shared_count(x, y) == len(set(x.tolist()) & set(y.tolist()))
