"""What the FK discovery step keeps of the scored candidates (``discover.smallest_keys_only``)."""

from __future__ import annotations

import pyarrow as pa

from lakemeta.config import FkConfig
from lakemeta.fks.candidates import ROWS, CandidateIndex, ForeignNumberings, smallest_keys_only
from lakemeta.fks.keys import Key
from lakemeta.fks.signals import ColumnTypes


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
        schema=ROWS,
    )
    kept = smallest_keys_only(scored)
    assert [(r["pk_table"], len(r["pk_columns"])) for r in kept.to_pylist()] == [
        ("partsupp", 2),
        ("partsupp", 2),
        ("partsupp", 3),
        ("orders", 1),
    ]
    assert smallest_keys_only(ROWS.empty_table()).num_rows == 0


def test_a_key_is_referenced_when_other_tables_hold_its_candidates() -> None:
    estimates = pa.Table.from_pylist(
        [
            {
                "dep_table": "f",
                "dep_column": c,
                "ref_table": "k",
                "ref_column": r,
                "estimate": e,
                "error_bound": b,
            }
            for c, r, e, b in [
                ("a", "x", 0.95, 0.0),
                ("b", "y", 0.6, 0.4),  # the estimate plus its bound reaches θ: a candidate, checked exactly
                ("a", "z", 0.6, 0.1),  # it does not
                ("c", "z", 0.9, 0.0),
            ]
        ]
    )
    columns = pa.Table.from_pylist(
        [
            {"table_name": "k", "column_name": c, "ordinal": i, "data_type": t}
            for i, (c, t) in enumerate([("x", "int"), ("y", "int"), ("w", "string"), ("v", "boolean")])
        ]
    )
    index = CandidateIndex(estimates, ColumnTypes(columns), 0.9)
    for key in [
        Key("k", ("x",)),
        Key("k", ("x", "y")),
        Key("k", ("y", "x")),
        Key("k", ("x", "z")),
        Key("k", ("z", "z")),
        Key("k", ("q",)),
        Key("k", ("q", "x")),
    ]:
        assert index.referenced(key) == any(c.table != "k" for c in index.candidates(key)), key
    assert [c.columns for c in index.candidates(Key("k", ("x", "y")))] == [("a", "b")]
    assert [c.columns for c in index.candidates(Key("k", ("x", "z")))] == [("a", "c")]
    assert not index.candidates(Key("k", ("z", "z")))  # c would stand for both
    # self-references: the key's table's columns of its type family (not the text column w)
    assert [(c.table, c.columns) for c in index.candidates(Key("k", ("x",)))] == [
        ("f", ("a",)),
        ("k", ("y",)),
    ]


def test_a_numbering_key_keeps_candidates_of_its_folder_and_of_possible_copies_only() -> None:
    """``ForeignNumberings``: a key numbering its rows loses the candidates of other folders, which the
    choice could never accept, but not those that may show a copy (``overlaps`` reads them)."""
    tables = {
        "x/people": [("id", "int"), ("name", "string"), ("age", "int")],
        "x/visits": [("person", "int"), ("day", "int")],
        "y/people": [("id", "int"), ("name", "string"), ("age", "int")],  # a copy of x/people
        "y/counts": [("id", "int"), ("n", "int")],  # a key numbering its rows, nothing else shared
        "y/tags": [("tag", "string"), ("person", "int")],
    }
    columns = pa.Table.from_pylist(
        [
            {"table_name": table, "column_name": c, "ordinal": i, "data_type": t}
            for table, listed in tables.items()
            for i, (c, t) in enumerate(listed)
        ]
    )
    included = [
        ("x/visits", "person", "id"),
        ("y/people", "id", "id"),
        ("y/people", "name", "name"),
        ("y/people", "age", "age"),
        ("y/counts", "id", "id"),
        ("y/counts", "n", "id"),
        ("y/tags", "person", "id"),
        ("y/tags", "tag", "name"),  # one string column, but not two of its columns: no copy
    ]
    estimates = pa.Table.from_pylist(
        [
            {
                "dep_table": t,
                "dep_column": c,
                "ref_table": "x/people",
                "ref_column": r,
                "estimate": 1.0,
                "error_bound": 0.0,
            }
            for t, c, r in included
        ]
    )
    index = CandidateIndex(estimates, ColumnTypes(columns), 0.9)
    keys = [Key("x/people", ("id",)), Key("y/people", ("id",)), Key("y/counts", ("id",))]
    keyed = frozenset((k.table, k.columns) for k in keys)
    cut = ForeignNumberings(frozenset({("x/people", "id")}), keyed, 0.5, FkConfig().schema_of)
    every = {(c.table, c.columns) for c in index.candidates(keys[0])}
    kept = {(c.table, c.columns) for c in index.candidates(keys[0], cut)}
    assert every - kept == {("y/counts", ("id",)), ("y/counts", ("n",)), ("y/tags", ("person",))}
    # its own folder's and its own table's candidates stay, and so does the copy's key
    assert kept == {("x/visits", ("person",)), ("y/people", ("id",)), ("x/people", ("age",))}
    # a key that is no numbering keeps them all
    other = ForeignNumberings(frozenset(), cut.keys, 0.5, FkConfig().schema_of)
    assert {(c.table, c.columns) for c in index.candidates(keys[0], other)} == every
