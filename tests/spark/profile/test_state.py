"""The column profile (row and null counts per column) after a change feed batch and a schema change, and
the runs, tables and batch sizes the commit derives from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakemeta.config import Config
from lakemeta.orchestration.pipeline import Pipeline

from ..lake_changes import create_spark_table, process, state_rows

pytestmark = pytest.mark.spark


def test_profile_counts_match_the_snapshot(spark, tmp_path: Path):
    lake = tmp_path / "lake"
    rows = [(1, "x", None), (1, "x", None), (None, None, 2.0), (3, "y", 1.0)]
    create_spark_table(spark, lake / "t", rows)
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog"))
    process(pipeline, "column_profile")
    spark.sql(f"UPDATE delta.`{lake / 't'}` SET name = NULL WHERE id = 3")
    spark.sql(f"DELETE FROM delta.`{lake / 't'}` WHERE id IS NULL")
    plan = process(pipeline, "column_profile")
    assert [(b.kind, b.source) for b in plan.batches] == [("incremental", "cdf")]
    profile = state_rows(pipeline, "state/column_profile")
    assert profile == [
        ("t", "id", 0, "bigint", 3, 0),
        ("t", "name", 1, "string", 3, 1),
        ("t", "score", 2, "double", 3, 2),
    ]
    run = pipeline.catalog.read("runs").where("run_id = 2").first()
    # the update is a delete plus an insert; the delete removes one row
    assert (run.status, run.tables_changed, run.rows_inserted, run.rows_deleted) == ("succeeded", 1, 1, 2)
    table = pipeline.catalog.read("tables").first()
    assert (table.table_name, table.n_rows, table.n_columns, table.last_version) == ("t", 3, 3, 2)


def test_schema_change_rebuilds_the_table_and_rebuild_command_resets(spark, tmp_path: Path):
    lake = tmp_path / "lake"
    create_spark_table(spark, lake / "t", [(1, "a", 1.0)])
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog"))
    process(pipeline, "column_profile")
    spark.createDataFrame([(5, "z")], "id long, other string").write.format("delta").mode("overwrite").option(
        "overwriteSchema", "true"
    ).save(str(lake / "t"))
    plan = process(pipeline, "column_profile")
    assert [(b.kind, b.source) for b in plan.batches] == [("full", "snapshot")]
    assert state_rows(pipeline, "state/column_profile") == [
        ("t", "id", 0, "bigint", 1, 0),
        ("t", "other", 1, "string", 1, 0),
    ]
    rebuilt_plan = pipeline.rebuild()
    assert [b.kind for b in rebuilt_plan.batches] == ["full"]
    assert state_rows(pipeline, "state/column_profile") == [
        ("t", "id", 0, "bigint", 1, 0),
        ("t", "other", 1, "string", 1, 0),
    ]
