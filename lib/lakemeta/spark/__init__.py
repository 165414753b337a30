"""Spark session factory (Delta, local jars, settings for a small machine)."""

from lakemeta.spark.session import (
    delta_jars,
    get_session,
    metastore_conf,
    prepare_environment,
    spark_conf,
    spark_environment,
)

__all__ = [
    "delta_jars",
    "get_session",
    "metastore_conf",
    "prepare_environment",
    "spark_conf",
    "spark_environment",
]
