"""The exact uniqueness check of column combinations (``keys.is_unique``) against brute force."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.fks.columns import values_at
from lakemeta.fks.keys import is_unique, rekeyed
from lakemeta.hashing import hash_strings


def _is_unique(columns: list[pa.Array]) -> bool:
    return is_unique(values_at(columns), [hash_strings(column) for column in columns])


@pytest.mark.parametrize("seed", range(40))
def test_is_unique_equals_a_set_of_the_tuples(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_rows, n_columns = (
        int(rng.choice([rng.integers(0, 40), rng.integers(16_000, 17_000)])),
        int(rng.integers(1, 4)),
    )
    domain = int(rng.integers(2, 12)) if n_rows < 40 else int(rng.choice([30, 10**7]))
    columns = [
        [None if rng.random() < 0.02 else str(v) for v in rng.integers(0, domain, n_rows)]
        for _ in range(n_columns)
    ]
    rows = list(zip(*columns, strict=True))
    expected = len(set(rows)) == n_rows and all(None not in row for row in rows)
    assert _is_unique([pa.array(column, pa.string()) for column in columns]) == expected


def test_tuples_are_not_confused_by_how_their_strings_split() -> None:
    assert _is_unique([pa.array(["ab", "a"]), pa.array(["c", "bc"])])
    assert not _is_unique([pa.array(["ab", "ab"]), pa.array(["c", "c"])])


@pytest.mark.parametrize("n_rows", [6, 200])
def test_rows_whose_hashes_collide_are_told_apart_by_their_values(n_rows: int) -> None:
    every_row = [(np.full(n_rows, 7, np.uint64), np.ones(n_rows, bool))]  # as if all hashes collided
    assert is_unique(values_at([pa.array(np.arange(n_rows))]), every_row)
    assert not is_unique(values_at([pa.array(np.append(np.arange(n_rows - 1), 0))]), every_row)
    # Rows 2i and 2i+1 share a hash: n_rows / 2 shared hashes, more than are compared first at 200 rows.
    # The one repeated value sits in the last pair, found only when all shared hashes are compared.
    pairs = [(np.arange(n_rows, dtype=np.uint64) // 2, np.ones(n_rows, bool))]
    values = np.arange(n_rows)
    assert is_unique(values_at([pa.array(values)]), pairs)
    values[-1] = values[-2]
    assert not is_unique(values_at([pa.array(values)]), pairs)


def test_the_tables_whose_checked_keys_changed_between_two_runs() -> None:
    def checks(keys: dict[str, list[list[str]]]) -> pa.Table:
        return pa.Table.from_pylist([{"table_name": t, "version": 3, "keys": k} for t, k in keys.items()])

    before = checks({"a": [["x"], ["y", "z"]], "b": [["k"]], "c": [["c1"]], "d": []})
    after = checks({"a": [["y", "z"], ["x"]], "b": [["k"], ["j"]], "d": [], "e": [["e1"]]})
    # a: the same keys in another order; b: one more; c: no check asked any more; e: newly checked
    assert rekeyed(before, after) == {"b", "c", "e"}
    assert rekeyed(after, after) == set()
