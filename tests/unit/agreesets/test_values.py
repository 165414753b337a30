"""Canonical strings: equal exactly when the values are equal under the column's type."""

from __future__ import annotations

import pyarrow as pa

from lakemeta.agreesets.values import canonical_strings, comparable_table


def equal_pairs(values: pa.Array) -> set[tuple[int, int]]:
    strings = canonical_strings(values).view(pa.binary()).to_pylist()  # binary values need not be UTF-8
    n = len(strings)
    return {(i, j) for i in range(n) for j in range(i + 1, n) if strings[i] == strings[j]}


def test_floats_binary_and_nulls() -> None:
    assert equal_pairs(pa.array([0.0, -0.0, 1.5, None])) == {(0, 1)}
    assert canonical_strings(pa.array([None], pa.float64())).to_pylist() == [None]
    assert equal_pairs(pa.array([b"\xff\x00", b"\xff", b"\xff\x00"])) == {(0, 2)}


def test_nested_values_are_unambiguous() -> None:
    lists = pa.array([["a,b"], ["a", "b"], ["a", "b"], [], None, [None]], pa.list_(pa.string()))
    assert equal_pairs(lists) == {(1, 2)}
    structs = pa.array([{"x": "1", "y": "23"}, {"x": "12", "y": "3"}, {"x": "1", "y": "23"}])
    assert equal_pairs(structs) == {(0, 2)}


def test_comparable_table_sorts_columns() -> None:
    table = comparable_table(pa.table({"b": pa.array([1, 2]), "a": pa.array(["x", "y"])}))
    assert table.column_names == ["a", "b"]
    assert table.column("b").to_pylist() == ["1", "2"]
