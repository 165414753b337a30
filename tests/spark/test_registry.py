"""A new state component is one module and one registry entry: a toy component (rows per table), defined in
this module and registered here, is updated by the pipeline, applied once per run, and equals a rebuild."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyspark.sql.functions as F
import pytest
from pyspark.sql import DataFrame
from pyspark.sql.types import LongType, StringType, StructField, StructType

from lakemeta import registry
from lakemeta.component import StateComponent, StateDelta
from lakemeta.config import Config
from lakemeta.hashing import ColumnHashes
from lakemeta.lake.batches import Plan
from lakemeta.lake.table_changes import SIGN, TableChange, TablePartial
from lakemeta.orchestration.pipeline import Pipeline

from .lake_changes import create_foreign_table, create_spark_table, drop_table, random_change, random_rows

pytestmark = pytest.mark.spark


class RowCounts(StateComponent):
    """Per table, its number of rows: the signed sum of every batch's rows."""

    name = "row_counts"
    schema = StructType([StructField("table_name", StringType()), StructField("count", LongType())])
    merge_keys = ("table_name",)
    count_columns = ("count",)

    partial_schema = schema

    def partial(self) -> type[TablePartial]:
        # Defined here, so that the scan's tasks receive the class by value (this module is not on the
        # executors' path).
        class SignedRows(TablePartial):
            def __init__(self, change: TableChange) -> None:
                super().__init__(change)
                self.count = 0

            def add(self, rows: pa.Table, hashes: ColumnHashes) -> None:
                self.count += int(rows[SIGN].to_numpy().sum())

            def finish(self) -> pa.Table:
                return pa.table({"table_name": [self.change.table_name], "count": [self.count]})

        return SignedRows

    def delta(self, plan: Plan, partials: DataFrame) -> StateDelta:
        summed = partials.groupBy("table_name").agg(F.sum("count").alias("count"))  # parts of a table
        return StateDelta(summed.where(F.col("count") != 0), plan.replaced_tables)


@pytest.fixture
def with_row_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    entry = registry.ComponentEntry("row_counts", f"{__name__}:RowCounts")
    monkeypatch.setattr(registry, "STATE_COMPONENTS", (*registry.STATE_COMPONENTS, entry))


def row_counts(pipeline: Pipeline) -> dict[str, int]:
    return {row.table_name: row["count"] for row in pipeline.catalog.read("state/row_counts").collect()}


def snapshot_counts(spark, lake: Path, names: list[str]) -> dict[str, int]:
    counts = {name: spark.read.format("delta").load(str(lake / name)).count() for name in names}
    return {name: count for name, count in counts.items() if count}  # a count of zero is not stored


def test_a_registered_component_is_kept_like_the_others(spark, tmp_path: Path, with_row_counts: None):
    rng = np.random.default_rng(7)
    lake = tmp_path / "lake"
    create_spark_table(spark, lake / "a", random_rows(rng, 9))
    create_foreign_table(lake / "foreign", random_rows(rng, 5))
    create_spark_table(spark, lake / "gone", random_rows(rng, 3))
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog"))
    assert [c.name for c in pipeline.components()][-1] == "row_counts"
    plan = pipeline.detect_batches()
    pipeline.update_state(plan)  # every registered component, the toy one included
    version = pipeline.catalog.location("state/row_counts").delta_table().version()
    pipeline.update_state(plan, "row_counts")  # a retry of the same run applies nothing
    assert pipeline.catalog.location("state/row_counts").delta_table().version() == version
    pipeline.commit_batches(plan)
    assert row_counts(pipeline) == snapshot_counts(spark, lake, ["a", "foreign", "gone"])

    for name in ("a", "foreign"):
        random_change(spark, rng, lake / name, foreign=name == "foreign")
    random_change(spark, rng, lake / "a", foreign=False)
    drop_table(lake / "gone")
    pipeline.run()  # `lakemeta run` updates every registered component
    assert row_counts(pipeline) == snapshot_counts(spark, lake, ["a", "foreign"])

    rebuilt = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "rebuilt"))
    rebuilt.update_state(rebuilt.detect_batches(), "row_counts")
    assert row_counts(rebuilt) == row_counts(pipeline)
