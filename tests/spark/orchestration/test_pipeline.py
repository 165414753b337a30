"""Incremental state equals a rebuild from the final snapshot (exactly-once across crashes:
test_crash_recovery), and a run over an unchanged lake does nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lakemeta.config import Config, FkConfig, ScanConfig
from lakemeta.lake.batches import Plan
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.registry import DERIVED_TABLES, DISCOVERY_STEPS, all_schemas, state_schemas
from lakemeta.show import freshness_rows
from lakemeta.storage import Location

from ..lake_changes import (
    append_rows,
    create_foreign_table,
    create_spark_table,
    drop_table,
    process,
    random_change,
    random_rows,
    state_rows,
)
from ..test_crash_recovery import run_killed_at

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# State tables whose content is a function of the lake's snapshot (state/batches records history).
SNAPSHOT_STATE = sorted(state_schemas())


def run_state(pipeline: Pipeline) -> Plan | None:
    """A run of every state component and the commit; the discoveries, which read the state but never
    change it, are left out."""
    return process(pipeline, *(c.name for c in pipeline.components()))


def rebuilt(spark, lake: Path, tmp_path: Path) -> Pipeline:
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "rebuilt-catalog"))
    run_state(pipeline)
    return pipeline


@pytest.mark.parametrize("seed", [1])
def test_random_batches_incremental_equals_rebuild(spark, tmp_path: Path, seed: int):
    rng = np.random.default_rng(seed)
    lake = tmp_path / "lake"
    create_spark_table(spark, lake / "a", random_rows(rng, 8))
    create_spark_table(spark, lake / "web" / "b", random_rows(rng, 5))
    create_foreign_table(lake / "foreign", random_rows(rng, 6))
    # Every batch merged by Spark's MERGE here, where the rebuild and the components' own tests merge these
    # small batches on the driver (``scan.driver_state_bytes``): the two ways must leave the same state.
    through_spark = Config(lake=lake, catalog=tmp_path / "catalog", scan=ScanConfig(driver_state_bytes=0))
    pipeline = Pipeline(spark, through_spark)
    run_state(pipeline)
    applied = []
    for step in range(2):
        for name in ("a", "web/b", "foreign"):
            if step == 0 or rng.random() < 0.6:  # every table changes once: the change feed and a diff
                applied.append(random_change(spark, rng, lake / name, foreign=name == "foreign"))
        if rng.random() < 0.7:  # sometimes several versions accumulate into one batch
            run_state(pipeline)
    create_spark_table(spark, lake / "late", random_rows(rng, 4))
    drop_table(lake / "web" / "b")
    run_state(pipeline)
    reference = rebuilt(spark, lake, tmp_path)
    for name in SNAPSHOT_STATE:
        assert state_rows(pipeline, name) == state_rows(reference, name), (name, applied)
    for name in ("tables", "columns"):
        columns = [c for c in all_schemas()[name].fieldNames() if c != "updated_at"]
        ours = sorted(tuple(r) for r in pipeline.catalog.read(name).select(*columns).collect())
        assert ours == sorted(tuple(r) for r in reference.catalog.read(name).select(*columns).collect())
    assert {b.source for b in _all_batches(pipeline)} >= {"cdf", "diff", "snapshot", "dropped"}


def _all_batches(pipeline: Pipeline) -> list:
    return pipeline.catalog.read("state/batches").collect()


def test_renamed_and_dropped_columns_replace_the_table_s_state(spark, tmp_path: Path):
    """Under Delta column mapping a column is renamed and another dropped in place (the data files keep
    their physical names): the batch replaces the table's state, which then equals a rebuild's."""
    rng = np.random.default_rng(4)
    lake = tmp_path / "lake"
    create_spark_table(spark, lake / "t", random_rows(rng, 8))
    table = f"delta.`{lake / 't'}`"
    spark.sql(
        f"ALTER TABLE {table} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
        "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')"
    )
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog"))
    run_state(pipeline)
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN name TO label")
    spark.sql(f"ALTER TABLE {table} DROP COLUMN score")
    spark.sql(f"INSERT INTO {table} VALUES (99, 'new')")
    plan = run_state(pipeline)
    assert [(b.kind, b.source) for b in plan.batches] == [("full", "snapshot")]
    columns = pipeline.catalog.read_small("columns")
    assert sorted(columns["column_name"].to_pylist()) == ["id", "label"]
    reference = rebuilt(spark, lake, tmp_path)
    for name in SNAPSHOT_STATE:
        assert state_rows(pipeline, name) == state_rows(reference, name), name


ZOO = """SELECT
  id,
  parse_json(concat('{"a":', id, '}')) AS v,
  CAST(id AS DECIMAL(38,10)) * CAST('12345678901234567890.5' AS DECIMAL(38,10)) AS big,
  CASE id % 4 WHEN 0 THEN double('NaN') WHEN 1 THEN double('Infinity') WHEN 2 THEN -0.0 ELSE 1.5 END AS d,
  CAST(timestamp'2024-01-01 10:00:00' AS TIMESTAMP_NTZ) + make_interval(0, 0, 0, 0, id) AS ts_ntz,
  timestamp'2024-01-01 10:00:00' + make_interval(0, 0, 0, id) AS ts,
  date'2024-02-29' AS day,
  CAST(CAST(id AS STRING) AS BINARY) AS bin,
  id % 2 = 0 AS flag,
  array(id, id + 1) AS arr,
  map('k', id) AS m,
  named_struct('x', id, 'y', 'a') AS s,
  CAST(id AS TINYINT) AS tiny,
  CAST(id / 3 AS FLOAT) AS f
