"""The exact uniqueness check of column combinations (``keys.is_unique``) against brute force."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.fks.keys import is_unique


@pytest.mark.parametrize("seed", range(40))
def test_is_unique_equals_a_set_of_the_tuples(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_rows, n_columns = int(rng.integers(0, 40)), int(rng.integers(1, 4))
    domain = int(rng.integers(2, 12))
    columns = [
        [None if rng.random() < 0.02 else str(v) for v in rng.integers(0, domain, n_rows)]
        for _ in range(n_columns)
    ]
    rows = list(zip(*columns, strict=True))
    expected = len(set(rows)) == n_rows and all(None not in row for row in rows)
    assert is_unique([pa.array(column, pa.string()) for column in columns]) == expected


def test_tuples_are_not_confused_by_how_their_strings_split() -> None:
    assert is_unique([pa.array(["ab", "a"]), pa.array(["c", "bc"])])
    assert not is_unique([pa.array(["ab", "ab"]), pa.array(["c", "c"])])
