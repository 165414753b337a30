"""HLL counters as Delta state (``state/hll_counters``): the Spark side of :mod:`lakemeta.sketches.hll`.

Delta (BML §4, deletions). In the run's one scan (``lakemeta.scan``), the executor tasks hash each
sketched cell of a table's changed rows by its canonical form (``lakemeta.hashing``) and tally +1 per
inserted and -1 per deleted occurrence per (column, bucket, rho) with the numba kernel of
``hll.counter_delta``, slice by slice into one running sparse delta per column.

Merge: one idempotent MERGE adds the delta to the stored counts, removes counts that reach zero and refuses
(before writing) any count that would turn negative (``catalog.counts.merge_counts``); tables rebuilt from
their snapshot, and dropped ones, have their counters replaced.

Metrics: the registers of a column are the largest rho with a positive count per bucket, computed by one
Spark aggregation over the state and densified with the column's distinct-count estimate in the executors
(``column_sketches``); the driver receives one estimate per column, never the registers (100,000 columns
hold 1.6 GB of them at p = 14). The BML inclusion estimates are derived from the same sketches, tile by
tile in the executors (``sketches.discover``).

The component follows the contract of :mod:`lakemeta.component` (``docs/architecture.md``, "The state
component contract"); its metric is each column's ``n_distinct_estimate``.

Sketched columns are those of atomic types (numbers, strings, binary, booleans, dates, timestamps);
nested columns (arrays, maps, structs) have no canonical form and are left out, which the log reports.
The precision p is fixed for the life of the state: changing ``sketches.precision`` needs a rebuild
(``lakemeta rebuild``); reading registers checks that the stored buckets fit p.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from lakemeta.catalog import Catalog
from lakemeta.component import StateComponent
from lakemeta.hashing import ColumnHashes, hash_tuples
from lakemeta.lake.table_changes import SIGN, TableChange, TablePartial
from lakemeta.lake.tables import holds_plain_values, is_plain_type_name, source_column
from lakemeta.profile.state import ColumnProfile
from lakemeta.sketches import hll
from lakemeta.spark.portable import describe_jobs

log = logging.getLogger(__name__)

_SKETCHES_PER_BATCH = 4096  # output rows per Arrow batch: 64 MiB of registers at p = 14

KEYS = ["table_name", "column_name", "bucket", "rho"]
SCHEMA = StructType(
    [
        StructField("table_name", StringType()),
        StructField("column_name", StringType()),
        StructField("bucket", IntegerType()),
        StructField("rho", IntegerType()),
        StructField("count", LongType()),
    ]
)


def tally(
    running: dict[str, hll.ColumnHllCounters], rows: pa.Table, column_hashes: ColumnHashes, p: int
) -> None:
    """Add the counter delta of ``rows`` (signed by ``_lm_sign``; their value hashes ``column_hashes``) to
    the running delta of each column of ``running``: +1 per inserted and -1 per deleted occurrence per
    (bucket, rho)."""
    signs = rows[SIGN].to_numpy()
    for column, counters in running.items():
        hashes, valid = column_hashes[column]
        running[column] = hll.add_counters(counters, hll.counter_delta(hashes[valid], signs[valid], p))


class _CounterPartial(TablePartial):
    """A table's counter delta (BML §4): +1 per inserted and -1 per deleted occurrence per (column, bucket,
    rho), tallied slice by slice into one running sparse delta per column, so that a table emits at most
    one row per (column, bucket, rho) it saw, whatever its size."""

    def __init__(self, change: TableChange, p: int) -> None:
        super().__init__(change)
        self.p = p
        fields = change.schema.fields
        self.running = {f.name: hll.empty_counters(p) for f in fields if holds_plain_values(f.dataType)}

    def add(self, rows: pa.Table, hashes: ColumnHashes) -> None:
        tally(self.running, rows, hashes, self.p)

    def finish(self) -> pa.Table:
        parts = [(column, counters) for column, counters in self.running.items() if len(counters)]
        n = [len(counters) for _, counters in parts]
        names = np.array([column for column, _ in parts], dtype=object)
        return pa.table(
            {
                "table_name": pa.array(np.full(sum(n), self.change.table_name, dtype=object), pa.string()),
                "column_name": pa.array(np.repeat(names, n), pa.string()),
                "bucket": pa.array(np.concatenate([c.bucket for _, c in parts] or [[]]).astype(np.int32)),
                "rho": pa.array(np.concatenate([c.rho for _, c in parts] or [[]]).astype(np.int32)),
                "count": pa.array(np.concatenate([c.count for _, c in parts] or [[]]).astype(np.int64)),
            }
        )


class HllCounters(StateComponent):
    """Deletable HLL counters of every sketched column (BML §4) at precision ``sketches.precision``."""

    name = "hll_counters"
    schema = SCHEMA
    partial_schema = SCHEMA
    config_section = "sketches"
    merge_keys = KEYS
    count_columns = ("count",)

    def partial(self) -> functools.partial[_CounterPartial]:
        return functools.partial(_CounterPartial, p=self.config.sketches.precision)

    def derive(self, tables: Sequence[str] | None = None) -> pa.Table:
        """``n_distinct_estimate`` of every column of the profile (:func:`distinct_estimates`), or of the
        columns of ``tables``."""
        p = self.config.sketches.precision
        if self.reads_on_driver(tables):
            counters = self.catalog.read_small(
                self.state_table(), tables, ["table_name", "column_name", "bucket", "rho"]
            )
            cardinalities = counter_sketches(counters, p).select(["table_name", "column_name", "cardinality"])
        else:
            cardinalities = column_cardinalities(self.catalog, p, tables)
        return distinct_estimates(cardinalities, self.catalog.read_small(ColumnProfile.state_table(), tables))


SKETCH_SCHEMA = pa.schema(
    [
        ("table_name", pa.string()),
        ("column_name", pa.string()),
        ("registers", pa.binary()),
        ("cardinality", pa.float64()),
        ("filled", pa.int64()),
    ]
)


def _dense_sketches(p: int, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: each column's filled registers (a list of (bucket, register)) as its 2^p registers,
    with its HLL estimate and its number of filled registers."""
    width = 1 << p
    for batch in batches:
        for start in range(0, batch.num_rows, _SKETCHES_PER_BATCH):
            part = batch.slice(start, _SKETCHES_PER_BATCH)
            filled = part.column("filled")
            row = pc.list_parent_indices(filled).to_numpy()
            flat = pc.list_flatten(filled)
            bucket = flat.field("bucket").to_numpy()
            if len(bucket) and bucket.max() >= width:
                wrong = int(row[bucket.argmax()])
                raise ValueError(
                    f"{HllCounters.state_table()} holds buckets beyond precision p={p} (column "
                    f"{part.column('column_name')[wrong]} of table {part.column('table_name')[wrong]}): the "
                    "state was built at a higher precision; run `lakemeta rebuild` after changing "
                    "sketches.precision"
                )
            registers = np.zeros((part.num_rows, width), dtype=np.uint8)
            registers[row, bucket] = flat.field("register").to_numpy().astype(np.uint8)
            offsets = pa.py_buffer(np.arange(part.num_rows + 1, dtype=np.int32) * width)
            yield pa.RecordBatch.from_arrays(
                [
                    part.column("table_name"),
                    part.column("column_name"),
                    pa.Array.from_buffers(
                        pa.binary(), part.num_rows, [None, offsets, pa.py_buffer(registers)]
                    ),
                    pa.array(hll.estimate_cardinality(registers) if part.num_rows else np.zeros(0)),
                    pa.array(np.bincount(row, minlength=part.num_rows).astype(np.int64)),
                ],
                schema=SKETCH_SCHEMA,
            )


