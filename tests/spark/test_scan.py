"""The run's one scan: every changed table read once for all state components, tables that other engines
wrote read as they are, and a table that cannot be read failing alone."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta.config import Config
from lakemeta.pipeline import Pipeline
from lakemeta.registry import STATE_COMPONENTS
from lakemeta.scan import STAGING

from .lake_changes import create_spark_table, process, state_rows

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
