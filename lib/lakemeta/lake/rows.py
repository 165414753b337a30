"""Row identity, Spark-free: when two rows are the same row, whatever engine read them.

A row is identified by its cells' canonical strings (:func:`canonical_strings`): equal exactly when the
values are equal under the column's type, for plain and nested columns alike. On that identity rest

* :func:`multiset_difference`: a batch as the difference of two snapshots (rows whose copies grew are
  inserted, rows whose copies shrank are deleted): what a change feed nets out to;
* :func:`content_hashes`: a 64-bit hash of each row's whole content, the same for a row read by delta-rs
  in an executor as for the same row handed over by Spark, so that state keyed by it (the posting lists'
  row ids) does not depend on which reader read a batch.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.hashing import combine_hashes, hash_strings

_NULL_FIELD = pa.scalar("~")  # a null element of a nested value; a framed element starts with a digit


def _framed(strings: pa.Array) -> pa.Array:
    """``<byte length>:<value>`` per element, ``~`` for null: concatenations of these are unambiguous."""
    lengths = pc.cast(pc.binary_length(strings), pa.string())
    framed = pc.binary_join_element_wise(lengths, strings, ":")
    return pc.fill_null(framed, _NULL_FIELD)


def canonical_strings(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The column as strings, equal exactly when the values are equal under the column's type (nulls kept):
    floats normalised so that -0.0 equals 0.0 (all NaNs equal), binary byte for byte, zoned timestamps
    as UTC instants, nested values (lists, structs, maps) as a length-prefixed serialisation of their
    elements."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    kind = values.type
    if pa.types.is_dictionary(kind):
        return canonical_strings(values.dictionary_decode())
    if pa.types.is_string(kind):
        return values
    if pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return pc.cast(values, pa.string())
    if pa.types.is_binary(kind):
        return values.view(pa.string())  # bytes compared as they are, no UTF-8 validation
    if pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind) or pa.types.is_binary_view(kind):
        return pc.cast(values, pa.binary()).view(pa.string())
    if pa.types.is_floating(kind):
        return pc.cast(pc.add(values, pa.scalar(0, kind)), pa.string())  # -0.0 + 0 = +0.0
    if pa.types.is_timestamp(kind) and kind.tz is not None and kind.tz != "UTC":
        return pc.cast(values.cast(pa.timestamp(kind.unit, "UTC")), pa.string())
    if pa.types.is_map(kind):
        entries = pa.struct([pa.field("key", kind.key_type), pa.field("value", kind.item_type)])
        return canonical_strings(pc.cast(values, pa.list_(entries)))
    if pa.types.is_struct(kind):
        if kind.num_fields == 0:
            return pc.if_else(values.is_valid(), "", pa.scalar(None, pa.string()))
        fields = [_framed(canonical_strings(values.field(i))) for i in range(kind.num_fields)]
        joined = pc.binary_join_element_wise(*fields, "")
        return pc.if_else(values.is_valid(), joined, pa.scalar(None, pa.string()))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        lengths = pc.fill_null(pc.list_value_length(values), 0).to_numpy(zero_copy_only=False)
        offsets = np.zeros(len(values) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        elements = _framed(canonical_strings(pc.list_flatten(values)))
        lists = pa.LargeListArray.from_arrays(pa.array(offsets), elements, mask=values.is_null())
        return pc.binary_join(lists, "")
    return pc.cast(values, pa.string())


_KEY_LIMIT = 1 << 62


def row_ids(cells: np.ndarray) -> np.ndarray:
    """A dense id per distinct row of an integer cell matrix (exact): the columns are folded into one
    integer key, which is re-densified whenever the next column could overflow it - one 1-D sort per few
    columns instead of a lexicographic sort of whole rows."""
    key = np.zeros(len(cells), dtype=np.int64)
    span = 1
    for column in cells.T:
        low = int(column.min())
        width = int(column.max()) - low + 1
        if span * width >= _KEY_LIMIT:
            distinct, key = np.unique(key, return_inverse=True)
            span = len(distinct)
        key = key * width + (column - low)
        span *= width
    return np.unique(key, return_inverse=True)[1].reshape(-1)


def first_of_each_group(groups: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Indices of the rows to take: for each group g, its first ``wanted[g]`` rows, in row order."""
    order = np.argsort(groups, kind="stable")
    ordered = groups[order]
    rank = np.arange(len(order)) - np.searchsorted(ordered, ordered, side="left")
    return np.sort(order[rank < wanted[ordered]])


def copy_differences(before_group: np.ndarray, after_group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Given each row's group (its distinct content) in two multisets of rows, the rows of ``before`` to
    delete and of ``after`` to insert so that the first becomes the second: per content, the first copies
    beyond what the other side holds."""
    n_groups = int(max(before_group.max(initial=-1), after_group.max(initial=-1))) + 1
    before_copies = np.bincount(before_group, minlength=n_groups)
    after_copies = np.bincount(after_group, minlength=n_groups)
    deleted = first_of_each_group(before_group, np.maximum(before_copies - after_copies, 0))
    inserted = first_of_each_group(after_group, np.maximum(after_copies - before_copies, 0))
    return deleted, inserted


def multiset_difference(before: pa.Table, after: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The rows deleted from ``before`` and inserted into it to give ``after`` (same columns), as a change
    feed nets them out: an unchanged row is in neither, an updated row is a delete plus an insert."""
    if before.num_rows == 0 or after.num_rows == 0 or not after.column_names:
        return before, after
    after = after.select(before.column_names)
    cells = np.empty((before.num_rows + after.num_rows, before.num_columns), dtype=np.int64)
    for i, name in enumerate(before.column_names):
        both = pa.chunked_array(
            [canonical_strings(before.column(name)), canonical_strings(after.column(name))], pa.string()
        )
        cells[:, i] = pc.dictionary_encode(both, null_encoding="encode").combine_chunks().indices.to_numpy()
    group = row_ids(cells)
    deleted, inserted = copy_differences(group[: before.num_rows], group[before.num_rows :])
    return before.take(deleted), after.take(inserted)


def content_hashes(rows: pa.Table) -> np.ndarray:
    """A 64-bit hash of each row's content (int64): XXH64 over one lane per column (the hash of the cell's
    canonical form, 0 for a null) and lanes of null flags (one bit per column), so that (null, "a") and
    ("a", null) differ. Plain cells hash as ``lakemeta.hashing`` does, nested ones by their canonical
    strings; the result does not depend on the Arrow types a reader chose for the same values."""
    n = rows.num_rows
    everywhere = np.ones(n, dtype=np.bool_)
    lanes: list[tuple[np.ndarray, np.ndarray]] = []
    null_flags = np.zeros(((rows.num_columns + 63) // 64, n), dtype=np.uint64)
    for i, column in enumerate(rows.columns):
        nested = pa.types.is_nested(column.type) or pa.types.is_dictionary(column.type)
        hashes, valid = hash_strings(canonical_strings(column) if nested else column)
        lanes.append((hashes, everywhere))
        null_flags[i // 64] |= (~valid).astype(np.uint64) << np.uint64(i % 64)
    lanes.extend((flags, everywhere) for flags in null_flags)
    if not lanes:
        return np.zeros(n, dtype=np.int64)
    return combine_hashes(lanes)[0].view(np.int64)
