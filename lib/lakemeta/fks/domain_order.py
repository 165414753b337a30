"""The order of a column's domain (Zhang et al. §3): numbers numerically, strings lexicographically, and
columns mixing both as ``sort -n`` orders them.

``sort -n`` compares the leading number of each value (a value without one counts as 0) and breaks ties
by comparing the whole values byte by byte (GNU sort's last-resort comparison). That one rule gives the
three cases: a numeric column sorts by number, a text column (every key 0) by its bytes, a mixed column as
``sort -n`` does. Values are the canonical strings of ``lakemeta.hashing.canonical``, so an integer key and
its decimal copy order alike; ISO dates sort by year and then by their text, which is chronological.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_LEADING_NUMBER = r"^\s*(?P<number>[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))"


def numeric_prefix(values: pa.Array) -> pa.Array:
    """The leading number of each string as a double, 0 where there is none (``sort -n``'s key)."""
    extracted = pc.extract_regex(values, _LEADING_NUMBER)
    numbers = pc.struct_field(extracted, "number")
    return pc.fill_null(pc.cast(numbers, pa.float64()), 0.0)


def order_ranks(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The distinct non-null values in domain order, and the rank of each input value among them
    (-1 for a null)."""
    distinct = pc.unique(pc.drop_null(values)).cast(pa.string())
    keyed = pa.table({"number": numeric_prefix(distinct), "text": distinct})
    ordered = distinct.take(pc.sort_indices(keyed, [("number", "ascending"), ("text", "ascending")]))
    ranks = pc.fill_null(pc.index_in(values.cast(pa.string()), value_set=ordered), -1)
    return ordered, ranks.to_numpy().astype(np.int64)
