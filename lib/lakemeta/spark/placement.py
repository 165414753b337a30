"""Rows placed in Spark tasks by weight, for jobs whose unit of work is a whole table."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession


def balanced_frame(
    spark: SparkSession,
    weighted_rows: Sequence[tuple[int, tuple]],
    schema: str,
    max_task_weight: int | None = None,
) -> DataFrame:
    """A DataFrame of ``rows`` spread over twice the default parallelism of tasks, or more where that
    would put more than ``max_task_weight`` in a task on average, heaviest first onto the least loaded task
    (greedy balancing); each row, hence all of its work, is in exactly one task, and no task is empty."""
    rows = sorted(weighted_rows, key=lambda row: -row[0])
    wanted = 2 * spark.sparkContext.defaultParallelism
    if max_task_weight is not None:
        wanted = max(wanted, math.ceil(sum(weight for weight, _ in rows) / max_task_weight))
    tasks: list[list[tuple]] = [[] for _ in range(min(len(rows), wanted))]
    load = [0] * len(tasks)
    for weight, row in rows:
        task = load.index(min(load))
        load[task] += weight
        tasks[task].append(row)
    # One element per slice: each task's list of rows lands in its own partition, without a shuffle.
    placed = spark.sparkContext.parallelize(tasks, max(len(tasks), 1)).flatMap(lambda task_rows: task_rows)
    return spark.createDataFrame(placed, schema)
