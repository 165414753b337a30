"""Quantile-EMD (Zhang §3): the grid, the EMD against closed forms, the distinct tuples."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.fks.domain_order import order_ranks
from lakemeta.fks.randomness import KeyGrid, distinct_tuples, emd_n, quantile_bounds


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


def _emd_by_simplex(key: list[pa.Array], candidate: list[pa.Array], n_quantiles: int) -> float:
    """Zhang §3 written out directly: ranks over the key's and the candidate's values together, Def. 3's
    grid, and the transportation problem solved by POT in every dimension (the reference of ``KeyGrid``)."""
    import ot

    key_cells, candidate_cells, shape = [], [], []
    for key_values, candidate_values in zip(key, candidate, strict=True):
        _, ranks = order_ranks(
            pa.concat_arrays([key_values.cast(pa.string()), candidate_values.cast(pa.string())])
        )
        bounds = quantile_bounds(ranks[: len(key_values)], n_quantiles)
        cells = np.minimum(np.searchsorted(bounds, ranks, side="left"), len(bounds) - 1)
        key_cells.append(cells[: len(key_values)])
        candidate_cells.append(cells[len(key_values) :])
        shape.append(len(bounds))
    key_flat, candidate_flat = (
        np.ravel_multi_index(key_cells, shape),
        np.ravel_multi_index(candidate_cells, shape),
    )
    support = np.union1d(key_flat, candidate_flat)
    key_mass = np.bincount(np.searchsorted(support, key_flat), minlength=len(support)) / len(key_flat)
    candidate_mass = np.bincount(np.searchsorted(support, candidate_flat), minlength=len(support)) / len(
        candidate_flat
    )
    corners = np.stack(np.unravel_index(support, shape), axis=1) / np.asarray(shape, dtype=np.float64)
    distance = np.abs(corners[:, None, :] - corners[None, :, :]).sum(axis=2)
    return float(ot.emd2(key_mass, candidate_mass, distance)) / len(key)


@pytest.mark.parametrize("seed", range(12))
def test_key_grid_equals_the_transportation_problem_over_joint_ranks(seed):
    """``KeyGrid`` places a candidate's values among the quantiles only and solves one dimension in closed
    form; both are exact: equal to the simplex over ranks of all values, candidate values outside the key
    (below, between and beyond its values; numbers and text mixed) included."""
    rng = np.random.default_rng(seed)
    dimensions = 1 + seed % 2
    n_key = int(rng.integers(1, 400))
    key = [
        pa.array([str(v) for v in rng.choice(3000, n_key, replace=False)])
        if d == 0
        else pa.array([f"w{v}" for v in rng.integers(0, 40, n_key)])
        for d in range(dimensions)
    ]
    n_candidate = int(rng.integers(1, 300))
    candidate = [
        pa.array([str(v) if rng.random() < 0.8 else f"x{v}" for v in rng.integers(-100, 3500, n_candidate)])
        if d == 0
        else pa.array([f"w{v}" for v in rng.integers(0, 45, n_candidate)])
        for d in range(dimensions)
    ]
    quantiles = int(rng.choice([4, 16, 256]))
    assert KeyGrid(key, quantiles).emd_n(candidate) == pytest.approx(
        _emd_by_simplex(key, candidate, quantiles), abs=1e-9
    )