FROM range(20)"""


def test_every_column_type_goes_through_the_pipeline_and_incremental_equals_rebuild(spark, tmp_path: Path):
    """VARIANT, maps, structs and arrays are carried but not sketched or indexed; 38-digit decimals, NaN,
    infinity, -0.0, timestamps with and without zone, binary, booleans, tinyint and float are values. A
    table with maps and no change feed is replanned whole (rows holding maps cannot be diffed)."""
    lake = tmp_path / "lake"
    feed = "TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')"
    for name, properties in (("zoo", ""), ("zoo_feed", feed)):
        spark.sql(f"CREATE TABLE delta.`{lake / name}` USING delta {properties} AS {ZOO}")
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog"))
    pipeline.run()
    for name in ("zoo", "zoo_feed"):
        spark.sql(f"UPDATE delta.`{lake / name}` SET id = id + 100, d = double('-Infinity') WHERE id < 5")
        spark.sql(f"DELETE FROM delta.`{lake / name}` WHERE id = 7")
    plan = pipeline.run()
    assert {b.table_name: (b.kind, b.source) for b in plan.batches} == {
        "zoo": ("full", "snapshot"),
        "zoo_feed": ("incremental", "cdf"),
    }
    assert pipeline.audit().success
    columns = pipeline.catalog.read_small("columns").to_pylist()
    distinct = {(c["table_name"], c["column_name"]): c["n_distinct_estimate"] for c in columns}
    for table in ("zoo", "zoo_feed"):
        assert [distinct[table, c] for c in ("v", "arr", "m", "s")] == [None] * 4
        assert distinct[table, "d"] == 5  # NaN, Infinity, 0 (-0.0 too), 1.5, -Infinity
        assert distinct[table, "id"] == 19
    reference = rebuilt(spark, lake, tmp_path)
    for name in SNAPSHOT_STATE:
        assert state_rows(pipeline, name) == state_rows(reference, name), name


def catalog_versions(catalog: Path) -> dict[str, int]:
    return {name: Location.parse(catalog / name).delta_table().version() for name in all_schemas()}


def test_an_unchanged_lake_opens_no_run_and_writes_nothing(spark, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    lake, catalog = tmp_path / "lake", tmp_path / "catalog"
    create_foreign_table(lake / "a", random_rows(rng, 8))
    create_foreign_table(lake / "b", random_rows(rng, 5))
    config = Config(lake=lake, catalog=catalog)
    first = Pipeline(spark, config).run()
    assert first is not None and len(first.batches) == 2
    # Without a Spark session: any Spark work would raise, so planning and the check read logs only.
    unchanged = Pipeline(None, config)
    assert unchanged.stale_results() == []
    freshness = freshness_rows(config).to_pylist()  # `lakemeta show freshness`, from the same records
    assert [row["result"] for row in freshness] == [DERIVED_TABLES, *(step.name for step in DISCOVERY_STEPS)]
    assert all(row["current"] and row["run_id"] == first.run_id for row in freshness)
    versions = catalog_versions(catalog)
    assert unchanged.discover("inclusion_dependencies", if_stale=True) == []  # as the DAG task runs it
    assert Pipeline(spark, config).run() is None
    assert catalog_versions(catalog) == versions  # no run, no result, no record written

    # Other settings: the results computed with them are stale, the state is not.
    stricter = Config(lake=lake, catalog=catalog, fks=FkConfig(inclusion_threshold=0.95))
    discovery = [step.name for step in DISCOVERY_STEPS]  # the keys too: all tables', with the new settings
    assert Pipeline(None, stricter).stale_results() == [DERIVED_TABLES, *discovery]
    assert not any(row["settings_current"] or row["current"] for row in freshness_rows(stricter).to_pylist())
    assert Pipeline(spark, stricter).discover("inclusion_dependencies", if_stale=True) == [
        "inclusion_dependencies"
    ]
    assert "inclusion_dependencies" not in Pipeline(None, stricter).stale_results()
    assert Pipeline(spark, stricter).run() is None
    assert Pipeline(None, stricter).stale_results() == []
    runs = Location.parse(catalog / "runs").delta_table().to_pyarrow_table()
    assert runs["run_id"].to_pylist() == [first.run_id]

    append_rows(spark, lake / "b", random_rows(rng, 2), foreign=True)
    assert Pipeline(None, stricter).stale_results() == []  # a change is a batch to plan, not a stale result
    second = Pipeline(spark, stricter).run()
    assert second is not None and [b.table_name for b in second.batches] == ["b"]
    assert Pipeline(None, stricter).stale_results() == []
    assert Pipeline(None, config).stale_results() == [DERIVED_TABLES, *discovery]


def test_a_commit_that_died_after_its_watermarks_is_finished_by_the_next_run(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watermarks are committed, so the next run plans nothing; the catalog tables the commit derives
    from the state were not refreshed, and the run refreshes them."""
    rng = np.random.default_rng(4)
    lake, catalog = tmp_path / "lake", tmp_path / "catalog"
    create_foreign_table(lake / "a", random_rows(rng, 6))
    config = Config(lake=lake, catalog=catalog)

    run_killed_at(Pipeline(spark, config), "before replace tables", monkeypatch)
    assert Pipeline(None, config).detect_batches() is None
    assert Pipeline(None, config).stale_results()[0] == DERIVED_TABLES
    assert Pipeline(spark, config).run() is None
    tables = Location.parse(catalog / "tables").delta_table().to_pyarrow_table()
    assert tables.select(["table_name", "n_rows"]).to_pylist() == [{"table_name": "a", "n_rows": 6}]