def column_sketches(catalog: Catalog, p: int, tables: Sequence[str] | None = None) -> DataFrame:
    """The HLL sketch of every column in the state (of the columns of ``tables`` unless that is None),
    computed in the executors: one row per column with its registers (2^p bytes, per bucket the largest rho
    held; all stored counts are > 0), its distinct-count estimate (BML §2.2) and its number of filled
    registers (``SKETCH_SCHEMA``)."""
    return (
        catalog.read(HllCounters.state_table(), tables)
        .groupBy("table_name", "column_name", "bucket")
        .agg(F.max("rho").alias("register"))
        .groupBy("table_name", "column_name")
        .agg(F.collect_list(F.struct("bucket", "register")).alias("filled"))
        .mapInArrow(functools.partial(_dense_sketches, p), from_arrow_schema(SKETCH_SCHEMA))
    )


def register_matrix(registers: pa.Array | pa.ChunkedArray, p: int) -> np.ndarray:
    """The (columns x 2^p) uint8 matrix of a ``registers`` column of ``column_sketches``, without copying
    where the column is one chunk."""
    if isinstance(registers, pa.ChunkedArray):
        registers = registers.combine_chunks()
    width = 1 << p
    offset_type = np.int64 if pa.types.is_large_binary(registers.type) else np.int32
    offsets = np.frombuffer(registers.buffers()[1], offset_type)[registers.offset :][: len(registers) + 1]
    if len(registers) == 0:
        return np.zeros((0, width), np.uint8)
    if not np.all(np.diff(offsets) == width):
        raise ValueError(f"register rows of {width} bytes expected (precision {p})")
    data = np.frombuffer(registers.buffers()[2], np.uint8)
    return data[offsets[0] : offsets[-1]].reshape(len(registers), width)


