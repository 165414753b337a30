"""Rows placed in tasks by weight: each task's rows land in its own partition, none is lost or repeated;
run on the driver, the same body makes the same rows of them; and the jobs' description reaches the Spark
UI's property, without an RDD anywhere."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyspark.sql.functions as F
import pytest
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

from lakemeta.spark.placement import balanced_tasks, collect_balanced, map_tasks
from lakemeta.spark.portable import default_parallelism, describe_jobs

pytestmark = pytest.mark.spark

SCHEMA = StructType(
    [
        StructField("table_name", StringType()),
        StructField("files", ArrayType(StringType())),
        StructField("rows", LongType()),
    ]
)
ROWS = StructType([StructField("rows", LongType())])


def count_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield pa.RecordBatch.from_pydict({"rows": [sum(batch.num_rows for batch in batches)]})


def test_each_task_holds_its_rows_in_a_partition_of_its_own(spark) -> None:
    weighted = [
        (weight, (f"t{weight}", [f"f{weight}.parquet"] * (weight % 3), weight)) for weight in range(1, 12)
    ]
    parallelism = default_parallelism(spark)
    assert parallelism == int(spark.conf.get("spark.default.parallelism"))  # 4, set by spark_conf
    tasks = balanced_tasks(spark, weighted, max_task_weight=8)
    # twice the parallelism, or more where a task would hold more than 8 of the 66 on average
    assert len(tasks) == max(2 * parallelism, 9)
    loads = sorted(sum(row[2] for row in task) for task in tasks)
    assert loads[-1] - loads[0] <= 11, loads  # heaviest first onto the least loaded task
    placed = map_tasks(spark, tasks, SCHEMA, lambda batches: batches, SCHEMA)
    placed = placed.withColumn("task", F.spark_partition_id()).toArrow()
    by_task: dict[int, list] = {}
    for row in placed.to_pylist():
        by_task.setdefault(row.pop("task"), []).append(tuple(row.values()))
    assert by_task == {i: task for i, task in enumerate(tasks)}
    assert map_tasks(spark, [], SCHEMA, lambda batches: batches, SCHEMA).count() == 0
    # The body sees the rows of its task alone, in one Python UDF: what it returns is what the task holds.
    counted = map_tasks(spark, tasks, SCHEMA, count_rows, ROWS).toArrow()["rows"].to_pylist()
    assert counted == [len(task) for task in tasks]


def test_the_driver_runs_the_body_over_every_row_at_once(spark) -> None:
    weighted = [
        (weight, (f"t{weight}", [f"f{weight}.parquet"] * (weight % 3), weight)) for weight in range(1, 12)
    ]

    def collected(on_driver: bool, body) -> list:
        return collect_balanced(
            spark, weighted, SCHEMA, body, ROWS if body is count_rows else SCHEMA, 8, on_driver
        ).to_pylist()

    assert sorted(collected(True, lambda b: b), key=str) == sorted(collected(False, lambda b: b), key=str)
    assert [row for _, row in weighted] == [tuple(row.values()) for row in collected(True, lambda b: b)]
    assert collected(True, count_rows) == [{"rows": len(weighted)}]  # one batch of all the rows
    assert sum(row["rows"] for row in collected(False, count_rows)) == len(weighted)


def test_describe_jobs_sets_the_description_of_the_jobs_that_follow(spark) -> None:
    describe_jobs(spark, "placement: a described job")
    assert spark.sparkContext.getLocalProperty("spark.job.description") == "placement: a described job"
