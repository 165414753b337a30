"""Exact inclusion coefficients Φ(X, Y) = |X ∩ Y| / |X| from the value sets of the state
(``state/column_values``), for pairs with a small side.

This is the hybrid BML §7 names as future work: an HLL sketch cannot tell whether a few values lie in a
column of millions (BML's Theorem 1: no sublinear sketch can), but the state holds every column's values
as 64-bit hashes. Where both columns are small the inclusion step's tiles hold both value sets and count
|X ∩ Y| themselves (``sketches.pair_tiles``); a small column against a large one is counted here, in Spark, by
joining the small column's values with the large one's: the work is min(|X|, |Y|) rows per pair, which is
why only pairs with a side of at most ``sketches.exact_max_distinct`` values are counted. |X| is the exact
distinct count of the value set. Counts are exact up to 64-bit hash collisions (``values.hashes``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyspark.sql.functions as F
from pyspark.sql import DataFrame

from lakemeta.catalog import Catalog
from lakemeta.spark.portable import arrow_frame
from lakemeta.values.state import ColumnValues

PAIR = ["dep_table", "dep_column", "ref_table", "ref_column"]


def countable(dep_distinct: np.ndarray, ref_distinct: np.ndarray, max_distinct: int) -> np.ndarray:
    """The pairs whose |X ∩ Y| is counted rather than estimated: both value sets known (not empty) and
    the smaller of at most ``max_distinct`` values (``sketches.exact_max_distinct``)."""
    smaller = np.minimum(dep_distinct, ref_distinct)
    return (smaller > 0) & (smaller <= max_distinct)


def value_sets(catalog: Catalog, columns: pa.Table) -> DataFrame:
    """The value hashes (``column``, ``hash``) of ``columns`` (``column``: an id, ``table_name``,
    ``column_name``; one row per column, small by construction), read in the executors."""
    ids = arrow_frame(catalog.spark, columns.select(["table_name", "column_name", "column"]))
    # by table name first: the value sets are partitioned by their buckets, and a filter of the scan
    # itself is what Spark prunes partitions by (a broadcast join's keys are not)
    stored = catalog.read(ColumnValues.state_table(), sorted(set(columns["table_name"].to_pylist())))
    return stored.join(F.broadcast(ids), ["table_name", "column_name"]).select("column", "hash")


def shared_values(catalog: Catalog, pairs: DataFrame, columns: pa.Table) -> DataFrame:
    """``pairs`` (``dep``, ``ref``: column ids, and their value sets' sizes ``dep_distinct`` and
    ``ref_distinct``) with ``shared`` = |X ∩ Y|, counted in the executors from the value sets of
    ``columns`` (every column of the pairs: ``value_sets``); the pairs never pass through the driver."""
    values = value_sets(catalog, columns)
    dep_smaller = F.col("dep_distinct") <= F.col("ref_distinct")
    asked = pairs.select(
        "dep",
        "ref",
        F.when(dep_smaller, F.col("dep")).otherwise(F.col("ref")).alias("probe"),
        F.when(dep_smaller, F.col("ref")).otherwise(F.col("dep")).alias("other"),
    )
    probed = values.withColumnRenamed("column", "probe").join(asked, "probe")
    other = values.withColumnRenamed("column", "other")
    present = probed.join(other, ["other", "hash"], "left_semi")
    shared = present.groupBy("dep", "ref").agg(F.count(F.lit(1)).alias("shared"))
    return pairs.join(shared, ["dep", "ref"], "left").fillna(0, ["shared"])
