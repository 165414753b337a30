"""Which columns number their rows (``numberings.numbered_columns``), against the values themselves."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.fks.numberings import numbered_columns
from lakemeta.hashing import canonical, hash_strings, integer_literals


def value_set_rows(table: str, column: str, values: list) -> pa.Table:
    """A column's distinct values as the value sets keep them (``values.state``)."""
    distinct = pa.array(values).unique()
    hashes, valid = hash_strings(distinct)
    return pa.table(
        {
            "table_name": [table] * int(valid.sum()),
            "column_name": [column] * int(valid.sum()),
            "hash": pa.array(hashes[valid].view(np.int64)),
            "integer": pa.array(integer_literals(distinct)[valid]),
        }
    )


def numbers_its_rows(values: list) -> bool:
    """Brute force: the canonical forms are those of 1..N or 0..N-1."""
    text = set(canonical(pa.array(values).drop_null()).to_pylist())
    return any(text == {str(i) for i in range(first, first + len(text))} for first in (0, 1))


COLUMNS = {
    "ids": [3, 1, 2, 5, 4],
    "from_zero": [0, 1, 2],
    "doubles": [1.0, 2.0, 3.0],
    "texts": ["1", "2"],
    "with_a_gap": [1, 2, 4],
    "years": [1990, 1991, 1992],
    "words": ["a", "b"],
    "one": [1],
    "zero": [0],
    "negative": [-1, 0, 1],
    "halves": [0.5, 1.0],
}


@pytest.mark.parametrize("seed", [0, 1])
def test_numbered_columns_equal_brute_force_on_the_values(seed: int) -> None:
    rng = np.random.default_rng(seed)
    big = rng.permutation(np.arange(1, 3001)).tolist()
    columns = {**COLUMNS, "big": big, "big_but_one": big[1:]}
    rows = pa.concat_tables(
        [value_set_rows(f"t{i % 3}", name, values) for i, (name, values) in enumerate(columns.items())]
    )
    rows = rows.take(pa.array(rng.permutation(rows.num_rows)))  # in no order
    found = numbered_columns(rows)
    expected = {
        (f"t{i % 3}", name) for i, (name, values) in enumerate(columns.items()) if numbers_its_rows(values)
    }
    assert (
        set(zip(found["table_name"].to_pylist(), found["column_name"].to_pylist(), strict=True)) == expected
    )
    assert ("t0", "ids") in expected and ("t2", "years") not in expected  # the brute force is no tautology
    assert numbered_columns(rows.slice(0, 0)).num_rows == 0
