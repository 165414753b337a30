"""The catalog's `tables` and `columns`, derived from state (state and metrics kept apart, as Deequ does).

Both are small (a row per table or column) and recomputed whole from the state after each run, which
keeps them exactly in step with the state whatever happened before.
"""

from __future__ import annotations

import logging

import pyspark.sql.functions as F
from pyspark.sql import Window

from lakemeta.catalog.store import Catalog

log = logging.getLogger(__name__)


def refresh_tables_and_columns(catalog: Catalog) -> None:
    profile = catalog.read("state/column_profile")
    columns = profile.select(
        "table_name",
        "column_name",
        "ordinal",
        "data_type",
        "n_rows",
        "n_nulls",
        F.lit(None).cast("long").alias("n_distinct_estimate"),
        F.lit(None).cast("boolean").alias("is_unique"),
    )
    latest = Window.partitionBy("table_name").orderBy(F.col("run_id").desc())
    committed = (
        catalog.read("state/batches")
        .where(F.col("committed") & (F.col("kind") != "drop"))
        .withColumn("_rank", F.row_number().over(latest))
        .where(F.col("_rank") == 1)
        .join(catalog.read("runs").select("run_id", "finished_at"), "run_id", "left")
        .select(
            "table_name", F.col("to_version").alias("last_version"), F.col("finished_at").alias("updated_at")
        )
    )
    tables = (
        profile.groupBy("table_name")
        .agg(F.max("n_rows").alias("n_rows"), F.count("*").cast("int").alias("n_columns"))
        .join(committed, "table_name", "inner")
    )
    catalog.overwrite("columns", columns)
    catalog.overwrite("tables", tables)
    counts = catalog.read("tables").agg(F.count("*"), F.sum("n_columns")).first()
    log.info("catalog refreshed: %d tables, %d columns", counts[0], counts[1] or 0)
