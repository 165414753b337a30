"""What the FK discovery step keeps of the scored candidates (``discover.smallest_keys_only``)."""

from __future__ import annotations

import pyarrow as pa

from lakemeta.fks.discover import _ROWS, smallest_keys_only


def test_each_table_keeps_the_candidates_of_its_smallest_keys_that_have_any() -> None:
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
