"""Row and null counts per column as incremental state (``state/column_profile``).

The state is a sum: a batch adds, per column, its signed row count and signed null count; a table
rebuilt from its snapshot (``full`` batch) or dropped gets its rows replaced. The catalog's ``columns``
and ``tables`` are derived from it (see :mod:`lakemeta.catalog.refresh`). The counts are taken in the
run's one scan (``lakemeta.scan``), table by table inside its tasks. The component follows the contract
of :mod:`lakemeta.component` (``docs/architecture.md``, "The state component contract").
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import DataFrame
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from lakemeta.component import StateComponent, StateDelta
from lakemeta.hashing import ColumnHashes
from lakemeta.lake.batches import BatchSize, Plan, record_batch_sizes
from lakemeta.lake.table_changes import SIGN, TableChange, TablePartial
from lakemeta.scan import BatchScan

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


# The profile's delta: per column of the batch's tables, the sums of its partial rows' counts.
_PER_COLUMN = ["table_name", "column_name", "ordinal", "data_type"]
_SUMMED = ["n_rows", "n_nulls", "rows_inserted", "rows_deleted"]


@dataclass(frozen=True)
class ProfileDelta(StateDelta):
    """The profile's delta: ``rows`` (Arrow, the state's schema) are the batch's counts per column, and
    ``counted`` the same rows with the batch's inserted and deleted rows, from which its sizes are read."""

    counted: pa.Table


class ColumnProfile(StateComponent):
    """Row and null counts per column; its update also records each batch's size (``state/batches``).

    The state is a row per column, small by construction like the catalog's ``columns``: its delta is
    collected and merged on the driver with delta-rs (``updated_counts``, ``Catalog.merge_small``). The
    shared Spark MERGE of counts cost a small batch 14 Spark jobs and seconds, the most of any state update
    (docs/performance.md, "Measurements behind the code").
    """

    name = "column_profile"
    schema = SCHEMA
    config_section = None
    partial_schema = PARTIAL_SCHEMA

    def partial(self) -> type[_ProfilePartial]:
        return _ProfilePartial

    def delta(self, plan: Plan, partials: DataFrame) -> ProfileDelta:
        # A row per column of the changed tables (summed over the parts of a table read in parts).
        sums = [F.sum(c).cast("long").alias(c) for c in _SUMMED]
        return self._delta(plan, partials.groupBy(*_PER_COLUMN).agg(*sums).toArrow())

    def delta_on_driver(self, plan: Plan, scan: BatchScan) -> ProfileDelta:
        summed = scan.partials_on_driver(self).group_by(_PER_COLUMN).aggregate([(c, "sum") for c in _SUMMED])
        return self._delta(plan, summed.rename_columns([*_PER_COLUMN, *_SUMMED]))

    def _delta(self, plan: Plan, counted: pa.Table) -> ProfileDelta:
        rows = counted.select(SCHEMA.fieldNames()).cast(self.catalog.arrow_schema(self.state_table()))
        return ProfileDelta(rows, plan.replaced_tables, counted)

    def merge(self, plan: Plan, delta: ProfileDelta) -> bool:  # type: ignore[override]
        """Record the batch sizes, then put the changed tables' counts in place in one commit tagged with
        the run."""
        # Sizes are recorded before the merge: a replaced table's previous row count is read from the state
        # the merge overwrites, and a retry keeps the sizes the first attempt recorded.
        tables = sorted(set(plan.tables) | set(delta.replaced_tables))
        stored = self.catalog.read_small(self.state_table(), tables)
        sizes = _batch_sizes(plan, delta.counted, stored)
        record_batch_sizes(self.catalog, plan.run_id, sizes)
        merged = self.catalog.merge_small(
            self.state_table(),
            tables,
            self.txn(plan),
            lambda stored: updated_counts(stored, delta.rows, delta.replaced_tables),
        )
        log.info(
            "run %d: column profiles updated for %d tables, %d columns (%d rows inserted, %d deleted)",
            plan.run_id,
            len(plan.batches),
            delta.rows.num_rows,
            sum(s.rows_inserted for s in sizes),
            sum(s.rows_deleted for s in sizes),
        )
        return merged


def updated_counts(stored: pa.Table, delta: pa.Table, replaced_tables: Sequence[str]) -> pa.Table:
    """The profile rows of the tables of ``stored`` and ``delta`` after the batch, as the shared MERGE of
    counts leaves them (``catalog.counts.merge_counts``): a replaced table's rows are the delta's; another
    table's, per column, the stored counts plus the delta's, with the delta's ordinal and data type (a
    column on one side alone as it is there). Sorted by table and ordinal."""
    names = SCHEMA.fieldNames()
    replaced = pc.is_in(stored["table_name"], pa.array(list(replaced_tables), pa.string()))
    kept = stored.filter(pc.invert(replaced)).select(names)
    joined = delta.select(names).join(
        kept, ["table_name", "column_name"], join_type="full outer", right_suffix="_stored"
    )

    def either(column: str) -> pa.ChunkedArray:
        return pc.coalesce(joined[column], joined[f"{column}_stored"])

    def summed(column: str) -> pa.ChunkedArray:
        return pc.add(pc.fill_null(joined[column], 0), pc.fill_null(joined[f"{column}_stored"], 0))

    rows = pa.table(
        {
            "table_name": joined["table_name"],
            "column_name": joined["column_name"],
            "ordinal": either("ordinal"),
            "data_type": either("data_type"),
            "n_rows": summed("n_rows"),
            "n_nulls": summed("n_nulls"),
        }
    )
    return rows.sort_by([("table_name", "ascending"), ("ordinal", "ascending")])


def _batch_sizes(plan: Plan, delta: pa.Table, stored: pa.Table) -> list[BatchSize]:
    """Rows inserted and deleted per table; a replaced table's previous rows (in ``stored``, the state's
    rows of the plan's tables) count as deleted."""
    first_column = delta.filter(pc.equal(delta["ordinal"], 0))
    counted = {
        row["table_name"]: (row["rows_inserted"], row["rows_deleted"])
        for row in first_column.select(["table_name", "rows_inserted", "rows_deleted"]).to_pylist()
    }
    replaced = plan.replaced_tables
    previous: dict[str, int] = {}
    if replaced:
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
