"""What the library asks of a Spark session beyond DataFrames, done the same way under classic Spark and
Spark Connect, which has no SparkContext: a description of the jobs that follow, the parallelism work is
spread over, a DataFrame of a small Arrow table built on the driver, and Python workers started ahead."""

from __future__ import annotations

import functools
import importlib
import logging
import re
import threading
from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyspark.sql.functions as F
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

log = logging.getLogger(__name__)

# The tag a Connect session's jobs carry for the description (Connect sets the description itself).
_TAG_PREFIX = "lakemeta:"


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (``pyspark.sql.connect``) rather than a classic one."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def describe_jobs(spark: SparkSession, description: str) -> None:
    """Name the jobs that follow, as the Spark UI shows them: the job description of a classic session;
    a job tag of a Connect session (its server describes jobs by their plans), without commas, which
    tags may not hold."""
    if not is_connect(spark):
        spark.sparkContext.setJobDescription(description)
        return
    for tag in list(spark.getTags()):
        if tag.startswith(_TAG_PREFIX):
            spark.removeTag(tag)
    spark.addTag(_TAG_PREFIX + re.sub(r"[^\w.:/=+-]+", "-", description)[:120].strip("-"))


def default_parallelism(spark: SparkSession) -> int:
    """The cluster's default parallelism (its cores, for local and standalone masters): SparkContext's
    under classic Spark; over Connect, the partitions of a range Spark splits by default."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    # the partition id projected first: an aggregate may not take a non-deterministic argument
    ids = spark.range(0, 1 << 16).select(F.spark_partition_id().alias("partition"))
    return int(ids.agg(F.max("partition").alias("last")).first()["last"]) + 1


def arrow_frame(spark: SparkSession, table: pa.Table) -> DataFrame:
    """``table`` (small by construction: a candidate list, column names) as a DataFrame, its schema given:
    Spark Connect cannot infer a schema from a table without rows."""
    return spark.createDataFrame(table, schema=from_arrow_schema(table.schema))


def start_python_workers(spark: SparkSession, modules: Sequence[str]) -> threading.Thread:
    """Start the session's Python workers in a thread of the driver, while it does other work: a job of one
    task per core whose tasks import ``modules``; the thread, to join before the Python tasks that need
    them. The first Python task of a session waits for the session's worker daemon and then for each
    worker's imports of lakemeta, numba and the rest: 2.0-2.8 s over Connect against 0.14-0.28 s once the
    workers run (measured with a ``mapInArrow`` importing ``lakemeta.scan``, three sessions of one server;
    each Connect session gets a daemon of its own, keyed by its session id). Workers idle for a minute stop.
    A failure is logged: the tasks that need the workers start them as they would have."""

    def start() -> None:
        try:
            describe_jobs(spark, f"starting Python workers ({len(modules)} modules imported)")
            tasks = spark.range(0, 1 << 16)  # split as the session splits work by default: a task per core
            # Nothing reaches the driver: the tasks return no rows; collect only waits for them.
            tasks.mapInArrow(functools.partial(_import_modules, list(modules)), "imported int").collect()
        except Exception as error:  # a warm-up only: the scan starts the workers it needs anyway
            log.warning("Python workers not started ahead (%s: %s)", type(error).__name__, error)

    thread = threading.Thread(target=start, name="lakemeta-python-workers", daemon=True)
    thread.start()
    return thread


def _import_modules(modules: list[str], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A worker's imports (:func:`start_python_workers`); it returns no rows."""
    for name in modules:
        importlib.import_module(name)
    for _ in batches:
        pass
    yield from ()
