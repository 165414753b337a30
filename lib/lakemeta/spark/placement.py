"""Rows placed in Spark tasks by weight, for jobs whose unit of work is a whole table."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession


def balanced_frame(spark: SparkSession, weighted_rows: Sequence[tuple[int, tuple]], schema: str) -> DataFrame:
    """A DataFrame of ``rows`` spread over up to twice the default parallelism of tasks, heaviest first
    onto the least loaded task (greedy balancing); each row, hence all of its work, is in exactly one task."""
    rows = sorted(weighted_rows, key=lambda row: -row[0])
    tasks: list[list[tuple]] = [[] for _ in range(min(len(rows), 2 * spark.sparkContext.defaultParallelism))]
    load = [0] * len(tasks)
    for weight, row in rows:
        task = load.index(min(load))
        load[task] += weight
        tasks[task].append(row)
    # One element per slice: each task's list of rows lands in its own partition, without a shuffle.
    placed = spark.sparkContext.parallelize(tasks, max(len(tasks), 1)).flatMap(lambda task_rows: task_rows)
    return spark.createDataFrame(placed, schema)
