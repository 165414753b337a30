"""The values agree-sets compare: every column of a snapshot as canonical strings.

Every column is compared by a canonical string of its value, so equality is the column type's own
equality: floats are normalised so that -0.0 equals 0.0 (all NaNs are equal), binary values are compared
byte for byte, and nested values (lists, structs, maps) by a length-prefixed serialisation of their
elements. Nulls equal each other by default (``null_equals_null=True``, as in the FD literature and the
development data's published counts); with ``False`` a null equals nothing, not even another null. The
setting is part of the state's meaning: changing it requires a rebuild.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.lake.snapshots import read_table

_NULL_FIELD = pa.scalar("~")  # a null element of a nested value; a framed element starts with a digit


def _framed(strings: pa.Array) -> pa.Array:
    """``<byte length>:<value>`` per element, ``~`` for null: concatenations of these are unambiguous."""
    lengths = pc.cast(pc.binary_length(strings), pa.string())
    framed = pc.binary_join_element_wise(lengths, strings, ":")
    return pc.fill_null(framed, _NULL_FIELD)


def canonical_strings(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The column as strings, equal exactly when the values are equal under the column's type (nulls kept)."""
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


def comparable_table(table: pa.Table) -> pa.Table:
    """The snapshot with its columns in name order (so attribute order is the sorted order of agree-set
    names) and every value as its canonical string."""
    names = sorted(table.column_names)
    return pa.table({name: canonical_strings(table.column(name)) for name in names})


def read_snapshot(path: str, version: int) -> pa.Table:
    """The rows of a Delta table at ``version`` as :func:`comparable_table` (delta-rs; usable inside Spark
    executors)."""
    return comparable_table(read_table(path, version))
