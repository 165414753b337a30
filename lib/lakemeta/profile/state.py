"""Row and null counts per column as incremental state (``state/column_profile``).

The state is a sum: a batch adds, per column, its signed row count and signed null count; a table
rebuilt from its snapshot (``full`` batch) or dropped gets its rows replaced. The catalog's ``columns``
and ``tables`` are derived from it (see :mod:`lakemeta.catalog.refresh`). All tables of a run are
unpivoted into one long frame and aggregated in a single Spark job, so a lake of many small tables
costs one job, not one per table. The component follows the contract of :mod:`lakemeta.component`
(``docs/architecture.md``, "The state component contract").
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import DataFrame
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from lakemeta.catalog import Catalog
from lakemeta.component import StateComponent, StateDelta
from lakemeta.lake.batches import SIGN, BatchSize, Plan, changes, record_batch_sizes, union_all
from lakemeta.lake.tables import source_column

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
_COUNTS = ["n_rows", "n_nulls", "rows_inserted", "rows_deleted"]


def profile_delta(catalog: Catalog, lake: Path, plan: Plan) -> DataFrame:
    """Per (table, column): the change of n_rows and n_nulls, plus the batch's inserted/deleted rows.

    Every column of every batch's table gets a row, also when no row of it changed, so that a table
    rebuilt from an empty snapshot still lists its columns.
    """
    spark = catalog.spark
    frames = []
    columns = []
    for batch in plan.batches:
        if batch.kind == "drop":
            continue
        rows = changes(spark, lake, batch)
        fields = [field for field in rows.schema.fields if field.name != SIGN]
        columns.extend(
            (batch.table_name, field.name, ordinal, field.dataType.simpleString())
            for ordinal, field in enumerate(fields)
        )
        cells = F.explode(
            F.array(
                *[
                    F.struct(
                        F.lit(field.name).alias("column_name"),
                        F.lit(ordinal).alias("ordinal"),
                        F.lit(field.dataType.simpleString()).alias("data_type"),
                        source_column(field.name).isNull().alias("is_null"),
                    )
                    for ordinal, field in enumerate(fields)
                ]
            )
        )
        frames.append(rows.select(F.lit(batch.table_name).alias("table_name"), F.col(SIGN), cells.alias("c")))
    keys = ["table_name", "column_name", "ordinal", "data_type"]
    every_column = spark.createDataFrame(
        columns, "table_name string, column_name string, ordinal int, data_type string"
    )
    if not frames:
        return every_column.select(*keys, *[F.lit(0).cast("long").alias(c) for c in _COUNTS])
    long = union_all(frames).select("table_name", "c.*", SIGN)
    counted = long.groupBy(*keys).agg(
        F.sum(SIGN).cast("long").alias("n_rows"),
        F.sum(F.when(F.col("is_null"), F.col(SIGN)).otherwise(0)).cast("long").alias("n_nulls"),
        F.sum(F.when(F.col(SIGN) > 0, 1).otherwise(0)).cast("long").alias("rows_inserted"),
        F.sum(F.when(F.col(SIGN) < 0, 1).otherwise(0)).cast("long").alias("rows_deleted"),
    )
    return every_column.join(counted, keys, "left").select(
        *keys, *[F.coalesce(F.col(c), F.lit(0)).cast("long").alias(c) for c in _COUNTS]
    )


@dataclass(frozen=True)
class ProfileDelta(StateDelta):
    """The profile's delta, with the per-column counts it was built from (``profile_delta``, collected):
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

    def delta(self, plan: Plan) -> ProfileDelta:
        # A row per column of the changed tables: small by construction, and collected once so that the
        # sizes and the MERGE do not recompute the scan of every batch.
        counted = profile_delta(self.catalog, self.lake, plan).toArrow()
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
