"""Many over the lake with Spark: the catalog's ``inclusion_dependencies`` (Many Alg. 8-11, distributed).

One pass over the tables, in Spark tasks packed by rows as the run's scan packs them (``scan.max_task_rows``;
a table's columns stay together, and a table above the budget is read in groups of its data files, each
in a task of its own, as ``lakemeta.lake.snapshots.file_groups`` splits it):

1. Signature-Generator (Alg. 3 with the passes of §4.3) in the executors: each table's snapshot at its
   committed version is read with delta-rs, every column turned into its canonical strings
   (``lakemeta.hashing.canonical``: the value equality BML's estimates use, so an integer key and its
   ``decimal(10, 0)`` or string copy relate), its distinct non-null values emitted for validation and its
   Bloom signature and filter statistics (§3.2) emitted as one small row. A column's values are those of
   one table, so the per-task distinct is the global one, no shuffle, except for a table read in parts:
   its parts' signatures are OR-ed and their counts added up on the driver, and its value rows made
   distinct across the parts once, for its distinct counts and for the validator.
2. The signature matrix (Alg. 3) is built on the driver from the signatures (small by construction:
   p·m bits per column) and broadcast; the IND-Proposer (Alg. 4-6 with the indexed bit-vectors of §4.5)
   runs on column ranges in parallel tasks, as Alg. 8's workers (Alg. 9), with the filters of Alg. 10.
3. The IND-Validator (Alg. 7) checks every candidate exactly and distributed: the dependent column's
   values joined with the candidate, anti-joined with the referenced column's values; a candidate with no
   value left over is valid. Then the coverage filter of Alg. 11.

Where the values come from: the tables, not the posting lists. The posting lists hold MATE's normalised
values (case folded, numbers respelt) - equality there is not the values' equality - and a cell per row
(duplicates included), more than the distinct values the validator needs.

What a batch can change: every result is recomputed from the committed snapshots each run. An IND's
validity depends on both columns' whole value sets, and a signature can lose bits only by a rebuild from
the remaining values, so reusing results across runs would need per-column value sets kept as state; a
full pass costs one read of each table.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from lakemeta.arrays import run_starts
from lakemeta.catalog import Catalog
from lakemeta.catalog.relationships import replace_relationships
from lakemeta.config import Config, ScanConfig
from lakemeta.hashing import canonical
from lakemeta.inds.bloom import BloomParams, signature_from_strings, signature_to_bytes
from lakemeta.inds.config import ManyConfig, many_config
from lakemeta.inds.filters import ColumnStats, column_filters, coverage, low_coverage
from lakemeta.inds.matrix import SignatureMatrix
from lakemeta.inds.proposer import column_ranges, propose_range
from lakemeta.lake.snapshots import file_groups, read_columns
from lakemeta.lake.tables import is_plain_type_name, table_path
from lakemeta.spark.placement import balanced_frame
from lakemeta.storage import Location

log = logging.getLogger(__name__)

RESULTS = "inclusion_dependencies"
_DESCRIPTOR_SCHEMA = (
    "table_name string, path string, version long, first_column long, columns array<string>, "
    "files array<string>"
)
_ROWS_SCHEMA = (
    "column_id long, value string, signature binary, set_size long, n_values long, n_distinct long, "
    "all_integer boolean"
)


@dataclass(frozen=True)
class LakeColumns:
    """The columns taking part, by global id: names, signatures and filter statistics (driver side)."""

    table_names: list[str]
    column_names: list[str]
    signatures: np.ndarray  # uint64 [n_columns, words]
    set_sizes: np.ndarray  # int64: distinct non-null values, |dependentSet| / |referencedSet| of Alg. 11
    stats: ColumnStats  # for the filters of Alg. 10


@dataclass(frozen=True)
class TableColumns:
    """One table as Many reads it: its Delta path, the version read and the columns taking part."""

    name: str
    path: str
    version: int
    columns: list[str]
    rows: int = 0  # the snapshot's rows, as the catalog knows them: what the tasks are packed by


@dataclass(frozen=True)
class ManyRun:
    """What one run of Many found and what it cost: the valid INDs after the filters (``RESULTS``'s
    schema), the counts of each stage and its wall time (signatures include reading the tables)."""

    result: pa.Table
    n_tables: int
    n_columns: int
    n_candidates: int
    n_valid: int
    stage_seconds: dict[str, float]


def catalog_tables(catalog: Catalog, lake: Location) -> list[TableColumns]:
    """Every listed table at its committed version; columns of plain, non-binary values only."""
    tables = catalog.read_small("tables").select(["table_name", "last_version", "n_rows"]).to_pylist()
    columns = catalog.read_small("columns").sort_by([("table_name", "ascending"), ("ordinal", "ascending")])
    by_table: dict[str, list[str]] = {}
    for row in columns.select(["table_name", "column_name", "data_type"]).to_pylist():
        kind = row["data_type"]
        if is_plain_type_name(kind) and kind != "binary":
            by_table.setdefault(row["table_name"], []).append(row["column_name"])
    return [
        TableColumns(
            t["table_name"],
            str(table_path(lake, t["table_name"])),
            t["last_version"],
            by_table[t["table_name"]],
            t["n_rows"] or 0,
        )
        for t in sorted(tables, key=lambda t: t["table_name"])
        if by_table.get(t["table_name"])
    ]


_FLUSH_ROWS = 1 << 16  # output rows gathered before a batch is emitted: few batches for many small tables


def _table_rows(
    params: BloomParams, null_values: tuple[str, ...]
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Per table: each column's distinct canonical values, then one row with its signature and stats."""
    names = ["column_id", "value", "signature", "set_size", "n_values", "n_distinct", "all_integer"]

    def column_rows(column_id: int, distinct: pa.Array, stats: ColumnStats, offset: int) -> list[pa.Array]:
        n = len(distinct)
        return [
            pa.array(np.full(n + 1, column_id, np.int64)),
            pa.concat_arrays([distinct, pa.nulls(1, pa.string())]),
            pa.array(
                [None] * n + [signature_to_bytes(signature_from_strings(distinct, params))], pa.binary()
            ),
            pa.array([None] * n + [n], pa.int64()),
            pa.array([None] * n + [int(stats.n_values[offset])], pa.int64()),
            pa.array([None] * n + [int(stats.n_distinct[offset])], pa.int64()),
            pa.array([None] * n + [bool(stats.all_integer[offset])], pa.bool_()),
        ]

    def gathered(parts: list[list[pa.Array]]) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays(
            [pa.concat_arrays([part[i] for part in parts]) for i in range(len(names))], names=names
        )

    def run(descriptors: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        parts: list[list[pa.Array]] = []
        pending = 0
        for record_batch in descriptors:
            for table in record_batch.to_pylist():
                columns = read_columns(table["path"], table["version"], table["columns"], table["files"])
                strings = [canonical(column) for column in columns]
                stats = ColumnStats.from_columns(strings, null_values)
                for offset, column in enumerate(strings):
                    distinct = pc.unique(pc.drop_null(column)).cast(pa.string())
                    parts.append(column_rows(table["first_column"] + offset, distinct, stats, offset))
                    pending += len(distinct) + 1
                if pending >= _FLUSH_ROWS:
                    yield gathered(parts)
                    parts, pending = [], 0
        if parts:
            yield gathered(parts)

    return run


def table_descriptors(
    spark: SparkSession, tables: list[TableColumns], max_task_rows: int = ScanConfig.max_task_rows
) -> DataFrame:
    """One row per table (path, version, columns and the global id of its first column), or per group of
    its data files for a table above ``max_task_rows`` rows, packed into tasks by rows; global column ids
    follow the order of ``tables``."""
    rows, first = [], 0
    for table in tables:
        described = (table.name, table.path, table.version, first, table.columns)
        groups = file_groups(table.path, table.version, max_task_rows) if table.rows > max_task_rows else None
        for files, count in groups or [([], table.rows)]:
            rows.append((max(count, 1), (*described, files)))
        first += len(table.columns)
    return balanced_frame(spark, rows, _DESCRIPTOR_SCHEMA, max_task_rows)


def _scan(
    spark: SparkSession, tables: list[TableColumns], config: ManyConfig, max_task_rows: int
) -> DataFrame:
    """Step 1 over every table: value rows (``value`` set) and one column row per column and part of a
    table (``signature``)."""
    return table_descriptors(spark, tables, max_task_rows).mapInArrow(
        _table_rows(config.params, config.filters.null_values), _ROWS_SCHEMA
    )


def _lake_columns(
    scanned: DataFrame, tables: list[TableColumns], params: BloomParams, null_values: tuple[str, ...]
) -> tuple[LakeColumns, DataFrame, DataFrame | None]:
    """The column rows on the driver, in column-id order (one signature and three counts per column): a
    column read in parts has its parts' signatures OR-ed (a Bloom signature of a union), their valued rows
    added up, and its distinct counts counted over its values made distinct across the parts. Also the
    value rows (column_id, value) for validation, each column's values distinct, and the frame of the split
    columns' distinct values, persisted, that the caller unpersists after validation (None when no column
    was read in parts)."""
    rows = (
        scanned.where(F.col("signature").isNotNull())
        .select("column_id", "signature", "set_size", "n_values", "n_distinct", "all_integer")
        .toArrow()
        .sort_by("column_id")
    )
    table_names = [table.name for table in tables for _ in table.columns]
    column_names = [column for table in tables for column in table.columns]
    ids = rows["column_id"].to_numpy()
    starts = np.flatnonzero(run_starts(ids))
    if not np.array_equal(ids[starts], np.arange(len(column_names))):
        raise RuntimeError(f"expected signatures of {len(column_names)} columns, got {len(starts)}")
    packed = b"".join(rows["signature"].to_pylist())
    parts = np.frombuffer(packed, dtype="<u8").reshape(len(rows), params.n_words)
    signatures = np.bitwise_or.reduceat(parts, starts, axis=0) if len(rows) else parts
    part_values = rows["n_values"].to_numpy()
    n_values = np.add.reduceat(part_values, starts) if len(rows) else part_values
    # at least one valued row, and all of them integers in every part that has one
    integer_or_empty = rows["all_integer"].to_numpy(zero_copy_only=False) | (part_values == 0)
    all_integer = (n_values > 0) & (np.logical_and.reduceat(integer_or_empty, starts) if len(rows) else True)
    set_sizes, n_distinct = rows["set_size"].to_numpy()[starts], rows["n_distinct"].to_numpy()[starts]
    values = scanned.where(F.col("value").isNotNull()).select("column_id", "value")
    split = np.flatnonzero(np.diff(np.append(starts, len(rows))) > 1)
    merged = None
    if len(split):
        # A value in several parts is one value: made distinct once, then counted and validated.
        in_split = F.col("column_id").isin(split.tolist())
        merged = values.where(in_split).distinct().persist(StorageLevel.MEMORY_AND_DISK)
        recounted = (
            merged.groupBy("column_id")
            .agg(
                F.count("*").alias("set_size"),
                F.count(F.when(~F.col("value").isin(list(null_values)), True)).alias("n"),
            )
            .toArrow()
        )
        at = recounted["column_id"].to_numpy()
        set_sizes, n_distinct = set_sizes.copy(), n_distinct.copy()
        set_sizes[split], n_distinct[split] = 0, 0  # a column of no value has no value row
        set_sizes[at], n_distinct[at] = recounted["set_size"].to_numpy(), recounted["n"].to_numpy()
        values = values.where(~in_split).unionByName(merged)
    stats = ColumnStats(n_values, n_distinct, all_integer)
    return (
        LakeColumns(table_names, column_names, signatures.astype(np.uint64), set_sizes, stats),
        values,
        merged,
    )


def _propose(spark: SparkSession, columns: LakeColumns, config: ManyConfig) -> np.ndarray:
    """Step 2: candidates (dep, ref) from the broadcast matrix, one task per column range (Alg. 8-10)."""
    n_columns = len(columns.column_names)
    matrix = SignatureMatrix.from_signatures(columns.signatures, config.params)
    filtered_cols, filtered_refs = column_filters(columns.stats, config.filters, n_columns)
    context = spark.sparkContext
    shared = context.broadcast((matrix, filtered_cols, filtered_refs))
    ranges = column_ranges(n_columns, max(1, min(n_columns, 2 * context.defaultParallelism)))

    def propose(bounds: tuple[int, int]) -> list[np.ndarray]:
        matrix, cols, refs = shared.value
        return [propose_range(matrix, bounds[0], bounds[1], config.strategy, config.indexed, cols, refs)]

    try:
        # The candidate list, small by construction next to the values it is checked against.
        parts = context.parallelize(ranges, len(ranges)).flatMap(propose).collect()
    finally:
        shared.unpersist()
    return np.concatenate([np.zeros((0, 2), np.int64), *parts]).astype(np.int64)


def _validate(spark: SparkSession, values: DataFrame, candidates: np.ndarray) -> np.ndarray:
    """Step 3, Alg. 7 distributed: whether each candidate's dependent values all occur in its referenced
    column (the dependent values anti-joined with the referenced ones; none left over means valid)."""
    if not len(candidates):
        return np.zeros(0, dtype=bool)
    pairs = spark.createDataFrame(pa.table({"dep": candidates[:, 0], "ref": candidates[:, 1]}))
    dependent = values.withColumnRenamed("column_id", "dep").join(pairs, "dep")
    # only the referenced columns' values take part in the shuffle of the anti-join
    referencing = spark.createDataFrame(pa.table({"column_id": np.unique(candidates[:, 1])}))
    referenced = values.join(F.broadcast(referencing), "column_id", "left_semi")
    referenced = referenced.withColumnRenamed("column_id", "ref")
    missing = dependent.join(referenced, ["ref", "value"], "left_anti").select("dep", "ref").distinct()
    invalid = missing.toArrow()  # a subset of the candidate list
    n = max(int(candidates.max()) + 1, 1)
    invalid_keys = invalid["dep"].to_numpy() * n + invalid["ref"].to_numpy()
    return ~np.isin(candidates[:, 0] * n + candidates[:, 1], invalid_keys)


def discover_inclusion_dependencies(
    spark: SparkSession,
    tables: list[TableColumns],
    config: ManyConfig,
    max_task_rows: int = ScanConfig.max_task_rows,
) -> ManyRun:
    """All valid unary INDs among ``tables`` (Alg. 8-11): signatures and distinct values in one pass,
    candidates from the broadcast matrix, exact validation, then the coverage filter."""
    stage_seconds = {}
    started = time.perf_counter()
    spark.sparkContext.setJobDescription(f"Many: signatures of the columns of {len(tables)} tables")
    scanned = _scan(spark, tables, config, max_task_rows).persist(StorageLevel.MEMORY_AND_DISK)
    merged = None
    try:
        columns, values, merged = _lake_columns(scanned, tables, config.params, config.filters.null_values)
        stage_seconds["signatures"] = time.perf_counter() - started
        spark.sparkContext.setJobDescription(f"Many: candidates among {len(columns.column_names)} columns")
        candidates = _propose(spark, columns, config)
        stage_seconds["candidates"] = time.perf_counter() - started - stage_seconds["signatures"]
        # Beyond Alg. 7: a dependent column with more distinct values than its referenced one cannot be
        # included in it. Bloom signatures of large columns fill up and propose both directions of such
        # pairs; the larger dependent side is the costliest to validate, and it is left out unread.
        possible = columns.set_sizes[candidates[:, 0]] <= columns.set_sizes[candidates[:, 1]]
        spark.sparkContext.setJobDescription(
            f"Many: validation of {int(possible.sum())} candidates ({len(candidates)} proposed)"
        )
        valid = np.zeros(len(candidates), dtype=bool)
        valid[possible] = _validate(spark, values, candidates[possible])
        stage_seconds["validation"] = time.perf_counter() - started - sum(stage_seconds.values())
    finally:
        scanned.unpersist()
        if merged is not None:
            merged.unpersist()
    deps, refs = candidates[valid, 0], candidates[valid, 1]
    dep_distinct, ref_distinct = columns.set_sizes[deps], columns.set_sizes[refs]
    kept = np.ones(len(deps), dtype=bool)
    if config.filters.low_coverage:
        kept = ~low_coverage(dep_distinct, ref_distinct, config.filters.tau)
    deps, refs, dep_distinct, ref_distinct = deps[kept], refs[kept], dep_distinct[kept], ref_distinct[kept]
    tables_of = pa.array(columns.table_names, pa.string())
    names_of = pa.array(columns.column_names, pa.string())
    result = pa.table(
        {
            "dep_table": tables_of.take(pa.array(deps)),
            "dep_column": names_of.take(pa.array(deps)),
            "ref_table": tables_of.take(pa.array(refs)),
            "ref_column": names_of.take(pa.array(refs)),
            "dep_distinct": pa.array(dep_distinct, pa.int64()),
            "ref_distinct": pa.array(ref_distinct, pa.int64()),
            "coverage": pa.array(coverage(dep_distinct, ref_distinct), pa.float64()),
        }
    )
    return ManyRun(
        result, len(tables), len(columns.column_names), len(candidates), int(valid.sum()), stage_seconds
    )


def run_step(catalog: Catalog, lake: Location, config: Config) -> int:
    """The discovery step ``inclusion_dependencies`` (``lakemeta.registry``): all valid unary INDs among
    the lake's committed tables into ``inclusion_dependencies`` (replaced whole, each IND's first run
    kept and the changes recorded: ``lakemeta.catalog.relationships``); every table's committed snapshot
    is read. Returns the number of INDs kept."""
    tables = catalog_tables(catalog, lake)
    run = discover_inclusion_dependencies(
        catalog.spark, tables, many_config(config.inds), config.scan.max_task_rows
    )
    replace_relationships(catalog, RESULTS, run.result, config.discovery_settings())
    log.info(
        "inclusion dependencies (Many, m=%d k=%d p=%d, %s filters): %d tables, %d columns, %d candidates, "
        "%d valid, %d kept (signatures %.1f s, candidates %.1f s, validation %.1f s)",
        config.inds.m,
        config.inds.k,
        config.inds.p,
        config.inds.filters,
        run.n_tables,
        run.n_columns,
        run.n_candidates,
        run.n_valid,
        len(run.result),
        *run.stage_seconds.values(),
    )
    return len(run.result)
