"""The layout of the state tables that hold a row per value or per cell of a lake table (the value sets, the
posting lists): partitioned by a bucket of ``table_name``, the column ``table_bucket``.

Why buckets rather than a partition per table: a batch's MERGE should read and rewrite only the files of the
tables it changes, which a partition column gives (Delta prunes the files it reads by it), and a full read
(Many's first discovery, a joinable search's first fetch) should open few files. A partition per table gave
the first (``bench/maintenance.py``: a one-table batch's MERGEs clearly faster than unpartitioned) at the
cost of the second: 20,000 tables made every full scan open 20,000 small Parquet files, and Many's first
discovery took several times as long (``bench/many_inds.py``; docs/performance.md, "Measurements behind the
code"). With ``BUCKETS`` buckets a one-table MERGE reads the state of the table and its bucket-mates (1/256
of the state) and a full scan opens about ``BUCKETS`` files once compacted.

The bucket is the CRC-32 of the name's UTF-8 bytes modulo ``BUCKETS``: Spark computes it with ``crc32`` (a
write's rows, a read's filter) and Python with ``zlib.crc32`` (maintenance's rewrite with delta-rs, the
buckets of a MERGE's condition), so both always agree.

The Parquet encoding of the tables whose columns hold random bits (``writer_properties``): Bloom signatures
and value hashes neither compress nor repeat, and Snappy and a dictionary only cost time to write and read.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import Column, DataFrame
from pyspark.sql.types import IntegerType, StructField, StructType

BUCKETS = 256
BUCKET_COLUMN = "table_bucket"
# Delta's optimized writes shuffle each write by partition before writing, so a write (a first run's append,
# a MERGE) leaves about one file per bucket it touches rather than one per bucket and task.
LAYOUT_PROPERTIES = {"delta.autoOptimize.optimizeWrite": "true"}

# Every table of the catalog. delta-rs checkpoints a log every 100 commits unless told otherwise, and a run
# commits to the bookkeeping tables (runs, discovery_runs, state/batches) several times while every step
# opens them: a checkpoint every 10 commits (delta-spark's default) bounds an open to the checkpoint and at
# most nine JSON commits between the daily maintenance's, where replaying some 30 commits made each open
# several times slower (docs/performance.md, "Measurements behind the code").
LOG_PROPERTIES = {"delta.checkpointInterval": "10"}


# Per table written with delta-rs, its columns of random bits. state/ind_columns (Many's inputs: a 1,300-bit
# signature and up to 128 value hashes per column) reads, and is replaced for ten tables, in a fraction of
# the time plain and uncompressed, for a somewhat larger table at 10^5 columns (docs/performance.md,
# "Measurements behind the code").
RANDOM_BITS_COLUMNS: dict[str, tuple[str, ...]] = {"state/ind_columns": ("signature", "value_hashes")}


def writer_properties(name: str) -> deltalake.WriterProperties | None:
    """How delta-rs writes (and compacts) table ``name`` of the catalog: None for its defaults."""
    columns = RANDOM_BITS_COLUMNS.get(name)
    if columns is None:
        return None
    plain = deltalake.ColumnProperties(dictionary_enabled=False, statistics_enabled="NONE")
    return deltalake.WriterProperties(
        compression="UNCOMPRESSED", column_properties=dict.fromkeys(columns, plain)
    )


def bucket_of(table_name: str) -> int:
    """The bucket of table ``table_name``."""
    return zlib.crc32(table_name.encode("utf-8")) % BUCKETS


def buckets_of(table_names: Iterable[str]) -> list[int]:
    """The distinct buckets of ``table_names``, ascending."""
    return sorted({bucket_of(name) for name in table_names})


def bucket_column() -> Column:
    """The bucket of each row's ``table_name``, in Spark."""
    return (F.crc32(F.col("table_name").cast("binary")) % BUCKETS).cast(IntegerType())


def with_bucket(rows: DataFrame) -> DataFrame:
    """``rows`` with the bucket of their table (``rows`` have a ``table_name``)."""
    return rows.withColumn(BUCKET_COLUMN, bucket_column())


def bucketed_schema(schema: StructType) -> StructType:
    """A state table's schema as stored in this layout: the component's, then ``table_bucket``."""
    return StructType([*schema.fields, StructField(BUCKET_COLUMN, IntegerType())])


def in_buckets_sql(column: str, table_names: Iterable[str]) -> str:
    """A Spark SQL predicate: ``column`` (a bucket column) is the bucket of one of ``table_names``; false
    when there are none."""
    buckets = buckets_of(table_names)
    return f"{column} IN ({', '.join(map(str, buckets))})" if buckets else "false"


def _bucket_array(names: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The bucket of each of ``names``: computed once per distinct name (the rows of a table lie
    together, so a batch holds few), then taken per row."""
    distinct = pc.unique(names)
    buckets = pa.array(np.array([bucket_of(n) for n in distinct.to_pylist()], np.int32), pa.int32())
    return buckets.take(pc.index_in(names, distinct))


def arrow_with_bucket(rows: pa.Table) -> pa.Table:
    """``rows`` (with a ``table_name`` column) with the bucket of their table as the last column
    ``table_bucket``: for writes of state with delta-rs."""
    return rows.append_column(pa.field(BUCKET_COLUMN, pa.int32()), _bucket_array(rows["table_name"]))


def arrow_batches_with_bucket(batches: pa.RecordBatchReader) -> pa.RecordBatchReader:
    """``batches`` (with a ``table_name`` column) with their bucket put in ``table_bucket`` (replaced if
    there), streamed: for rewriting a table of an older layout with delta-rs."""
    schema = batches.schema
    if BUCKET_COLUMN in schema.names:
        schema = schema.remove(schema.get_field_index(BUCKET_COLUMN))
    schema = schema.append(pa.field(BUCKET_COLUMN, pa.int32()))

    def rewritten() -> Iterator[pa.RecordBatch]:
        for batch in batches:
            columns = {name: batch.column(name) for name in schema.names[:-1]}
            columns[BUCKET_COLUMN] = _bucket_array(batch.column("table_name"))
            yield pa.RecordBatch.from_pydict(columns, schema=schema)

    return pa.RecordBatchReader.from_batches(schema, rewritten())
