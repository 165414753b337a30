"""The values agree-sets compare: every column of a snapshot as canonical strings.

Every column is compared by the canonical string of its value (``lakemeta.lake.rows.canonical_strings``),
so equality is the column type's own equality: floats are normalised so that -0.0 equals 0.0 (all NaNs are
equal), binary values are compared byte for byte, and nested values (lists, structs, maps) by a
length-prefixed serialisation of their elements. Nulls equal each other by default
(``null_equals_null=True``, as in the FD literature and the development data's published counts); with
``False`` a null equals nothing, not even another null. The setting is part of the state's meaning:
changing it requires a rebuild.
"""

from __future__ import annotations

import pyarrow as pa

from lakemeta.lake.rows import canonical_strings


def comparable_table(table: pa.Table) -> pa.Table:
    """The snapshot with its columns in name order (so attribute order is the sorted order of agree-set
    names) and every value as its canonical string."""
    names = sorted(table.column_names)
    return pa.table({name: canonical_strings(table.column(name)) for name in names})
