"""Row identity: the multiset difference of two snapshots against brute force, and content hashes that do
not depend on the Arrow types a reader chose."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.lake.rows import content_hashes, multiset_difference


def random_table(rng: np.random.Generator, n: int) -> pa.Table:
    """Few distinct values, nulls everywhere, a nested column: many duplicate rows."""
    ids = [None if rng.random() < 0.1 else int(rng.integers(0, 4)) for _ in range(n)]
    names = [["a", "b", None, "a b"][int(rng.integers(4))] for _ in range(n)]
    tags = [
        None if rng.random() < 0.2 else [int(x) for x in rng.integers(0, 2, int(rng.integers(0, 3)))]
        for _ in range(n)
    ]
    scores = [None if rng.random() < 0.2 else float(rng.choice([0.0, -0.0, 1.5])) for _ in range(n)]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array(names, pa.string()),
            "tags": pa.array(tags, pa.list_(pa.int64())),
            "score": pa.array(scores, pa.float64()),
        }
    )


def as_multiset(table: pa.Table) -> Counter:
    return Counter(
        tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in row.items())
        for row in table.to_pylist()
    )


@pytest.mark.parametrize("seed", range(6))
def test_multiset_difference_equals_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    before = random_table(rng, int(rng.integers(0, 40)))
    kept = pa.array(rng.random(before.num_rows) < 0.6, pa.bool_())
    after = pa.concat_tables([before.filter(kept), random_table(rng, int(rng.integers(0, 20)))])
    deleted, inserted = multiset_difference(before, after)
    old, new = as_multiset(before), as_multiset(after)
    # -0.0 == 0.0 as Python floats, so the brute force compares values as the column type does
    assert as_multiset(deleted) == old - new
    assert as_multiset(inserted) == new - old
    assert sum(as_multiset(deleted).values()) <= before.num_rows


def test_content_hashes_tell_rows_apart_and_ignore_the_reader_s_types() -> None:
    rows = pa.table(
        {
            "a": pa.array([None, "x", "x", "x"], pa.string()),
            "b": pa.array(["x", None, None, "y"], pa.string()),
            "n": pa.array([1, 2, 2, 3], pa.int64()),
            "t": pa.array([[1], [], [], None], pa.list_(pa.int32())),
        }
    )
    hashes = content_hashes(rows)
    assert hashes.dtype == np.int64
    assert hashes[1] == hashes[2]  # equal rows
    assert len({hashes[0], hashes[1], hashes[3]}) == 3  # (null, "x") and ("x", null) differ
    other_types = pa.table(
        {
            "a": rows["a"].cast(pa.large_string()),
            "b": rows["b"].cast(pa.string_view()),
            "n": rows["n"].cast(pa.int32()),
            "t": rows["t"].cast(pa.large_list(pa.int64())),
        }
    )
    assert np.array_equal(content_hashes(other_types), hashes)
    assert content_hashes(rows.slice(1, 2)).tolist() == hashes[1:3].tolist()
