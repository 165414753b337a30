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


def test_each_table_keeps_the_candidates_of_its_smallest_keys_that_have_any() -> None:
    from lakemeta.fks.fk_candidates import _ROWS, smallest_keys_only

    def row(pk_table: str, pk_columns: list[str], source: str = "agree_sets") -> dict:
        return {"fk_table": "f", "fk_columns": ["x"] * len(pk_columns), "pk_table": pk_table,
                "pk_columns": pk_columns, "pk_source": source, "emd": 0.0}  # fmt: skip

    scored = pa.Table.from_pylist(
        [
            row("partsupp", ["ps_partkey", "ps_suppkey"]),  # its unique comment column kept no candidate
            row("partsupp", ["ps_availqty", "ps_supplycost"]),
            row("partsupp", ["ps_partkey", "ps_suppkey", "ps_comment"], "declared"),
            row("orders", ["o_orderkey"]),
            row("orders", ["o_custkey", "o_orderdate"]),
        ],
        schema=_ROWS,
    )
    kept = smallest_keys_only(scored)
    assert [(r["pk_table"], len(r["pk_columns"])) for r in kept.to_pylist()] == [
        ("partsupp", 2),
        ("partsupp", 2),
        ("partsupp", 3),
        ("orders", 1),
    ]
    assert smallest_keys_only(_ROWS.empty_table()).num_rows == 0
