"""The order of a candidate's and its key's values on each dimension (Zhang §3, ``domain_order``)."""

from __future__ import annotations

import pyarrow as pa

from lakemeta.fks.domain_order import order_ranks


def test_the_domain_order_is_numeric_lexicographic_and_sort_n_for_mixed_columns():
    ordered, ranks = order_ranks(pa.array(["10", "9", "-2", "1.5", None, "9"]))
    assert ordered.to_pylist() == ["-2", "1.5", "9", "10"]
    assert ranks.tolist() == [3, 2, 0, 1, -1, 2]
    assert order_ranks(pa.array(["pear", "apple", "Zoo"]))[0].to_pylist() == ["Zoo", "apple", "pear"]
    # sort -n: a value without a leading number counts as 0, ties broken by the whole value
    mixed = order_ranks(pa.array(["b", "3x", "a", "-1", "2", "0"]))[0].to_pylist()
    assert mixed == ["-1", "0", "a", "b", "2", "3x"]
