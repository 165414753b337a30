"""What the library asks of a Spark session beyond DataFrames, done the same way under classic Spark and
Spark Connect, which has no SparkContext: a description of the jobs that follow, the parallelism work is
spread over, and a DataFrame of a small Arrow table built on the driver."""

from __future__ import annotations

import logging
import re

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
