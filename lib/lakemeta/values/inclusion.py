"""Exact inclusion coefficients Φ(X, Y) = |X ∩ Y| / |X| from the value sets of the state
(``state/column_values``), for pairs with a small side.

This is the hybrid BML §7 names as future work: an HLL sketch cannot tell whether a few values lie in a
column of millions (BML's Theorem 1: no sublinear sketch can), but the state holds every column's values
as 64-bit hashes. |X ∩ Y| is counted in Spark by joining the values of the pair's smaller column with the
larger one's: the work is min(|X|, |Y|) rows per pair, which is why only pairs with a side of at most
``sketches.exact_max_distinct`` values are counted (``sketches.discover``). |X| is the exact distinct
count of the value set. Counts are exact up to 64-bit hash collisions (``values.hashes``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import DataFrame

from lakemeta.catalog import Catalog
from lakemeta.spark.jobs import arrow_frame, describe_jobs
from lakemeta.values.state import ColumnValues

PAIR = ["dep_table", "dep_column", "ref_table", "ref_column"]


def countable(dep_distinct: np.ndarray, ref_distinct: np.ndarray, max_distinct: int) -> np.ndarray:
    """The pairs whose |X ∩ Y| is counted rather than estimated: both value sets known (not empty) and
    the smaller of at most ``max_distinct`` values (``sketches.exact_max_distinct``)."""
    smaller = np.minimum(dep_distinct, ref_distinct)
    return (smaller > 0) & (smaller <= max_distinct)


def shared_values(catalog: Catalog, pairs: pa.Table, driver_state_bytes: int = 0) -> np.ndarray:
    """|X ∩ Y| of each pair of ``pairs`` (``PAIR`` columns, and ``dep_distinct`` / ``ref_distinct``: the
    exact sizes of the two value sets), in its order: in Spark, or on the driver where the value sets of
    the pairs' tables are small (``Catalog.reads_on_driver``)."""
    if not len(pairs):
        return np.zeros(0, np.int64)
    dep_smaller = pa.array(pairs["dep_distinct"].to_numpy() <= pairs["ref_distinct"].to_numpy(), pa.bool_())
    sides = {
        side: pc.if_else(dep_smaller, pairs[f"{first}_{part}"], pairs[f"{second}_{part}"])
        for side, first, second, part in (
            ("probe_table", "dep", "ref", "table"),
            ("probe_column", "dep", "ref", "column"),
            ("other_table", "ref", "dep", "table"),
            ("other_column", "ref", "dep", "column"),
        )
    }
    asked_pairs = pa.table({"pair": np.arange(len(pairs)), **sides})
    tables = sorted(set(sides["probe_table"].to_pylist()) | set(sides["other_table"].to_pylist()))
    if catalog.reads_on_driver(ColumnValues.state_table(), tables, driver_state_bytes):
        values = catalog.read_small(ColumnValues.state_table(), tables, ["table_name", "column_name", "hash"])
        counted = _shared_on_driver(values, asked_pairs)
    else:
        counted = _shared_in_spark(catalog, asked_pairs, pairs)
    shared = np.zeros(len(pairs), np.int64)
    shared[counted["pair"].to_numpy()] = counted["shared"].to_numpy()
    return shared


def _shared_on_driver(values: pa.Table, asked_pairs: pa.Table) -> pa.Table:
    """Per pair of ``asked_pairs`` with a shared value: ``pair`` and ``shared``, from ``values`` (the value
    sets of the pairs' tables)."""
    probed = values.join(
        asked_pairs.select(["pair", "probe_table", "probe_column"]),
        ["table_name", "column_name"],
        right_keys=["probe_table", "probe_column"],
    ).join(asked_pairs.select(["pair", "other_table", "other_column"]), "pair")
    other = values.rename_columns(["other_table", "other_column", "hash"])
    present = probed.join(other, ["other_table", "other_column", "hash"], join_type="left semi")
    return present.group_by("pair").aggregate([([], "count_all")]).rename_columns(["pair", "shared"])


def _shared_in_spark(catalog: Catalog, asked_pairs: pa.Table, pairs: pa.Table) -> pa.Table:
    """``_shared_on_driver``'s rows, counted by Spark from the stored value sets."""
    spark = catalog.spark
    asked = arrow_frame(spark, asked_pairs)
    describe_jobs(
        spark,
        f"exact inclusion of {len(pairs)} column pairs from the value sets "
        f"({int(np.minimum(pairs['dep_distinct'], pairs['ref_distinct']).sum())} values probed)",
    )

    def of_columns(table: str, column: str) -> DataFrame:
        # read through the tables' names first: the value sets are partitioned by their buckets, and a
        # filter of the scan itself is what Spark prunes partitions by (a broadcast join's keys are not)
        values = catalog.read(ColumnValues.state_table(), asked_pairs[table].to_pylist())
        wanted = asked.select(table, column).distinct()
        on = (values.table_name == wanted[table]) & (values.column_name == wanted[column])
        found = values.select("table_name", "column_name", "hash").join(F.broadcast(wanted), on, "left_semi")
        return found.select(F.col("table_name").alias(table), F.col("column_name").alias(column), "hash")

    probed = of_columns("probe_table", "probe_column")
    other = of_columns("other_table", "other_column").withColumn("present", F.lit(1))
    return (
        probed.join(asked, ["probe_table", "probe_column"])
        .join(other, ["other_table", "other_column", "hash"], "left")
        .groupBy("pair")
        .agg(F.count("present").alias("shared"))
        .toArrow()
    )
