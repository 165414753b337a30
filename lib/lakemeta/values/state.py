"""Column value sets as Delta state (``state/column_values``), the Spark side of ``lakemeta.values.hashes``.

Delta. In the run's one scan (``lakemeta.scan``), the executor tasks hash each sketched cell of a table's
changed rows by its canonical form (``lakemeta.hashing``, the hashes the HLL counters and Many use),
tally +1 per inserted and -1 per deleted row per (column, hash) of each slice with ``hashes.tally``, mark
the values that are integer literals, and emit the slice's rows at once; the component's delta sums them
per value.

Merge: the shared MERGE of signed counts (``catalog.counts.merge_counts``): counts are added, a value whose
count reaches zero leaves the set, a count that would turn negative stops the run before anything is written;
tables rebuilt from their snapshot, and dropped ones, have their values replaced.

Metric: ``n_distinct``, each column's exact number of distinct values (up to 64-bit hash collisions, see
``hashes``), beside the HLL estimate. Exact inclusion coefficients of small columns are derived from the
state by ``values.inclusion``.

Cost: one row per distinct value of each column, at most one per non-null cell (the posting lists keep
a row per cell, with the value itself and a super key); ``bench/bml_accuracy.py`` measures the rows and
bytes. Sketched columns are those of atomic types, as for the HLL counters.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import DataFrame
from pyspark.sql.types import BooleanType, LongType, StringType, StructField, StructType

from lakemeta.component import StateComponent, StateDelta
from lakemeta.hashing import ColumnHashes, integer_literals
from lakemeta.lake.batches import Plan
from lakemeta.lake.table_changes import SIGN, TableChange, TablePartial
from lakemeta.lake.tables import holds_plain_values, is_plain_type_name
from lakemeta.profile.state import ColumnProfile
from lakemeta.scan import BatchScan
from lakemeta.values import hashes as value_hashes

log = logging.getLogger(__name__)

KEYS = ["table_name", "column_name", "hash"]
SCHEMA = StructType(
    [
        StructField("table_name", StringType()),
        StructField("column_name", StringType()),
        StructField("hash", LongType()),  # the unsigned 64-bit hash's bits, as Delta has no unsigned type
        StructField("count", LongType()),
        # whether the value's canonical form is an integer literal (``hashing.integer_literals``): what
        # Many's integer filter reads (§3.2) without the values themselves
        StructField("integer", BooleanType()),
    ]
)
_NO_HASHES, _NO_COUNTS, _NO_FLAGS = np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.bool_)


class _ValuePartial(TablePartial):
    """A table's value-set delta, slice by slice: +1 per inserted and -1 per deleted row per (column, hash)
    of the slice, emitted at once (a value set grows with the table; the component's delta sums the
    slices' rows per value, as it sums a table's parts)."""

    def __init__(self, change: TableChange) -> None:
        super().__init__(change)
        self.columns = [f.name for f in change.schema.fields if holds_plain_values(f.dataType)]

    def add(self, rows: pa.Table, column_hashes: ColumnHashes) -> pa.Table:
        signs = rows[SIGN].to_numpy()
        tallies, integers = [], []
        for column in self.columns:
            hashes, valid = column_hashes[column]
            distinct, counts, at = value_hashes.tally(hashes[valid], signs[valid])
            tallies.append((distinct, counts))
            # only the distinct values of the slice are tested, each at a row that holds it
            integers.append(integer_literals(rows[column].take(np.flatnonzero(valid)[at])))
        n = [len(distinct) for distinct, _ in tallies]
        return pa.table(
            {
                "table_name": pa.array(np.full(sum(n), self.change.table_name, dtype=object), pa.string()),
                "column_name": pa.array(np.repeat(np.array(self.columns, dtype=object), n), pa.string()),
                "hash": pa.array(np.concatenate([d for d, _ in tallies] or [_NO_HASHES]).view(np.int64)),
                "count": pa.array(np.concatenate([c for _, c in tallies] or [_NO_COUNTS])),
                "integer": pa.array(np.concatenate(integers or [_NO_FLAGS])),
            }
        )

    def finish(self) -> None:
        return None


class ColumnValues(StateComponent):
    """The value set of every sketched column: its distinct value hashes with their row counts."""

    name = "column_values"
    schema = SCHEMA
    bucketed_by_table = True
    partial_schema = SCHEMA
    merge_keys = KEYS
    count_columns = ("count",)
    replace_columns = ("integer",)

    def partial(self) -> functools.partial[_ValuePartial]:
        return functools.partial(_ValuePartial)

    def delta(self, plan: Plan, partials: DataFrame) -> StateDelta:
        """The signed counts summed per value, as by default, each with its integer flag (a function of
        the value, so equal in every slice that holds it)."""
        summed = partials.groupBy(*KEYS).agg(F.sum("count").alias("count"), F.max("integer").alias("integer"))
        return StateDelta(summed.where(F.col("count") != 0), plan.replaced_tables)

    def delta_on_driver(self, plan: Plan, scan: BatchScan) -> StateDelta:
        summed = (
            scan.partials_on_driver(self).group_by(KEYS).aggregate([("count", "sum"), ("integer", "max")])
        )
        summed = summed.rename_columns([*KEYS, "count", "integer"])
        return StateDelta(summed.filter(pc.not_equal(summed["count"], 0)), plan.replaced_tables)

    def derive(self, tables: Sequence[str] | None = None) -> pa.Table:
        """``n_distinct``: the number of values in each column's set (of the columns of ``tables`` unless
        that is None); 0 for a sketched column without a non-null value, null for a nested one (not
        sketched)."""
        if self.reads_on_driver(tables):
            values = self.catalog.read_small(self.state_table(), tables, ["table_name", "column_name"])
            counted = values.group_by(["table_name", "column_name"]).aggregate([([], "count_all")])
            counted = counted.rename_columns(["table_name", "column_name", "n_distinct"])
        else:
            values = self.catalog.read(self.state_table(), tables)  # these tables' buckets alone
            counted = values.groupBy("table_name", "column_name").agg(F.count("*").alias("n_distinct"))
            counted = counted.toArrow()
        found = dict(
            zip(
                zip(counted["table_name"].to_pylist(), counted["column_name"].to_pylist(), strict=True),
                counted["n_distinct"].to_pylist(),
                strict=True,
            )
        )
        profile = self.catalog.read_small(ColumnProfile.state_table(), tables)
        keys = zip(profile["table_name"].to_pylist(), profile["column_name"].to_pylist(), strict=True)
        plain = [is_plain_type_name(t) for t in profile["data_type"].to_pylist()]
        counts = [found.get(key, 0) if is_plain else None for key, is_plain in zip(keys, plain, strict=True)]
        return pa.table(
            {
                "table_name": profile["table_name"],
                "column_name": profile["column_name"],
                "n_distinct": pa.array(counts, pa.int64()),
            }
        )
