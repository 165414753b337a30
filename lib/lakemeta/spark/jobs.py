"""What the library asks of a Spark session beyond DataFrames, done the same way under classic Spark and
Spark Connect, which has no SparkContext: a description of the jobs that follow, and the parallelism
work is spread over."""

from __future__ import annotations

import re

import pyspark.sql.functions as F
from pyspark.sql import SparkSession

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
