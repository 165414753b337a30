"""Copies, samples and extracts of one table (``overlaps``)."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa

from lakemeta.config import FkConfig
from lakemeta.fks.candidates import SCORED
from lakemeta.fks.overlaps import find_overlaps, joined_groups, matched_columns
from lakemeta.fks.signals import ColumnTypes


def inds(*pairs: tuple[str, str, str, str]) -> pa.Table:
    names = ["dep_table", "dep_column", "ref_table", "ref_column"]
    return pa.Table.from_pylist([dict(zip(names, pair, strict=True)) for pair in pairs])


def test_the_matching_uses_each_referenced_column_once() -> None:
    # every small-integer column of A fits the one id column of B: one match, not three
    assert len(matched_columns([("qty", "id"), ("line", "id"), ("size", "id")])) == 1
    assert sorted(matched_columns([("a", "x"), ("a", "y"), ("b", "x")])) == [("a", "y"), ("b", "x")]


def test_the_matching_is_maximum_one_to_one_and_inside_the_inclusions() -> None:
    """Against brute force over random small graphs, one-to-one ones (answered without a graph search)
    among them."""
    random = np.random.default_rng(7)
    for _ in range(300):
        edges = sorted(
            {(f"d{random.integers(4)}", f"r{random.integers(4)}") for _ in range(random.integers(1, 7))}
        )
        matching = matched_columns(edges)
        assert set(matching) <= set(edges)
        assert len({d for d, _ in matching}) == len({r for _, r in matching}) == len(matching)
        largest = max(
            size
            for size in range(len(edges) + 1)
            for chosen in itertools.combinations(edges, size)
            if len({d for d, _ in chosen}) == len({r for _, r in chosen}) == size
        )
        assert len(matching) == largest


TABLES = {  # table: its columns and types, in order
    "web/p1": [("planet", "string"), ("kind", "string"), ("moons", "int"), ("position", "int")],
    "web/p2": [
        ("planet", "string"),
        ("kind", "string"),
        ("moons", "int"),
        ("position", "int"),
        ("ring", "int"),
    ],
    "web/l1": [("language", "string"), ("speakers", "double")],
    "web/l2": [("language", "string"), ("speakers", "double")],
    "shop/orders": [("id", "int"), ("cust", "int"), ("qty", "int"), ("note", "string")],
    "shop/customers": [("id", "int"), ("name", "string"), ("x", "int")],
    "shop/invoices": [("inv", "int"), ("acct", "int")],
    "shop/copy": [("id", "int"), ("note", "string")],
    "b/a": [("code", "string"), ("y", "int")],
}


def candidate(fk: str, pk: str, **signals: object) -> dict:
    (fk_table, fk_column), (pk_table, pk_column) = fk.rsplit(".", 1), pk.rsplit(".", 1)
    return {"fk_table": fk_table, "fk_columns": [fk_column], "pk_table": pk_table, "pk_columns": [pk_column],
            "fk_is_key": False, "coverage": 0.5, "pk_is_integer": False, "span_start": 0.0, "span_end": 1.0,
            **signals}  # fmt: skip


def test_samples_extracts_and_mutual_keys_overlap_and_fact_tables_do_not() -> None:
    types = ColumnTypes(
        pa.Table.from_pylist(
            [
                {"table_name": t, "column_name": c, "ordinal": i, "data_type": d}
                for t, listed in TABLES.items()
                for i, (c, d) in enumerate(listed)
            ]
        )
    )
    scored = pa.Table.from_pylist(
        [
            # a sample of planets: its key inside the full list's key, three of its four columns included
            candidate("web/p1.planet", "web/p2.planet", fk_is_key=True),
            # two lists of one shape, a column inside the other's key at its place: versions
            candidate("web/l1.language", "web/l2.language"),
            # a fact table references a dimension: its key only
            candidate("shop/orders.cust", "shop/customers.id", pk_is_integer=True),
            # ids inside ids, numbers alone: no overlap
            candidate("shop/invoices.inv", "shop/orders.id", fk_is_key=True, pk_is_integer=True),
            # two tables numbered 1..N hold each other's keys: no copies; two code lists do
            candidate("shop/copy.id", "shop/customers.id", fk_is_key=True, pk_is_integer=True),
            candidate("shop/customers.id", "shop/copy.id", fk_is_key=True, pk_is_integer=True),
            candidate("b/a.code", "shop/customers.name", fk_is_key=True),
            candidate("shop/customers.name", "b/a.code", fk_is_key=True),
        ],
        schema=SCORED,
    )
    found = find_overlaps(
        inds(
            ("web/p1", "planet", "web/p2", "planet"),
            ("web/p1", "kind", "web/p2", "kind"),
            ("web/p1", "moons", "web/p2", "moons"),
            ("shop/orders", "cust", "shop/customers", "id"),
            ("shop/orders", "qty", "shop/customers", "id"),
            ("shop/invoices", "inv", "shop/orders", "id"),
            ("shop/invoices", "acct", "shop/orders", "cust"),
        ),
        types,
        scored,
        FkConfig(),
    ).to_pylist()
    assert [(r["left_table"], r["right_table"]) for r in found] == [
        ("b/a", "shop/customers"),
        ("web/l1", "web/l2"),
        ("web/p1", "web/p2"),
    ]
    assert found[0]["mutual_keys"] and not found[0]["same_shape"]
    assert found[1]["same_shape"] and not found[1]["mutual_keys"]
    sample = found[2]
    assert sample["left_in_right"] == 0.75 and sample["right_in_left"] == 0.0 and not sample["mutual_keys"]
    assert sample["columns"] == ["kind=kind", "moons=moons", "planet=planet"] and not sample["same_shape"]


def test_joined_groups_are_named_by_their_first_table() -> None:
    groups = joined_groups([("b", "c"), ("d", "c"), ("x", "y"), ("a", "a")])
    assert groups == {"b": "b", "c": "b", "d": "b", "x": "x", "y": "x", "a": "a"}
