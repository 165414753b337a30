"""The order of a candidate's and its key's values on each dimension (Zhang §3, ``domain_order``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.fks.domain_order import count_below, domain_keys, order_ranks


def test_the_domain_order_is_numeric_lexicographic_and_sort_n_for_mixed_columns():
    ordered, ranks = order_ranks(pa.array(["10", "9", "-2", "1.5", None, "9"]))
    assert ordered.to_pylist() == ["-2", "1.5", "9", "10"]
    assert ranks.tolist() == [3, 2, 0, 1, -1, 2]
    assert order_ranks(pa.array(["pear", "apple", "Zoo"]))[0].to_pylist() == ["Zoo", "apple", "pear"]
    # sort -n: a value without a leading number counts as 0, ties broken by the whole value
    mixed = order_ranks(pa.array(["b", "3x", "a", "-1", "2", "0"]))[0].to_pylist()
    assert mixed == ["-1", "0", "a", "b", "2", "3x"]


@pytest.mark.parametrize("seed", range(20))
def test_count_below_places_values_among_bounds_as_the_joint_order_does(seed: int) -> None:
    """``count_below`` against ``order_ranks`` over the bounds and the values together: numbers,
    decimals, negatives, text, numbers with text after them and leading zeros, values equal to bounds."""
    rng = np.random.default_rng(seed)
    pool = (
        [str(v) for v in range(-20, 60)]
        + [f"{v / 4}" for v in range(-8, 40)]
        + [f"{prefix}{v}" for prefix in ("x", "w", "0", "7-", "") for v in range(30)]
    )
    bounds = pa.array(sorted(set(rng.choice(pool, int(rng.integers(1, 40))).tolist())))
    ordered, _ = order_ranks(bounds)  # distinct and ascending in domain order
    values = pa.array(rng.choice(pool, int(rng.integers(1, 200))).tolist())
    _, ranks = order_ranks(pa.concat_arrays([ordered, values]))
    expected = np.searchsorted(ranks[: len(ordered)], ranks[len(ordered) :], side="left")
    assert count_below(domain_keys(ordered), domain_keys(values)).tolist() == expected.tolist()
