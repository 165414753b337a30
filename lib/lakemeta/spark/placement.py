"""Rows placed in Spark tasks by weight, for jobs whose unit of work is a whole table."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from lakemeta.spark.portable import default_parallelism


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


def rows_batch(rows: Sequence[tuple], schema: pa.Schema) -> pa.RecordBatch:
    """``rows`` (tuples in the order of ``schema``'s fields) as one Arrow batch."""
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in schema]
    arrays = [pa.array(column, field.type) for column, field in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def map_tasks(
    spark: SparkSession,
    tasks: list[list[tuple]],
    schema: StructType,
    body: MapBody,
    output_schema: StructType,
) -> DataFrame:
    """``body`` run over the rows of each of ``tasks`` (Arrow batches of ``schema``), one Spark task
    each: partition i holds what ``body`` made of ``tasks[i]``. The rows travel with the function (small
    by construction: a descriptor per table) and become batches in the Python worker that runs ``body``.
    A ``mapInArrow`` over a frame of the rows would be a second Python UDF in the task, and Spark runs each
    in a worker of its own: on the test cluster each slot's first scan task waited on two worker starts,
    each of them a fork and then a longer import and unpickling on two busy cores (docs/performance.md,
    "Measurements behind the code")."""
    arrow_schema = to_arrow_schema(schema)

    def run(ids: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        batches = (
            rows_batch(tasks[task], arrow_schema) for batch in ids for task in batch.column(0).to_pylist()
        )
        yield from body(batches)

    return spark.range(0, len(tasks), 1, max(len(tasks), 1)).mapInArrow(run, output_schema)


# Beyond this many tables a step reads them in Spark's tasks even when they are small: the driver reads
# them one after another, Spark's tasks on every core. 2,000 web tables of 12 rows took longer on the
# driver than in Spark on two cores (bench/many_tables.py): the driver saves the workers' start, seconds
# once, and Spark saves milliseconds a table, so the driver wins below some hundreds of such tables here,
# and below fewer on more cores (docs/performance.md, "Measurements behind the code").
DRIVER_MAX_TABLES = 200


def reads_tables_on_driver(snapshot_bytes: Sequence[int | None], driver_state_bytes: int) -> bool:
    """Whether a step reads tables whose snapshots hold ``snapshot_bytes`` (the Delta log's file
    statistics; None where unknown) on the driver rather than in Spark's tasks: at most
    ``DRIVER_MAX_TABLES`` tables, all sizes known, at most ``scan.driver_state_bytes`` in all. Spark's
    first Python task in a session starts its Python workers, seconds of a small run."""
    return (
        len(snapshot_bytes) <= DRIVER_MAX_TABLES
        and None not in snapshot_bytes
        and sum(snapshot_bytes) <= driver_state_bytes
    )


def map_on_driver(rows: Sequence[tuple], schema: StructType, body: MapBody) -> Iterator[pa.RecordBatch]:
    """``body`` run in this process over ``rows`` as one batch: what ``map_tasks`` computes in Spark
    tasks, for a step whose inputs are small (a few small tables: ``scan.driver_state_bytes``). A Connect
    session starts its Python workers at its first Python task, seconds on two cores; a small batch's read
    takes a fraction of a second here."""
    yield from body(iter([rows_batch(rows, to_arrow_schema(schema))]))


def collect_balanced(
    spark: SparkSession,
    weighted_rows: Sequence[tuple[int, tuple]],
    schema: StructType,
    body: MapBody,
    output_schema: StructType,
    max_task_weight: int | None = None,
    on_driver: bool = False,
) -> pa.Table:
    """What ``body`` makes of the rows, collected (small by construction: a few rows per input row): run
    in Spark tasks over the rows spread by ``balanced_tasks``, or ``on_driver`` (``map_on_driver``)."""
    arrow_schema = to_arrow_schema(output_schema)
    if on_driver:
        batches = map_on_driver([row for _, row in weighted_rows], schema, body)
        return pa.Table.from_batches([batch.cast(arrow_schema) for batch in batches], arrow_schema)
    tasks = balanced_tasks(spark, weighted_rows, max_task_weight)
    # as many rows as the input rows' outcomes, which the caller already holds: the FK step's key checks
    # (a row per key asked) and, on its driver path, its candidates' outcomes (a row per candidate, whose
    # estimates are within scan.driver_max_pairs; past it the step runs in the executors)
    return map_tasks(spark, tasks, schema, body, output_schema).toArrow().cast(arrow_schema)
