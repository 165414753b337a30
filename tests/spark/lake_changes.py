"""Random change sequences applied to a lake's Delta tables, for incremental-equals-rebuild tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from pyspark.sql import SparkSession

from lakemeta.lake.batches import Plan
from lakemeta.lake.ingest import TABLE_PROPERTIES
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.registry import all_schemas
from lakemeta.storage import Location

SCHEMA = "id long, name string, score double"
WORDS = ["alpha", "beta", "gamma", None, "delta", "alpha"]


def random_rows(rng: np.random.Generator, count: int) -> list[tuple]:
    """Rows with duplicates (a small id range) and nulls in every column."""
    rows = []
    for _ in range(count):
        ident = None if rng.random() < 0.1 else int(rng.integers(0, 12))
        name = WORDS[int(rng.integers(len(WORDS)))]
        score = None if rng.random() < 0.2 else float(rng.integers(0, 5))
        rows.append((ident, name, score))
    return rows


def create_spark_table(spark: SparkSession, path: Path, rows: list[tuple]) -> None:
    writer = spark.createDataFrame(rows, SCHEMA).write.format("delta")
    for key, value in TABLE_PROPERTIES.items():
        writer = writer.option(key, value)
    writer.save(str(path))


def create_foreign_table(path: Path, rows: list[tuple]) -> None:
    """A table written by another engine (delta-rs), without the change feed."""
    write_deltalake(str(path), arrow_rows(rows))


def append_rows(spark: SparkSession, path: Path, rows: list[tuple], foreign: bool) -> None:
    """Append rows as the table's writer does: delta-rs for a foreign table, Spark otherwise."""
    if foreign:
        write_deltalake(str(path), arrow_rows(rows), mode="append")
    else:
        spark.createDataFrame(rows, SCHEMA).write.format("delta").mode("append").save(str(path))


def arrow_rows(rows: list[tuple]) -> pa.Table:
    """Rows of ``SCHEMA`` as an Arrow table (for delta-rs writes)."""
    columns = list(zip(*rows, strict=True)) if rows else [[], [], []]
    return pa.table(
        {
            "id": pa.array(columns[0], pa.int64()),
            "name": pa.array(columns[1], pa.string()),
            "score": pa.array(columns[2], pa.float64()),
        }
    )


def random_change(spark: SparkSession, rng: np.random.Generator, path: Path, foreign: bool) -> str:
    """Apply one random insert / delete / update / empty-out / no-op change; return what it was."""
    kind = str(rng.choice(["insert", "insert", "delete", "update", "empty", "noop"]))
    target = f"delta.`{path}`"
    if foreign:
        table = DeltaTable(str(path))
        if kind == "insert":
            write_deltalake(str(path), arrow_rows(random_rows(rng, int(rng.integers(0, 6)))), mode="append")
        elif kind == "delete":
            table.delete(f"id = {int(rng.integers(0, 12))}")
        elif kind == "update":
            table.update(predicate=f"id < {int(rng.integers(0, 12))}", updates={"score": "score + 1"})
        elif kind == "empty":
            table.delete()
        return kind
    if kind == "insert":
        rows = random_rows(rng, int(rng.integers(0, 6)))
        if rows:
            spark.createDataFrame(rows, SCHEMA).write.format("delta").mode("append").save(str(path))
    elif kind == "delete":
        spark.sql(f"DELETE FROM {target} WHERE id = {int(rng.integers(0, 12))} OR name IS NULL")
    elif kind == "update":
        spark.sql(f"UPDATE {target} SET name = NULL, score = score * 2 WHERE id < {int(rng.integers(0, 12))}")
    elif kind == "empty":
        spark.sql(f"DELETE FROM {target}")
    return kind


def drop_table(path: Path | Location) -> None:
    """The table's folder removed, as a user deleting it would (on local disk or in the bucket)."""
    Location.parse(path).remove_tree()


def process(pipeline: Pipeline, *components: str) -> Plan | None:
    """One run updating only the named state components (the others stay empty): detect, update, commit;
    None when no table changed (no run is opened). Component tests use it so that each run does only the
    work they check."""
    plan = pipeline.detect_batches()
    if plan is None:
        return None
    for component in components:
        pipeline.update_state(plan, component)
    pipeline.commit_batches(plan)
    return plan


def state_rows(pipeline: Pipeline, name: str) -> list[tuple]:
    """A catalog table's rows, sorted, for comparing two catalogs (read with delta-rs: no Spark job)."""
    rows = pipeline.catalog.read_small(name, columns=all_schemas()[name].fieldNames())
    return sorted(tuple(row.values()) for row in rows.to_pylist())
