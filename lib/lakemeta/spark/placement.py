"""Rows placed in Spark tasks by weight, for jobs whose unit of work is a whole table."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

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


# A mapInArrow body: Arrow batches in, Arrow batches out.
MapBody = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def map_tasks(
    spark: SparkSession, tasks: list[list[tuple]], schema: str, body: MapBody, output_schema: str | StructType
) -> DataFrame:
    """``body`` run over the rows of each of ``tasks`` (Arrow batches of ``schema``), one Spark task
    each: partition i holds what ``body`` made of ``tasks[i]``. The rows travel with the function (small
    by construction: a descriptor per table) and become batches in the Python worker that runs ``body``.
    A ``mapInArrow`` over a frame of the rows would be a second Python UDF in the task, and Spark runs each
    in a worker of its own: on the test cluster each slot's first scan task waited on two worker starts
    (5 s to fork, 9-11 s to import and unpickle each, on two busy cores)."""
    arrow_schema = to_arrow_schema(spark.createDataFrame([], schema).schema)

    def batches_of(ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in ids:
            for task in batch.column(0).to_pylist():
                columns = list(zip(*tasks[task], strict=True))
                yield pa.RecordBatch.from_arrays(
                    [
                        pa.array(column, field.type)
                        for column, field in zip(columns, arrow_schema, strict=True)
                    ],
                    schema=arrow_schema,
                )

    def run(ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        yield from body(batches_of(ids))

    return spark.range(0, len(tasks), 1, max(len(tasks), 1)).mapInArrow(run, output_schema)


def map_balanced(
    spark: SparkSession,
    weighted_rows: Sequence[tuple[int, tuple]],
    schema: str,
    body: MapBody,
    output_schema: str | StructType,
    max_task_weight: int | None = None,
) -> DataFrame:
    """``map_tasks`` over the rows spread by ``balanced_tasks``."""
    tasks = balanced_tasks(spark, weighted_rows, max_task_weight)
    return map_tasks(spark, tasks, schema, body, output_schema)