def column_cardinalities(catalog: Catalog, p: int, tables: Sequence[str] | None = None) -> pa.Table:
    """Each sketched column's HLL distinct-count estimate (BML §2.2), of the columns of ``tables`` unless
    that is None: table_name, column_name, cardinality; one row per column, computed in the executors."""
    which = "every column" if tables is None else f"the columns of {len(tables)} tables"
    describe_jobs(catalog.spark, f"HLL distinct-count estimates of {which}")
    return column_sketches(catalog, p, tables).select("table_name", "column_name", "cardinality").toArrow()


def counter_sketches(counters: pa.Table, p: int) -> pa.Table:
    """``column_sketches`` of the columns of ``counters`` (stored counter rows, read on the driver): the
    same registers and estimates, from the same kernel (``_dense_sketches``)."""
    registers = counters.group_by(["table_name", "column_name", "bucket"]).aggregate([("rho", "max")])
    per_column = registers.group_by(["table_name", "column_name"]).aggregate(
        [("bucket", "list"), ("rho_max", "list")]
    )
    buckets, maxima = per_column["bucket_list"].combine_chunks(), per_column["rho_max_list"].combine_chunks()
    filled = pa.ListArray.from_arrays(
        buckets.offsets,
        pa.StructArray.from_arrays([buckets.values, maxima.values], names=["bucket", "register"]),
    )
    columns = pa.table(
        {"table_name": per_column["table_name"], "column_name": per_column["column_name"], "filled": filled}
    )
    return pa.Table.from_batches(_dense_sketches(p, iter(columns.to_batches())), SKETCH_SCHEMA)


def distinct_estimates(cardinalities: pa.Table, profile: pa.Table) -> pa.Table:
    """``n_distinct_estimate`` of every column in ``profile`` (``state/column_profile``): the HLL estimate
    (``column_cardinalities``), 0 for a sketched column without a non-null value, null for a nested or
    VARIANT column (not sketched)."""
    estimated = dict(
        zip(
            zip(
                cardinalities["table_name"].to_pylist(), cardinalities["column_name"].to_pylist(), strict=True
            ),
            np.rint(cardinalities["cardinality"].to_numpy()).astype(np.int64).tolist(),
            strict=True,
        )
    )
    keys = list(zip(profile["table_name"].to_pylist(), profile["column_name"].to_pylist(), strict=True))
    nested = [not is_plain_type_name(t) for t in profile["data_type"].to_pylist()]
    return pa.table(
        {
            "table_name": profile["table_name"],
            "column_name": profile["column_name"],
            "n_distinct_estimate": pa.array(
                [
                    None if is_nested else estimated.get(key, 0)
                    for key, is_nested in zip(keys, nested, strict=True)
                ],
                pa.int64(),
            ),
        }
    )


def _partition_tuple_registers(
    combinations: list[list[str]], p: int, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: per column combination, the registers of the task's tuples (rows with a null in
    the combination are not tuples of values and are left out), as (combination, bucket, register) rows."""
    registers_of = np.zeros((len(combinations), 1 << p), dtype=np.uint8)
    for batch in batches:
        for i, combination in enumerate(combinations):
            hashes, valid = hash_tuples([batch.column(c) for c in combination])
            tuple_registers = hll.registers(hll.counter_delta(hashes[valid], p=p))
            np.maximum(registers_of[i], tuple_registers, out=registers_of[i])
    combination, bucket = np.nonzero(registers_of)
    yield pa.RecordBatch.from_arrays(
        [
            pa.array(combination.astype(np.int32)),
            pa.array(bucket.astype(np.int32)),
            pa.array(registers_of[combination, bucket].astype(np.int32)),
        ],
        names=["combination", "bucket", "register"],
    )


def combination_registers(rows: DataFrame, combinations: list[list[str]], p: int) -> np.ndarray:
    """Registers at precision p of the tuples of each column combination of ``rows`` (one row of the
    result per combination): the multi-column sketches of Zhang et al. §4 / BML §5.3, built in a pass
    over only the columns involved. Computed on demand, not kept as state: which combinations matter
    depends on the keys found, and a table's snapshot gives them exactly."""
    involved = sorted({c for combination in combinations for c in combination})
    # Positional names: mapInArrow resolves its input columns by name, unquoted.
    positional = {column: f"c{i}" for i, column in enumerate(involved)}
    renamed = [[positional[column] for column in combination] for combination in combinations]
    tally = functools.partial(_partition_tuple_registers, renamed, p)
    sparse = (
        rows.select(*[source_column(column).alias(positional[column]) for column in involved])
        .mapInArrow(tally, "combination int, bucket int, register int")
        .groupBy("combination", "bucket")
        .agg(F.max("register").alias("register"))
        .toArrow()
    )
    out = np.zeros((len(combinations), 1 << p), dtype=np.uint8)
    out[sparse["combination"].to_numpy(), sparse["bucket"].to_numpy()] = sparse["register"].to_numpy()
    return out
