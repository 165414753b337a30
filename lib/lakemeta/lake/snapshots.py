"""Reading a lake table's rows at a version: the one reader every module uses.

Two paths, each where it fits:

* :func:`snapshot`, a Spark DataFrame of a table at a version, for the steps whose work Spark spreads over
  executors (the batches of ``lake.batches.changes``);
* :func:`read_table` and :func:`read_columns`, Arrow data read with delta-rs on the calling process, for
  executor tasks that take a table whole (agree-sets, Many's signatures, key checks, FK candidates) and for
  the driver where a table is small by construction (a joinable search's query). No JVM is involved, so
  they also run inside ``mapInArrow`` tasks.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import deltalake
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from lakemeta.lake.tables import spark_schema


def read_table(path: str, version: int | None = None, columns: list[str] | None = None) -> pa.Table:
    """The rows of the Delta table at ``path`` at ``version`` (the newest when None), only ``columns``
    when given (delta-rs)."""
    return deltalake.DeltaTable(path, version=version).to_pyarrow_table(columns=columns)


def read_columns(path: str, version: int | None, columns: list[str]) -> list[pa.Array]:
    """A table's columns at a version, each as one array of its own type (delta-rs)."""
    table = read_table(path, version, columns)
    return [table.column(column).combine_chunks() for column in columns]


def data_files(table: deltalake.DeltaTable) -> list[str]:
    """The snapshot's data files, relative to the table and URI-encoded, as its log lists them."""
    return pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist()


# Characters Spark expands as globs in the paths it reads.
_GLOB_CHARACTERS = "{}[]*?\\"


def snapshot(spark: SparkSession, path: Path, version: int) -> DataFrame:
    """The rows of a Delta table at ``version``.

    Spark's Delta reader replays the log with Spark jobs, about half a second per table; for a lake of
    many small tables that dominates a run. delta-rs reads the log in milliseconds, so when the data
    files alone hold the rows (no deletion vectors, no column mapping, no partition columns) the
    snapshot is read as exactly the Parquet files its log lists, with the table's schema.
    """
    table = deltalake.DeltaTable(str(path), version=version)
    protocol = table.protocol()
    plain_files = (
        not set(protocol.reader_features or ()) & {"deletionVectors", "columnMapping"}
        and protocol.min_reader_version < 2
        and not table.metadata().partition_columns
    )
    files = [str(path / unquote(file)) for file in data_files(table)]
    # Spark expands glob characters in the paths it reads; a name holding them takes Delta's reader.
    if not plain_files or not files or set(str(path)) & set(_GLOB_CHARACTERS):
        return spark.read.format("delta").option("versionAsOf", version).load(str(path))
    return spark.read.schema(spark_schema(table)).parquet(*files)
