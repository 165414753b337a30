"""Rows placed in Spark tasks by weight, for jobs whose unit of work is a whole table."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema

from lakemeta.spark.jobs import default_parallelism


def balanced_tasks(
    spark: SparkSession, weighted_rows: Sequence[tuple[int, tuple]], max_task_weight: int | None = None
) -> list[list[tuple]]:
    """``rows`` spread over twice the default parallelism of tasks, or more where that would put more
    than ``max_task_weight`` in a task on average, heaviest first onto the least loaded task (greedy
    balancing); each row, hence all of its work, is in exactly one task, and no task is empty."""
    rows = sorted(weighted_rows, key=lambda row: -row[0])
    wanted = 2 * default_parallelism(spark)
    if max_task_weight is not None:
        wanted = max(wanted, math.ceil(sum(weight for weight, _ in rows) / max_task_weight))
    tasks: list[list[tuple]] = [[] for _ in range(min(len(rows), wanted))]
    load = [0] * len(tasks)
    for weight, row in rows:
        task = load.index(min(load))
        load[task] += weight
        tasks[task].append(row)
    return tasks


def tasks_frame(spark: SparkSession, tasks: list[list[tuple]], schema: str) -> DataFrame:
    """A DataFrame of ``schema`` whose partition i holds the rows of ``tasks[i]``: a range of one number
    per partition, each task emitting its rows (small by construction: a descriptor per table)."""
    arrow_schema = to_arrow_schema(spark.createDataFrame([], schema).schema)

    def rows_of(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for task in batch.column(0).to_pylist():
                columns = list(zip(*tasks[task], strict=True))
                yield pa.RecordBatch.from_arrays(
                    [
                        pa.array(column, field.type)
                        for column, field in zip(columns, arrow_schema, strict=True)
                    ],
                    schema=arrow_schema,
                )

    return spark.range(0, len(tasks), 1, max(len(tasks), 1)).mapInArrow(rows_of, schema)


def balanced_frame(
    spark: SparkSession,
    weighted_rows: Sequence[tuple[int, tuple]],
    schema: str,
    max_task_weight: int | None = None,
) -> DataFrame:
    """The rows of ``balanced_tasks`` as a DataFrame of ``schema``, one partition per task."""
    return tasks_frame(spark, balanced_tasks(spark, weighted_rows, max_task_weight), schema)
