"""The run's one scan: every changed table read once for all state components, tables that other engines
wrote read as they are, and a table that cannot be read failing alone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from lakemeta.config import Config, load_config
from lakemeta.lake.snapshots import file_groups
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.registry import STATE_COMPONENTS
from lakemeta.scan import STAGING, BatchScan

from .lake_changes import (
    append_rows,
    create_foreign_table,
    create_spark_table,
    process,
    random_change,
    random_rows,
    state_rows,
)

pytestmark = pytest.mark.spark

COMPONENTS = [entry.name for entry in STATE_COMPONENTS]


def with_parquet_field_ids(path: Path) -> None:
    """Give the table's Delta schema Parquet field ids, as some engines write them, while its data files
    carry none (Spark's reader then refuses the files: FAILED_READ_FILE)."""
    log = path / "_delta_log" / f"{0:020d}.json"
    actions = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    for action in actions:
        if "metaData" in action:
            schema = json.loads(action["metaData"]["schemaString"])
            for field_id, field in enumerate(schema["fields"], start=1):
                field["metadata"] = {"parquet.field.id": field_id}
            action["metaData"]["schemaString"] = json.dumps(schema)
    log.write_text("\n".join(json.dumps(action) for action in actions) + "\n", encoding="utf-8")


def arrow_rows(ids: list[int], names: list[str | None]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.string())})


def test_one_scan_feeds_every_component_and_a_bad_table_fails_alone(spark, tmp_path: Path):
    lake, catalog = tmp_path / "lake", tmp_path / "catalog"
    create_spark_table(spark, lake / "good", [(1, "a", 1.0), (2, None, 2.0), (2, None, 2.0)])
    write_deltalake(str(lake / "field_ids"), arrow_rows([1, 2], ["x", "y"]))
    with_parquet_field_ids(lake / "field_ids")
    write_deltalake(str(lake / "field_ids"), arrow_rows([3], [None]), mode="append")
    write_deltalake(str(lake / "bad"), arrow_rows([1], ["z"]))
    (broken,) = (lake / "bad").glob("*.parquet")
    broken.write_bytes(b"not a parquet file")
    pipeline = Pipeline(spark, Config(lake=lake, catalog=catalog))

    plan = pipeline.detect_batches()
    pipeline.scan_batches(plan)
    scans = sorted((catalog / STAGING / f"run-{plan.run_id}").glob("scan-*"))
    assert [scan.name for scan in scans] == ["scan-0"]
    recorded = json.loads((scans[0] / "_scan.json").read_text(encoding="utf-8"))
    assert recorded["components"] == COMPONENTS
    assert list(recorded["failed"]) == ["bad"]
    for component in COMPONENTS:  # each component merges from the one scan: no second one
        pipeline.update_state(plan, component)
    assert len(list((catalog / STAGING / f"run-{plan.run_id}").glob("scan-*"))) == 1
    pipeline.commit_batches(plan)
    assert not (catalog / STAGING / f"run-{plan.run_id}").exists()

    batches = {row.table_name: row for row in pipeline.catalog.read("state/batches").collect()}
    assert batches["good"].committed and batches["field_ids"].committed
    assert not batches["bad"].committed
    assert "bad" in batches["bad"].error and broken.name in batches["bad"].error
    counted = {row.table_name: row.n_rows for row in pipeline.catalog.read("tables").collect()}
    assert counted == {"good": 3, "field_ids": 3}
    assert pipeline.catalog.read("runs").first().status == "succeeded"
    pipeline.discover()  # discovery reads the committed versions: the bad table is not among them
    assert {row.table_name for row in pipeline.catalog.read("columns").collect()} == {"good", "field_ids"}

    # Repaired, the table is planned again from its watermark (it has none: in full) and read.
    write_deltalake(str(lake / "bad"), arrow_rows([1, 1], ["z", None]), mode="overwrite")
    plan = process(pipeline, *COMPONENTS)
    assert [(b.table_name, b.kind) for b in plan.batches] == [("bad", "full")]
    counted = {row.table_name: row.n_rows for row in pipeline.catalog.read("tables").collect()}
    assert counted == {"good": 3, "field_ids": 3, "bad": 2}

    rebuilt = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "rebuilt"))
    process(rebuilt, *COMPONENTS)
    for component in COMPONENTS:
        table = f"state/{component}"
        assert state_rows(pipeline, table) == state_rows(rebuilt, table), table


# Types a table read in parts must carry as its whole read does (no VARIANT or TIMESTAMP_NTZ: their reader
# features keep a table from being split).
PLAIN_TYPES = """SELECT
  id,
  CAST(id AS DECIMAL(38,10)) * CAST('12345678901234567890.5' AS DECIMAL(38,10)) AS big,
  CASE id % 4 WHEN 0 THEN double('NaN') WHEN 1 THEN double('Infinity') WHEN 2 THEN -0.0 ELSE 1.5 END AS d,
  timestamp'2024-01-01 10:00:00' + make_interval(0, 0, 0, id) AS ts,
  date'2024-02-29' AS day,
  CAST(CAST(id AS STRING) AS BINARY) AS bin,
  IF(id % 3 = 0, NULL, id % 2 = 0) AS flag,
  array(id, id + 1) AS arr,
  map('k', id) AS m,
  named_struct('x', id, 'y', 'a') AS s,
  CAST(id AS TINYINT) AS tiny,
  CAST(id / 3 AS FLOAT) AS f
FROM range({start}, {end})"""


