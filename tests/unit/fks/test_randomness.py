"""Quantile-EMD (Zhang §3): the grid, the EMD against closed forms, the distinct tuples."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.fks.randomness import distinct_tuples, emd_n, quantile_bounds


def test_quantile_bounds_follow_definition_3_over_distinct_values():
    ranks = np.array([0, 0, 1, 2, 3, 4, 5, 6, 7, 7])  # 8 distinct values, duplicates ignored
    assert quantile_bounds(ranks, 4).tolist() == [1, 3, 5, 7]  # ranks ceil(8j/4) - 1
    assert quantile_bounds(ranks, 100).tolist() == list(range(8))  # l capped at the distinct count


def test_emd_of_identical_distributions_is_zero():
    key = pa.array(np.arange(1, 1001))
    assert emd_n([key], [key], 256) == 0.0
    shuffled = pa.array(np.random.default_rng(1).permutation(np.arange(1, 1001)))
    assert emd_n([key], [shuffled], 256) == 0.0


@pytest.mark.parametrize("share", [0.25, 0.5, 0.75])
def test_emd_of_a_prefix_and_a_suffix_matches_the_closed_form(share: float):
    """Uniform on [0, s] against uniform on [0, 1]: EMD = integral of |x/s - x| over [0, s] plus that of
    1 - x over [s, 1] = (1 - s) / 2; on a grid of l = n cells it is exact up to 1/l."""
    n = 1024
    key = pa.array(np.arange(n))
    cut = int(n * share)
    expected = (1 - share) / 2
    assert emd_n([key], [pa.array(np.arange(cut))], n) == pytest.approx(expected, abs=2 / n)
    assert emd_n([key], [pa.array(np.arange(n - cut, n))], n) == pytest.approx(expected, abs=2 / n)


def test_random_subsets_rank_below_prefixes_and_suffixes():
    rng = np.random.default_rng(7)
    key = pa.array(np.arange(1, 5001))
    random_subsets = [
        emd_n([key], [pa.array(rng.choice(5000, 3000, replace=False) + 1)], 256) for _ in range(5)
    ]
    ranges = [
        emd_n([key], [pa.array(np.arange(1, 3001))], 256),
        emd_n([key], [pa.array(np.arange(2001, 5001))], 256),
    ]
    assert max(random_subsets) < 0.02 < 0.1 < min(ranges)


def test_emd_in_two_dimensions_uses_the_manhattan_quantile_distance():
    """One cell of mass 1 against another: EMD is the Manhattan distance of the corners in quantiles."""
    key = [pa.array([1, 1, 2, 2]), pa.array(["a", "b", "a", "b"])]
    candidate = [pa.array([1]), pa.array(["a"])]
    # P: a quarter in each of the 2x2 cells; F: all in cell (0, 0). Moving 1/4 by 1/2, 1/4 by 1/2 and
    # 1/4 by 1 (both dimensions) costs 1/2, normalised by n = 2.
    assert emd_n(key, candidate, 16) == pytest.approx(0.25)


def test_distinct_tuples_drop_tuples_with_a_null():
    columns = distinct_tuples([pa.array([1, 1, None, 2, 3]), pa.array(["a", "a", "b", None, "c"])])
    assert sorted(zip(*(c.to_pylist() for c in columns), strict=True)) == [("1", "a"), ("3", "c")]


@pytest.mark.parametrize("seed", range(20))
def test_distinct_tuples_equal_a_set_of_the_tuples(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    left = [None if rng.random() < 0.1 else int(v) for v in rng.integers(0, 8, n)]
    right = [None if rng.random() < 0.1 else str(v) for v in rng.integers(0, 5, n)]
    columns = distinct_tuples([pa.array(left, pa.int64()), pa.array(right, pa.string())])
    found = list(zip(*(c.to_pylist() for c in columns), strict=True))
    expected = {(str(a), b) for a, b in zip(left, right, strict=True) if a is not None and b is not None}
    assert len(found) == len(expected) and set(found) == expected
