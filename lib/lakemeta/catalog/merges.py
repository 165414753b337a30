"""State merges computed on the driver, for a small batch.

A state component applies its delta with one Spark MERGE: ``catalog.counts.merge_counts``'s clauses add
counts, remove rows whose counts reach zero, refuse a count that would turn negative and put a replaced
table's rows in place of its stored ones; the posting lists' insert items and remove row ids. A MERGE costs a
one-table batch 10-16 Spark jobs and seconds of wall time, nearly all of it per statement rather than per row
(``bench/small_change.py``; docs/performance.md, "Measurements behind the code"). When the batch's delta
and the stored rows of its tables are small (``scan.driver_state_bytes``), the driver computes what those
clauses leave of the tables' rows, row for row, with Arrow (:func:`merged_counts`,
``joinsearch.state.merged_postings``), and the catalog writes them in place of the tables' stored rows in
one delta-rs commit (``Catalog.merge_small``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

NEGATIVE = "negative count"


class NegativeCountError(RuntimeError):
    """A delta would drive a stored count below zero: the state and the batch disagree."""


def negative_count_error(name: str, key: dict) -> NegativeCountError:
    """The error for state table ``name`` whose row ``key`` (its key columns' values) went below zero."""
    return NegativeCountError(
        f"{NEGATIVE} in {name} at {[key]}: the batch removes more occurrences than the state holds; "
        "rebuild the state (`lakemeta rebuild`)"
    )


def _joinable(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A key column as Arrow's hash join takes it: a list of strings (an agree set) as one string, each
    element prefixed by its length so that different lists never meet; other types as they are. A null
    stays null, which matches nothing, as SQL's ``=`` in the MERGE's condition."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not pa.types.is_list(array.type):
        return array
    values = array.values
    tagged = pc.binary_join_element_wise(pc.cast(pc.binary_length(values), pa.string()), values, ":")
    return pc.binary_join(pa.ListArray.from_arrays(array.offsets, tagged, mask=array.is_null()), "")


def _positions(rows: pa.Table, keys: Sequence[str], position: str) -> pa.Table:
    """The join keys of ``rows`` and each row's position in it."""
    columns = {f"_key{i}": _joinable(rows[key]) for i, key in enumerate(keys)}
    return pa.table({**columns, position: pa.array(np.arange(rows.num_rows, dtype=np.int64))})


def matched(rows: pa.Table, other: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """Which rows of ``rows`` have a row of ``other`` with equal ``keys``: a mask (a semi-join that keeps
    the columns Arrow's join cannot carry, lists among them)."""
    joined = _positions(rows, keys, "_rows").join(
        _positions(other, keys, "_other").select([f"_key{i}" for i in range(len(keys))]),
        [f"_key{i}" for i in range(len(keys))],
        join_type="left semi",
    )
    mask = np.zeros(rows.num_rows, dtype=bool)
    mask[joined["_rows"].to_numpy()] = True
    return mask


def merged_counts(
    name: str,
    stored: pa.Table,
    delta: pa.Table,
    keys: Sequence[str],
    counts: Sequence[str],
    replaced_tables: Sequence[str],
) -> pa.Table:
    """The rows of the tables of ``stored`` (the stored rows of the batch's tables, in the columns of
    ``delta``) and ``delta`` after ``catalog.counts.merge_counts``'s MERGE of ``delta`` into table ``name``:

    * a replaced table's rows are its rows in ``delta``;
    * of another table, a key on both sides gets the sums of the ``counts`` and ``delta``'s other
      columns (descriptive ones, as the MERGE's ``replace_columns``), and goes when every count sums to
      zero; a key in ``delta`` alone is inserted, one stored alone kept;
    * a count below zero (a sum, or a key in ``delta`` alone) raises :class:`NegativeCountError` naming
      the key, and nothing is to be written.
    """
    columns = delta.column_names
    replaced = pa.array(sorted(replaced_tables), pa.string())
    delta_replaced = pc.is_in(delta["table_name"], replaced)
    changing = delta.filter(pc.invert(delta_replaced))
    kept = stored.select(columns).filter(pc.invert(pc.is_in(stored["table_name"], replaced)))
    joined = _positions(changing, keys, "_delta").join(
        _positions(kept, keys, "_stored"), [f"_key{i}" for i in range(len(keys))], join_type="full outer"
    )
    in_delta = pc.is_valid(joined["_delta"])
    ours = changing.take(joined["_delta"])
    theirs = kept.take(joined["_stored"])
    summed = {c: pc.add(pc.fill_null(ours[c], 0), pc.fill_null(theirs[c], 0)) for c in counts}
    below_zero = np.zeros(joined.num_rows, dtype=bool)
    all_zero = np.ones(joined.num_rows, dtype=bool)
    for c in counts:
        below_zero |= pc.less(summed[c], 0).to_numpy(zero_copy_only=False)
        all_zero &= pc.equal(summed[c], 0).to_numpy(zero_copy_only=False)
    if below_zero.any():  # only a key of the delta can go below zero: stored counts are positive
        first = int(np.flatnonzero(below_zero)[0])
        raise negative_count_error(name, {key: ours[key][first].as_py() for key in keys})
    # Keys and descriptive columns from the delta where it has the key, else as stored.
    merged = pa.table(
        {c: summed[c] if c in summed else pc.if_else(in_delta, ours[c], theirs[c]) for c in columns}
    )
    # A key on both sides whose counts all sum to zero goes.
    both = pc.and_(in_delta, pc.is_valid(joined["_stored"])).to_numpy(zero_copy_only=False)
    merged = merged.filter(pa.array(~(both & all_zero)))
    return pa.concat_tables([merged, delta.filter(delta_replaced)])
