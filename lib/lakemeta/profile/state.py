"""Row and null counts per column as incremental state (``state/column_profile``).

The state is a sum: a batch adds, per column, its signed row count and signed null count; a table
rebuilt from its snapshot (``full`` batch) or dropped gets its rows replaced. The catalog's ``columns``
and ``tables`` are derived from it (see :mod:`lakemeta.catalog.refresh`). The counts are taken in the
run's one scan (``lakemeta.scan``), table by table inside its tasks. The component follows the contract
of :mod:`lakemeta.component` (``docs/architecture.md``, "The state component contract").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import DataFrame
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from lakemeta.catalog import Catalog
from lakemeta.component import StateComponent, StateDelta
from lakemeta.hashing import ColumnHashes
from lakemeta.lake.batches import BatchSize, Plan, record_batch_sizes
from lakemeta.lake.table_changes import SIGN, TableChange, TablePartial

log = logging.getLogger(__name__)

SCHEMA = StructType(
    [
        StructField("table_name", StringType()),
        StructField("column_name", StringType()),
        StructField("ordinal", IntegerType()),
        StructField("data_type", StringType()),
        StructField("n_rows", LongType()),
        StructField("n_nulls", LongType()),
    ]
)
# Per table and column, what one batch changes: the state's counts and the batch's inserted and deleted rows.
PARTIAL_SCHEMA = StructType(
    [*SCHEMA.fields, StructField("rows_inserted", LongType()), StructField("rows_deleted", LongType())]
)


class _ProfilePartial(TablePartial):
    """A table's signed row and null counts per column, and its inserted and deleted rows. Every column
    of the table gets a row, also when no row of it changed, so that a table rebuilt from an empty
    snapshot still lists its columns."""

    def __init__(self, change: TableChange) -> None:
        super().__init__(change)
        self.fields = change.schema.fields
        self.n_nulls = np.zeros(len(self.fields), dtype=np.int64)
        self.n_rows = self.inserted = self.deleted = 0

    def add(self, rows: pa.Table, hashes: ColumnHashes) -> None:
        signs = rows[SIGN].to_numpy()
        self.n_rows += int(signs.sum())
        self.inserted += int((signs > 0).sum())
        self.deleted += int((signs < 0).sum())
        for i, field in enumerate(self.fields):
            column = rows[field.name]
            if column.null_count:
                self.n_nulls[i] += int(signs[column.is_null().to_numpy(zero_copy_only=False)].sum())

    def finish(self) -> pa.Table:
        n = len(self.fields)
        return pa.table(
            {
                "table_name": [self.change.table_name] * n,
                "column_name": [field.name for field in self.fields],
                "ordinal": pa.array(range(n), pa.int32()),
                "data_type": [field.dataType.simpleString() for field in self.fields],
                "n_rows": pa.array(np.full(n, self.n_rows), pa.int64()),
                "n_nulls": pa.array(self.n_nulls),
                "rows_inserted": pa.array(np.full(n, self.inserted), pa.int64()),
                "rows_deleted": pa.array(np.full(n, self.deleted), pa.int64()),
            }
        )


@dataclass(frozen=True)
class ProfileDelta(StateDelta):
    """The profile's delta, with the per-column counts it was built from (the scan's partial rows, collected):
    the batch sizes are read from them."""

    counted: pa.Table


class ColumnProfile(StateComponent):
    """Row and null counts per column; its update also records each batch's size (``state/batches``)."""

    name = "column_profile"
    schema = SCHEMA
    config_section = None
    merge_keys = ("table_name", "column_name")
    count_columns = ("n_rows", "n_nulls")
    drop_zero = False
    replace_columns = ("ordinal", "data_type")

    partial_schema = PARTIAL_SCHEMA

    def partial(self) -> type[_ProfilePartial]:
        return _ProfilePartial

    def delta(self, plan: Plan, partials: DataFrame) -> ProfileDelta:
        # A row per column of the changed tables (summed over the parts of a table read in parts): small by
        # construction, and collected once for the sizes and the MERGE.
        keys = ["table_name", "column_name", "ordinal", "data_type"]
        sums = [
            F.sum(c).cast("long").alias(c) for c in ("n_rows", "n_nulls", "rows_inserted", "rows_deleted")
        ]
        counted = partials.groupBy(*keys).agg(*sums).toArrow()
        rows = self.catalog.spark.createDataFrame(counted.select(SCHEMA.fieldNames()).to_pandas(), SCHEMA)
        return ProfileDelta(rows, plan.replaced_tables, counted)

    def merge(self, plan: Plan, delta: ProfileDelta) -> bool:
        # Sizes are recorded before the merge: a replaced table's previous row count is read from the state
        # the merge overwrites, and a retry keeps the sizes the first attempt recorded.
        sizes = _batch_sizes(self.catalog, plan, delta.counted)
        record_batch_sizes(self.catalog, plan.run_id, sizes)
        merged = super().merge(plan, delta)
        log.info(
            "run %d: column profiles updated for %d tables (%d rows inserted, %d deleted)",
            plan.run_id,
            len(plan.batches),
            sum(s.rows_inserted for s in sizes),
            sum(s.rows_deleted for s in sizes),
        )
        return merged


def _batch_sizes(catalog: Catalog, plan: Plan, delta: pa.Table) -> list[BatchSize]:
    """Rows inserted and deleted per table; a replaced table's previous rows count as deleted."""
    first_column = delta.filter(pc.equal(delta["ordinal"], 0))
    counted = {
        row["table_name"]: (row["rows_inserted"], row["rows_deleted"])
        for row in first_column.select(["table_name", "rows_inserted", "rows_deleted"]).to_pylist()
    }
    replaced = plan.replaced_tables
    previous: dict[str, int] = {}
    if replaced:
        stored = catalog.read_small(ColumnProfile.state_table())
        first_columns = stored.filter(
            pc.and_(pc.is_in(stored["table_name"], pa.array(replaced)), pc.equal(stored["ordinal"], 0))
        )
        previous = dict(
            zip(first_columns["table_name"].to_pylist(), first_columns["n_rows"].to_pylist(), strict=True)
        )
    sizes = []
    for batch in plan.batches:
        inserted, deleted = counted.get(batch.table_name, (0, 0))
        if batch.replaces_state:
            deleted = previous.get(batch.table_name, 0)
        sizes.append(BatchSize(batch.table_name, inserted, deleted))
    return sizes
