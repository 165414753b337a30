"""Copies, samples and extracts of one table (``overlaps``)."""

from __future__ import annotations

import pyarrow as pa

from lakemeta.fks.overlaps import find_overlaps, joined_groups, matched_columns


def inds(*pairs: tuple[str, str, str, str]) -> pa.Table:
    names = ["dep_table", "dep_column", "ref_table", "ref_column"]
    return pa.Table.from_pylist([dict(zip(names, pair, strict=True)) for pair in pairs])


def test_the_matching_uses_each_referenced_column_once() -> None:
    # every small-integer column of A fits the one id column of B: one match, not three
    assert len(matched_columns([("qty", "id"), ("line", "id"), ("size", "id")])) == 1
    assert sorted(matched_columns([("a", "x"), ("a", "y"), ("b", "x")])) == [("a", "y"), ("b", "x")]


def test_samples_extracts_and_mutual_keys_overlap_and_fact_tables_do_not() -> None:
    found = find_overlaps(
        inds(
            # a sample of planets: its key and two more of its four columns in the full list
            ("web/p1", "planet", "web/p2", "planet"),
            ("web/p1", "kind", "web/p2", "kind"),
            ("web/p1", "moons", "web/p2", "moons"),
            # a fact table references a dimension: its key only
            ("shop/orders", "cust", "shop/customers", "id"),
            ("shop/orders", "qty", "shop/customers", "id"),
            # two id columns in two larger id columns: numbers alone, no overlap
            ("shop/invoices", "inv", "shop/orders", "id"),
            ("shop/invoices", "acct", "shop/orders", "cust"),
        ),
        {"web/p1": 4, "web/p2": 4, "shop/orders": 4, "shop/customers": 3, "shop/invoices": 2, "b/a": 2},
        {("web/p1", "planet"), ("web/p1", "kind"), ("shop/customers", "name")},
        {("web/p1", "web/p2"), ("shop/invoices", "shop/orders")},
        {frozenset(("b/a", "shop/customers"))},
        {frozenset(("web/l1", "web/l2"))},
        0.5,
    ).to_pylist()
    assert [(r["left_table"], r["right_table"]) for r in found] == [
        ("b/a", "shop/customers"),
        ("web/l1", "web/l2"),
        ("web/p1", "web/p2"),
    ]
    assert found[1]["same_shape"] and not found[0]["same_shape"]
    sample = found[2]
    assert sample["left_in_right"] == 0.75 and sample["right_in_left"] == 0.0 and not sample["mutual_keys"]
    assert sample["columns"] == ["kind=kind", "moons=moons", "planet=planet"]
    assert found[0]["mutual_keys"]


def test_joined_groups_are_named_by_their_first_table() -> None:
    groups = joined_groups([("b", "c"), ("d", "c"), ("x", "y"), ("a", "a")])
    assert groups == {"b": "b", "c": "b", "d": "b", "x": "x", "y": "x", "a": "a"}
