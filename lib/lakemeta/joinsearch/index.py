"""The MATE posting-list index in columnar form (§3, Eq. 4 extended by the super key in §5.1).

One posting-list item per non-null cell: (value, table id, column id, row id, super key of the row).
:func:`table_postings` produces the items of one table (or one batch of its rows) — the work a Spark
``mapInArrow`` does per partition. :class:`PostingIndex` holds the items of a corpus, or of the candidate
subset of a corpus, as numpy arrays for :mod:`lakemeta.joinsearch.search`:

* items sorted by value (then table, row, column), so a value's posting list is a contiguous range found by
  binary search over the distinct values;
* a CSR over rows — the items of each (table, row) — so that the exact joinability of Eq. 2 can read the
  cells of a candidate row ("MATE retrieves the exact values", §6).

A search needs the posting lists of the query's key values and all cells of the rows they occur in. A
subset index therefore must hold every item of every row that contains one of the query's (normalised) key
values; the whole corpus is always enough.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.arrays import run_starts
from lakemeta.joinsearch.normalise import normalise_values
from lakemeta.joinsearch.superkey import SuperKeyHasher, row_super_keys, super_keys_to_binary

_STRING = np.dtypes.StringDType()


def as_numpy_strings(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Non-null string array as a numpy ``StringDType`` array (for sorting and binary search)."""
    if values.null_count:
        raise ValueError("values must not contain nulls")
    return values.to_numpy(zero_copy_only=False).astype(_STRING)


def table_postings(
    columns: Sequence[pa.Array | pa.ChunkedArray], row_ids: np.ndarray, hasher: SuperKeyHasher
) -> pa.RecordBatch:
    """Posting-list items of one table's rows, given column by column (column id = position in ``columns``).

    Values are normalised (``normalise.normalise_values``); the super key of a row ORs the hashes of all its
    normalised values (§5.1). Returns a batch with ``value`` (large_string), ``column_id`` (int32),
    ``row_id`` (int64) and ``super_key`` (fixed-size binary, ``superkey.super_keys_to_binary``), one row
    per non-null cell, column by column.
    """
    normalised = [normalise_values(column) for column in columns]
    keys = row_super_keys(normalised, hasher)
    row_ids = np.asarray(row_ids, dtype=np.int64)
    parts = []
    for column_id, column in enumerate(normalised):
        valid = pc.is_valid(column).to_numpy(zero_copy_only=False)
        parts.append(
            (
                pc.filter(column, valid).cast(pa.large_string()),
                np.full(int(valid.sum()), column_id, np.int32),
                row_ids[valid],
                keys[valid],
            )
        )
    return pa.RecordBatch.from_arrays(
        [
            pa.concat_arrays([p[0] for p in parts]),
            pa.array(np.concatenate([p[1] for p in parts])),
            pa.array(np.concatenate([p[2] for p in parts])),
            super_keys_to_binary(np.concatenate([p[3] for p in parts])),
        ],
        names=["value", "column_id", "row_id", "super_key"],
    )


@dataclass(frozen=True)
class PostingIndex:
    """Posting-list items sorted by (value, table, row, column) plus a CSR of the items of each row."""

    values: np.ndarray  # StringDType, sorted
    table_ids: np.ndarray  # int64
    column_ids: np.ndarray  # int64
    row_ids: np.ndarray  # int64
    super_keys: np.ndarray  # uint64, (n_items, n_words)
    row_of_item: np.ndarray  # int64: dense row number of each item
    row_offsets: np.ndarray  # int64, n_rows + 1: row r's items are row_items[row_offsets[r]:row_offsets[r+1]]
    row_items: np.ndarray  # int64: item positions grouped by row, by column within a row

    @classmethod
    def from_arrays(
        cls,
        values: pa.Array | pa.ChunkedArray | np.ndarray,
        table_ids: np.ndarray,
        column_ids: np.ndarray,
        row_ids: np.ndarray,
        super_keys: np.ndarray,
    ) -> PostingIndex:
        """Index from parallel arrays of posting-list items (any order; values already normalised).

        ``super_keys`` is uint64 of shape (n, n_words); ``superkey.super_keys_from_binary`` converts the
        stored binary form.
        """
        strings = values.astype(_STRING) if isinstance(values, np.ndarray) else as_numpy_strings(values)
        table_ids = np.asarray(table_ids, dtype=np.int64)
        column_ids = np.asarray(column_ids, dtype=np.int64)
        row_ids = np.asarray(row_ids, dtype=np.int64)
        super_keys = np.asarray(super_keys, dtype=np.uint64)
        n = len(strings)
        if not (len(table_ids) == len(column_ids) == len(row_ids) == super_keys.shape[0] == n):
            raise ValueError("posting-list arrays must have equal lengths")
        order = np.lexsort((column_ids, row_ids, table_ids, strings))
        table_ids, column_ids, row_ids = table_ids[order], column_ids[order], row_ids[order]
        by_row = np.lexsort((column_ids, row_ids, table_ids))
        row_starts = run_starts(table_ids[by_row]) | run_starts(row_ids[by_row])
        row_numbers = np.cumsum(row_starts) - 1
        row_of_item = np.empty(n, np.int64)
        row_of_item[by_row] = row_numbers
        row_offsets = np.append(np.flatnonzero(row_starts), n).astype(np.int64)
        return cls(
            strings[order],
            table_ids,
            column_ids,
            row_ids,
            np.ascontiguousarray(super_keys[order]),
            row_of_item,
            row_offsets,
            by_row.astype(np.int64),
        )

    @property
    def n_items(self) -> int:
        return len(self.values)

    @property
    def n_words(self) -> int:
        return self.super_keys.shape[1]

    @cached_property
    def _distinct_values(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct values in index order as Python strings, and where each one's items start (plus
        the end).

        Binary search runs over Python strings (the same code-point order) because numpy 2.4's
        ``searchsorted`` with ``StringDType`` needles returns wrong positions for strings longer than 15
        bytes (those kept outside the array's inline slots); element-wise comparisons are right.
        """
        starts = np.flatnonzero(run_starts(self.values))
        return self.values[starts].astype(object), np.append(starts, self.n_items)

    def value_ranges(self, distinct_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(start, stop)`` of the posting list of each value (StringDType array); empty if absent."""
        distinct, bounds = self._distinct_values
        needles = distinct_values.astype(object)
        position = np.searchsorted(distinct, needles)
        found = position < len(distinct)
        found[found] = distinct[position[found]] == needles[found]
        start = np.where(found, bounds[np.where(found, position, 0)], 0)
        stop = np.where(found, bounds[np.where(found, position + 1, 0)], 0)
        return start, stop

    def max_row_width(self) -> int:
        """The largest number of items (non-null cells) in one row."""
        return int(np.diff(self.row_offsets).max(initial=0))
