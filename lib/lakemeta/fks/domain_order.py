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


DomainKeys = tuple[np.ndarray, np.ndarray]
"""Values' places in the domain order as two sort keys: their leading numbers (float64), then their texts
(an object array of strings, compared by code point as Arrow compares UTF-8 bytes)."""


def domain_keys(values: pa.Array) -> DomainKeys:
    """The ``DomainKeys`` of some values (no nulls)."""
    strings = values.cast(pa.string())
    texts = np.asarray(strings.to_numpy(zero_copy_only=False), dtype=object)
    return numeric_prefix(strings).to_numpy(zero_copy_only=False), texts


def count_below(bounds: DomainKeys, values: DomainKeys) -> np.ndarray:
    """For each value, how many of ``bounds`` (distinct, ascending in domain order) lie below it: its rank
    among them, as ``order_ranks`` over both would give, without sorting the values. Bounds of one leading
    number are ordered by their texts, where a value of that number is placed by its text."""
    bound_numbers, bound_texts = bounds
    numbers, texts = values
    below = np.searchsorted(bound_numbers, numbers, side="left")
    tied_end = np.searchsorted(bound_numbers, numbers, side="right")
    one = np.flatnonzero(tied_end - below == 1)  # one bound of the value's number: compare with it
    below[one] += bound_texts[below[one]] < texts[one]
    several = np.flatnonzero(tied_end - below > 1)
    starts = below[several]  # the first bound of each such value's number, before any is placed
    for start in np.unique(starts):  # a few numbers shared by several bounds (text keys: 0)
        at = several[starts == start]
        stop = tied_end[at[0]]
        below[at] = start + np.searchsorted(bound_texts[start:stop], texts[at], side="left")
    return below