def test_a_large_table_read_in_parts_gives_the_state_of_a_whole_read(spark, tmp_path: Path):
    lake = tmp_path / "lake"
    for start in range(0, 40, 8):  # five appends: five data files or more
        query = PLAIN_TYPES.format(start=start, end=start + 8)
        spark.sql(query).write.format("delta").mode("append").save(str(lake / "types"))
    spark.sql("ALTER TABLE delta.`{}` ADD COLUMNS (added STRING)".format(lake / "types"))
    spark.sql(
        f"SELECT *, CAST(id AS STRING) AS added FROM ({PLAIN_TYPES.format(start=40, end=44)})"
    ).write.format("delta").mode("append").save(str(lake / "types"))
    create_spark_table(spark, lake / "small", [(1, "a", 1.0)])

    def state(catalog: str, max_task_rows: int) -> dict[str, list[tuple]]:
        settings = {"agree_sets": {"max_rows": 4}, "scan": {"max_task_rows": max_task_rows}}
        config = load_config({"lake": lake, "catalog": tmp_path / catalog, **settings}, environ={})
        pipeline = Pipeline(spark, config)
        plan = process(pipeline, *COMPONENTS)
        assert {b.table_name: b.kind for b in plan.batches} == {"types": "full", "small": "full"}
        return {f"state/{c}": state_rows(pipeline, f"state/{c}") for c in COMPONENTS}

    groups = file_groups(str(lake / "types"), DeltaTable(str(lake / "types")).version(), 10)
    assert groups is not None and len(groups) >= 3  # read in parts below
    whole = state("whole", 1_000_000)
    parts = state("parts", 10)
    assert parts == whole
    profile = {(row[0], row[1]): row[4:] for row in whole["state/column_profile"]}
    assert profile["types", "id"] == (44, 0) and profile["types", "added"] == (44, 40)
    assert profile["types", "flag"] == (44, 15)


def test_large_incremental_batches_read_in_slices_give_the_state_of_whole_reads(spark, tmp_path: Path):
    # With 3 rows a slice, the change feed of "feed" is streamed and the diff of "files" (written by
    # delta-rs, without the feed) is read from the data files each batch removed and added
    rng = np.random.default_rng(21)
    lake = tmp_path / "lake"
    create_spark_table(spark, lake / "feed", random_rows(rng, 8))
    create_foreign_table(lake / "files", random_rows(rng, 8))

    def pipeline(catalog: str, max_task_rows: int) -> Pipeline:
        settings = {"agree_sets": {"max_rows": 3}, "scan": {"max_task_rows": max_task_rows}}
        return Pipeline(
            spark, load_config({"lake": lake, "catalog": tmp_path / catalog, **settings}, environ={})
        )

    pipelines = {"whole": pipeline("whole", 1_000_000), "slices": pipeline("slices", 3)}
    read = set()
    for step in range(3):
        if step:
            for name in ("feed", "files"):
                random_change(spark, rng, lake / name, foreign=name == "files")
                if DeltaTable(str(lake / name)).to_pyarrow_table().num_rows < 6:  # stay above a slice
                    append_rows(spark, lake / name, random_rows(rng, 6), foreign=name == "files")
        states = {}
        for label, each in pipelines.items():
            plan = process(each, *COMPONENTS)
            read |= {(b.table_name, b.kind, b.source) for b in plan.batches}
            states[label] = {f"state/{c}": state_rows(each, f"state/{c}") for c in COMPONENTS}
        assert states["slices"] == states["whole"], step
    assert {("feed", "incremental", "cdf"), ("files", "incremental", "diff")} <= read


def test_a_small_batch_scanned_on_the_driver_stages_what_spark_stages(spark, tmp_path: Path):
    # The driver runs the scan's task body itself where the batches' snapshots are small
    # (``scan.driver_state_bytes``) and stages the rows with pyarrow: each component's rows must be those
    # the Spark tasks stage, read back by either reader (a large batch's merge reads them with Spark).
    lake = tmp_path / "lake"
    spark.sql(PLAIN_TYPES.format(start=0, end=12)).write.format("delta").save(str(lake / "types"))
    create_spark_table(spark, lake / "small", [(1, "a", 1.0), (2, None, 2.0), (2, None, 2.0)])
    write_deltalake(str(lake / "bad"), arrow_rows([1], ["z"]))
    (broken,) = (lake / "bad").glob("*.parquet")
    broken.write_bytes(b"not a parquet file")

    def scanned(catalog: str, driver_state_bytes: int) -> tuple[BatchScan, list]:
        settings = {
            "agree_sets": {"max_rows": 5},
            "scan": {"max_task_rows": 5, "driver_state_bytes": driver_state_bytes},
        }
        config = load_config({"lake": lake, "catalog": tmp_path / catalog, **settings}, environ={})
        pipeline = Pipeline(spark, config)
        plan = pipeline.detect_batches()
        pipeline.scan_batches(plan)
        scan = BatchScan(pipeline.catalog, lake, plan, config.scan)
        return scan, pipeline.components()

    def rows(table: pa.Table) -> list:
        return sorted(map(repr, table.to_pylist()))

    by_spark, components = scanned("spark", 0)
    on_driver, _ = scanned("driver", 16 << 20)
    assert not by_spark.reads_on_driver(by_spark.plan.batches) and on_driver.reads_on_driver(
        on_driver.plan.batches
    )
    assert list(on_driver.failed()) == list(by_spark.failed()) == ["bad"]
    # Many small tables are read in Spark's tasks on every core: 3 tables 66 times, 67 times
    assert on_driver.reads_on_driver(on_driver.plan.batches * 66)
    assert not on_driver.reads_on_driver(on_driver.plan.batches * 67)
    for component in components:
        staged = rows(on_driver.partials_on_driver(component))
        assert staged, component.name
        assert staged == rows(by_spark.partials_on_driver(component)), component.name
        assert staged == rows(on_driver.partials(component).toArrow()), component.name
