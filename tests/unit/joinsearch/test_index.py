"""Posting-list items of a table and the columnar index (index.py)."""

import numpy as np
import pyarrow as pa

from lakemeta.joinsearch.index import PostingIndex, table_postings
from lakemeta.joinsearch.superkey import row_super_keys, super_keys_from_binary
from lakemeta.joinsearch.xash import N_CHAR_CLASSES, XashHasher

from .corpus import build_index

HASHER = XashHasher.eq5(128, 5, (0,) * N_CHAR_CLASSES)


def test_table_postings_one_item_per_non_null_cell() -> None:
    columns = [pa.array(["A ", None, "b"]), pa.array([1.0, 2.0, None]), pa.array(["", None, None])]
    batch = table_postings(columns, np.array([10, 11, 12]), HASHER)
    assert batch.schema.names == ["value", "column_id", "row_id", "super_key"]
    assert batch.column("value").to_pylist() == ["a", "b", "1", "2"]
    assert batch.column("column_id").to_pylist() == [0, 0, 1, 1]
    assert batch.column("row_id").to_pylist() == [10, 12, 10, 11]
    # super key of a row: OR over its normalised values
    expected = row_super_keys([pa.array(["a", None, "b"]), pa.array(["1", "2", None])], HASHER)
    np.testing.assert_array_equal(super_keys_from_binary(batch.column("super_key")), expected[[0, 2, 0, 1]])


def test_index_order_ranges_and_rows() -> None:
    tables = {5: [["x", "y"], ["y", None]], 2: [["y", "z"]]}
    index = build_index(tables, HASHER)
    assert list(index.values) == ["x", "y", "y", "y", "z"]
    assert list(index.table_ids) == [5, 2, 5, 5, 2]  # by value, then table, row, column
    starts, stops = index.value_ranges(np.array(["y", "w", "z"], dtype=np.dtypes.StringDType()))
    assert list(starts) == [1, 0, 4] and list(stops) == [4, 0, 5]
    # the cells of each row, read through the row CSR
    rows = {}
    for r in range(len(index.row_offsets) - 1):
        items = index.row_items[index.row_offsets[r] : index.row_offsets[r + 1]]
        assert len(set(index.table_ids[items])) == 1 and len(set(index.row_ids[items])) == 1
        assert (index.row_of_item[items] == r).all()
        rows[(int(index.table_ids[items[0]]), int(index.row_ids[items[0]]))] = [
            (int(index.column_ids[i]), str(index.values[i])) for i in items
        ]
    assert rows == {(5, 7): [(0, "x"), (1, "y")], (5, 10): [(0, "y")], (2, 7): [(0, "y"), (1, "z")]}
    assert index.max_row_width() == 2 and index.n_words == 2 and index.n_items == 5


def test_empty_index() -> None:
    index = PostingIndex.from_arrays(pa.array([], pa.string()), [], [], [], np.zeros((0, 2), np.uint64))
    assert index.n_items == 0 and index.max_row_width() == 0
