"""Inclusion coefficients Φ(X, Y) = |X ∩ Y| / |X| of column pairs across tables, by BML (BML §3).

From the HLL state (``state.column_sketches``) every ordered pair (X, Y) of columns in different
tables is considered, and a pair is estimated unless a cheap exact argument rules it out first:

* type families: the canonical forms of two columns can only coincide when their types can hold the same
  values: numbers with numbers (integers, decimals and floating point share one canonical form), dates
  with dates, timestamps with timestamps, booleans with booleans, binary with binary; strings can hold the
  text of any of them, so a string column pairs with every family;
* empty columns: a column without a non-null value has no inclusion coefficient;
* cardinality: Φ(X, Y) <= |Y| / |X|, so when |X| is far above |Y| the pair cannot reach the floor. The
  cardinalities are HLL estimates with relative standard error 1.04 / sqrt(2^p) (BML §2.2,
  ``hll.relative_standard_error``); a pair is pruned only when even |Y| inflated and |X| deflated by
  ``tiles.CARDINALITY_SIGMAS`` standard errors keeps the ratio below the floor, so estimation error does not
  prune a pair that reaches it;
* no shared register: a pair where Y dominates none of X's filled registers has Φ̂ = 0 under the exact
  marginal (``dominance``); the pairs that remain are found through an index of the registers, without
  visiting the others.

Every other pair is estimated (Alg. 1-2 with every bucket's exact marginal at m = p, ``bml``; error bound
by Theorem 4 and Eq. 11, e_p from the binomial variance). Where the estimate plus its bound reaches the
floor and one of the two columns is small (at most ``sketches.exact_max_distinct`` values), Φ is counted
exactly from the value sets of the state instead (in the tile where both are small, else by a join:
``tiles``, ``values.inclusion``): that is where the sketch is weakest, a few values inside a large column
(BML's Theorem 1), and where counting is cheap; the other pairs that may reach the floor, of two large
columns, are estimated again from the joint distribution of their register pairs (``joint``), which is
three times more accurate there. The pairs that reach the floor, and those whose bound is too wide to say
(``undetermined``, no estimate), are written to ``inclusion_estimates`` with their ``status``,
replacing its content (or the rows of the changed tables) in one commit (a deterministic function of the
state, so a retried run writes the same rows). ``run_discovery`` runs it as the discovery step
``inclusion_estimates`` (:mod:`lakemeta.registry`); it reads the state only, not the lake.

Where it runs. The driver holds one row per column (names, types, cardinalities, blocks), never more
pairs than ``scan.driver_max_pairs``: in a lake of small real tables millions of pairs reach the floor.
Where the HLL counters and the value sets are each at most ``scan.driver_state_bytes``, the tiles run in
this process over Arrow tables read with delta-rs (a Spark pass costs a one-table batch about 13 jobs
whatever the lake's size), tile after tile while the pairs found stay within ``scan.driver_max_pairs``;
a lake small in bytes but dense in pairs passes that bound inside a tile, and the step goes on in
the executors from the start, where the pairs are named, counted where pending and written to the
catalog by Spark, never collected. The kernel is the same.

What a batch changes: a pair's estimate, bound and status depend on its two columns alone (their
registers, cardinalities, distinct counts, types and tables). So after some batches only the pairs with a
column of a changed table are estimated: the changed columns are put in blocks of their own, and only the
tiles with such a block are computed (a handful of tiles for a few changed columns, against n_blocks^2);
the rows of pairs of two unchanged columns are kept from the last discovery, when it ran with the same
``sketches`` settings (its commit records them, ``freshness.changed_since``). The result equals a
discovery from scratch (``tests/spark/sketches/test_discover.py``).
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema

from lakemeta.catalog import Catalog
from lakemeta.catalog.freshness import changed_since, reflecting
from lakemeta.catalog.predicates import is_in, is_in_sql, of_tables
from lakemeta.config import Config, ScanConfig, SketchConfig, settings_of
from lakemeta.profile.state import ColumnProfile
from lakemeta.sketches.pair_tiles import (
    EXACT,
    PENDING,
    STATUS,
    UNDETERMINED,
    ColumnFacts,
    PairBudgetError,
    ValueSets,
    assign_blocks,
    estimate_tile,
)
from lakemeta.sketches.state import HllCounters, column_sketches, counter_sketches, register_matrix
from lakemeta.spark.portable import arrow_frame, describe_jobs
from lakemeta.storage import Location
from lakemeta.values.inclusion import PAIR, shared_values, value_sets
from lakemeta.values.state import ColumnValues

log = logging.getLogger(__name__)

TARGET = "inclusion_estimates"
_COLUMNS = [*PAIR, "estimate", "error_bound", "status"]
# What a tile's task returns: the pairs that reach the floor or may reach it, by column id, and one row
# (dep = -1) with the number of pairs it examined.
_TILE_SCHEMA = pa.schema(
    [
        ("dep", pa.int64()),
        ("ref", pa.int64()),
        ("estimate", pa.float64()),
        ("error_bound", pa.float64()),
        ("status", pa.int8()),
        ("examined", pa.int64()),
    ]
)
_VALUE_LIST = pa.list_(pa.int64())

_FAMILIES = (
    ("numeric", re.compile(r"^(tinyint|smallint|int|bigint|float|double|decimal.*)$")),
    ("string", re.compile(r"^(string|varchar.*|char.*)$")),
    ("date", re.compile(r"^date$")),
    ("timestamp", re.compile(r"^timestamp.*$")),
    ("boolean", re.compile(r"^boolean$")),
    ("binary", re.compile(r"^binary$")),
)


def type_family(data_type: str) -> str | None:
    """The family of a Spark type name (``simpleString``), None for types that are not sketched."""
    return next((family for family, pattern in _FAMILIES if pattern.match(data_type)), None)


def compatible(family_x: str, family_y: str) -> bool:
    """Whether columns of these families can hold the same canonical values."""
    return family_x == family_y or "string" in (family_x, family_y)


@dataclass
class PairCounts:
    """What happened to the ordered cross-table column pairs, for the job's log."""

    considered: int = 0
    estimated: int = 0
    exact: int = 0
    undetermined: int = 0
    written: int = 0


def column_facts(
    tables: np.ndarray, families: list[str | None], cardinality: np.ndarray, n_distinct: np.ndarray
) -> ColumnFacts:
    """What every tile needs to know of each column (``tiles.ColumnFacts``), from its table name, type
    family (None: not sketched, compatible with none), HLL cardinality and exact distinct count."""
    table_of = np.unique(tables, return_inverse=True)[1].astype(np.int64)
    family_names = sorted({f for f in families if f is not None})
    family_of = np.array(
        [family_names.index(f) if f is not None else len(family_names) for f in families], np.int64
    )
    compatible_matrix = np.zeros((len(family_names) + 1,) * 2, dtype=bool)
    compatible_matrix[:-1, :-1] = [[compatible(a, b) for b in family_names] for a in family_names]
    return ColumnFacts(
        table_of,
        family_of,
        compatible_matrix,
        np.asarray(cardinality, np.float64),
        np.asarray(n_distinct, np.int64),
    )


def _column_families(catalog: Catalog, tables: np.ndarray, columns: np.ndarray) -> list[str | None]:
    profile = catalog.read_small(ColumnProfile.state_table())
    types = dict(
        zip(
            zip(profile["table_name"].to_pylist(), profile["column_name"].to_pylist(), strict=True),
            profile["data_type"].to_pylist(),
            strict=True,
        )
    )
    return [type_family(types.get((t, c), "")) for t, c in zip(tables, columns, strict=True)]


def _value_counts(known_columns: pa.Table, tables: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Each column's exact number of distinct values (``columns.n_distinct`` of the catalog's ``columns``,
    from the value sets), 0 where unknown."""
    if "n_distinct" not in known_columns.column_names:
        return np.zeros(len(tables), np.int64)
    known = {
        (t, c): n
        for t, c, n in zip(
            known_columns["table_name"].to_pylist(),
            known_columns["column_name"].to_pylist(),
            known_columns["n_distinct"].to_pylist(),
            strict=True,
        )
        if n is not None
    }
    return np.array([known.get(key, 0) for key in zip(tables, columns, strict=True)], np.int64)


def _tile_task(
    facts: ColumnFacts, config: SketchConfig, max_pairs: int | None, x: pa.Table, y: pa.Table
) -> pa.Table:
    """applyInArrow body of one tile (its first arguments bound): x holds the rows (column, registers,
    hashes) of block a, y those of block b (empty for a = b); ``max_pairs``: the bound of a tile on the
    driver, None in the executors (``estimate_tile``)."""
    p = config.precision
    tile = estimate_tile(
        x["column"].to_numpy(),
        register_matrix(x["registers"], p),
        ValueSets.of_lists(x["hashes"]),
        y["column"].to_numpy() if len(y) else None,
        register_matrix(y["registers"], p) if len(y) else None,
        ValueSets.of_lists(y["hashes"]) if len(y) else None,
        facts,
        config,
        max_pairs,
    )
    # one more row, of no pair, carries the number of pairs the tile examined
    return pa.table(
        {
            "dep": np.append(tile.dep, -1),
            "ref": np.append(tile.ref, -1),
            "estimate": np.append(tile.estimate, 0.0),
            "error_bound": np.append(tile.error_bound, 0.0),
            "status": np.append(tile.status, EXACT).astype(np.int8),
            "examined": np.append(np.zeros(len(tile.dep), np.int64), tile.examined),
        },
        schema=_TILE_SCHEMA,
    )


def _tiles_in_spark(blocks: DataFrame, tiles: _Tiles) -> DataFrame:
    """The tiles of ``blocks`` (column, block, registers, hashes) with a changed block (the first
    ``n_changed_blocks``) estimated in the executors (``tiles``): block a's rows go to the tiles (a, b) as
    x and to the tiles (b, a), b != a, as y. The pairs stay there (a DataFrame, not collected)."""
    n_blocks, n_changed_blocks = tiles.n_blocks, tiles.n_changed_blocks
    other = F.explode(F.sequence(F.lit(0), F.lit(n_blocks - 1))).alias("other")
    spread = blocks.select("column", "block", "registers", "hashes", other).where(
        (F.col("block") < n_changed_blocks) | (F.col("other") < n_changed_blocks)
    )
    x_side = spread.select(
        "column", "registers", "hashes", (F.col("block") * n_blocks + F.col("other")).alias("tile")
    )
    # new names for the second side's columns, so that the cogroup does not see one column on both sides
    y_side = spread.where(F.col("other") != F.col("block")).select(
        F.col("column").alias("column"),
        F.col("registers").alias("registers"),
        F.col("hashes").alias("hashes"),
        (F.col("other") * n_blocks + F.col("block")).alias("tile"),
    )
    return (
        x_side.groupBy("tile")
        .cogroup(y_side.groupBy("tile"))
        .applyInArrow(
            functools.partial(_tile_task, tiles.facts, tiles.config, None), from_arrow_schema(_TILE_SCHEMA)
        )
    )


def _tiles_on_driver(placed: pa.Table, tiles: _Tiles, max_pairs: int) -> pa.Table:
    """``_tiles_in_spark`` in this process, tile by tile, for ``placed`` (column, block, registers,
    hashes): the tile (a, b) with a changed block takes block a's rows as x and, for b != a, block b's
    as y. Raises ``PairBudgetError`` once the pairs found pass ``max_pairs``, inside the tile that
    passes it: this process holds at most that many pairs and one block of estimates."""
    block, n_blocks = placed["block"].to_numpy(), tiles.n_blocks
    sides = placed.select(["column", "registers", "hashes"])
    empty = sides.schema.empty_table()
    found, n_pairs = [], 0
    for a in range(n_blocks):
        for b in range(n_blocks):
            if a >= tiles.n_changed_blocks and b >= tiles.n_changed_blocks:
                continue
            x, y = sides.filter(pa.array(block == a)), sides.filter(pa.array(block == b)) if b != a else empty
            found.append(_tile_task(tiles.facts, tiles.config, max_pairs - n_pairs, x, y))
            n_pairs += found[-1].num_rows - 1  # the tile's row of counts is no pair
    return pa.concat_tables(found) if found else _TILE_SCHEMA.empty_table()


def _blocks(
    filled: np.ndarray, held: np.ndarray, changed: np.ndarray, config: SketchConfig
) -> tuple[np.ndarray, int]:
    """Each column's block, the changed columns' blocks first and apart from the others, and how many
    blocks hold changed columns: the tiles with one of those hold every pair with a changed column."""
    block = np.zeros(len(filled), np.int64)
    p, size = config.precision, config.tile_bytes
    changed_blocks = assign_blocks(filled[changed], p, size, held[changed])
    n_changed_blocks = int(changed_blocks.max()) + 1 if len(changed_blocks) else 0
    block[changed] = changed_blocks
    block[~changed] = assign_blocks(filled[~changed], p, size, held[~changed]) + n_changed_blocks
    return block, n_changed_blocks


@dataclass(frozen=True)
class InclusionRun:
    """One run of the step: the rows of ``inclusion_estimates`` it computed (of the pairs with a column of
    a ``changed_tables`` table, or every pair when that is None; an Arrow table where the run was placed
    on the driver, else a DataFrame the executors hold), and its counts (``written`` is known once
    written)."""

    rows: pa.Table | DataFrame
    counts: PairCounts
    changed_tables: set[str] | None
    on_driver: bool
    persisted: DataFrame | None = None  # the tiles' output the executors keep until the rows are written

    def release(self) -> None:
        """Drop what the executors keep for the rows (after they are written)."""
        if self.persisted is not None:
            self.persisted.unpersist()

    def replaced(self) -> tuple[str, str] | None:
        """The rows of the stored table these rows replace, as a predicate for delta-rs and for Spark;
        None: all of them."""
        if self.changed_tables is None:
            return None
        tables = sorted(self.changed_tables)
        return (
            f"{is_in('dep_table', tables)} OR {is_in('ref_table', tables)}",
            f"{is_in_sql('dep_table', tables)} OR {is_in_sql('ref_table', tables)}",
        )

    def table(self) -> pa.Table:
        """The rows as an Arrow table, sorted by pair (for the tests' comparisons: the step never collects
        the executors' rows)."""
        # every pair of the run, for the tests' small lakes: the step never calls it
        rows = self.rows if isinstance(self.rows, pa.Table) else self.rows.toArrow()
        self.release()
        return rows.select(_COLUMNS).sort_by([(name, "ascending") for name in PAIR])


def estimate_inclusions(
    catalog: Catalog,
    config: SketchConfig,
    incremental: bool = True,
    driver_state_bytes: int = 0,
    driver_max_pairs: int = ScanConfig.driver_max_pairs,
) -> InclusionRun:
    """The rows of ``inclusion_estimates`` for every candidate pair: the pairs that reach the floor or
    may reach it:

    * ``exact``: one of the two columns has at most ``exact_max_distinct`` values and the estimate plus
      its bound reaches the floor: Φ counted from the value sets, kept when it reaches the floor, with
      bound 0;
    * ``estimated``: two large columns, whose joint estimate (``joint``) reaches the floor with a bound of
      at most ``max_error_bound``;
    * ``undetermined``: the bound is wider than ``max_error_bound`` and the estimate plus the bound
      reaches the floor: no estimate is reported, as the sketch cannot say (an FK search still treats the
      pair as a candidate, ``fks.discover``).

    ``incremental``: where the stored estimates were written with these settings, only the pairs with a
    column of a table changed since are computed (a pair's estimate depends on its two columns alone); the
    others' stored rows stand. ``driver_state_bytes``, ``driver_max_pairs``: the placement's bounds
    (module docstring)."""
    spark = catalog.spark
    counts = PairCounts()
    changed_tables = changed_since(catalog, [TARGET], settings_of(sketches=config)) if incremental else None
    if changed_tables == set():
        return InclusionRun(catalog.arrow_schema(TARGET).empty_table(), counts, changed_tables, True)
    catalog_columns = catalog.read_small("columns")  # one row per column
    on_driver = all(
        catalog.reads_on_driver(name, None, driver_state_bytes)
        for name in (HllCounters.state_table(), ColumnValues.state_table())
    )
    sketches: DataFrame | None = None
    persisted: DataFrame | None = None
    if on_driver:
        counters = catalog.read_small(
            HllCounters.state_table(), None, ["table_name", "column_name", "bucket", "rho"]
        )
        known = counter_sketches(counters, config.precision)
    else:
        describe_jobs(spark, "HLL sketches of every column, for the inclusion estimates")
        sketches = column_sketches(catalog, config.precision).persist()
        # one row per column, without its registers: they stay in the executors
        known = sketches.select("table_name", "column_name", "cardinality", "filled").toArrow()
    try:
        # one row per column from here on, on the driver: names, families, sizes, blocks
        known = known.sort_by([("table_name", "ascending"), ("column_name", "ascending")])
        tables = known["table_name"].to_numpy(zero_copy_only=False).astype(object)
        columns = known["column_name"].to_numpy(zero_copy_only=False).astype(object)
        value_counts = _value_counts(catalog_columns, tables, columns)
        facts = column_facts(
            tables, _column_families(catalog, tables, columns), known["cardinality"].to_numpy(), value_counts
        )
        counts.considered = facts.cross_table_pairs()
        changed = (
            np.ones(len(tables), bool)
            if changed_tables is None
            else of_tables(known["table_name"], changed_tables)
        )
        # the value sets a tile holds: every column's on the driver (a small lake), the small columns' in
        # the executors, where a small column in a large one is counted by a join after the tiles
        held = (value_counts > 0) & (on_driver | (value_counts <= config.exact_max_distinct))
        block, n_changed_blocks = _blocks(
            known["filled"].to_numpy(), np.where(held, value_counts, 0), changed, config
        )
        n_blocks = int(block.max()) + 1 if len(block) else 0
        n_tiles = n_blocks * n_blocks - (n_blocks - n_changed_blocks) ** 2
        ids = pa.table(
            {
                "column": pa.array(np.arange(len(known), dtype=np.int64)),
                "table_name": known["table_name"],
                "column_name": known["column_name"],
                "n_distinct": pa.array(value_counts, pa.int64()),
            }
        )
        tiles = _Tiles(ids, block, held, n_blocks, n_changed_blocks, facts, config)
        describe_jobs(
            spark,
            f"inclusion estimates of the pairs of {int(changed.sum())} changed columns among {len(known)}, "
            f"in {n_tiles} tiles",
        )
        if on_driver:
            try:
                rows = _on_driver(catalog, known["registers"], tiles, counts, driver_max_pairs)
            except PairBudgetError as beyond:
                log.info("inclusion estimates: %s, computed again in the executors", beyond)
                on_driver = False
                sketches = column_sketches(catalog, config.precision).persist()
        if not on_driver:
            rows, persisted = _in_executors(catalog, sketches, tiles, counts)
    finally:
        if sketches is not None:
            sketches.unpersist()
    log.info(
        "inclusion estimates: %d columns (%s changed) in %d blocks, %d tiles %s, %d cross-table pairs; "
        "%d estimated (a dominated register, types and cardinalities that allow the floor %.2f), %d counted "
        "exactly from the value sets (reaching the floor, or counted by a join), %d undetermined",
        len(tables),
        "all" if changed_tables is None else int(changed.sum()),
        n_blocks,
        n_tiles,
        "on the driver" if on_driver else "in the executors",
        counts.considered,
        counts.estimated,
        config.inclusion_floor,
        counts.exact,
        counts.undetermined,
    )
    return InclusionRun(rows, counts, changed_tables, on_driver, persisted)


def _named(found: pa.Table, ids: pa.Table) -> pa.Table:
    """Rows of ``inclusion_estimates`` for the tiles' pairs (by column id); an undetermined row has no
    estimate."""
    status = found["status"].to_numpy()
    names = np.asarray(STATUS, dtype=object)
    dep, ref = pa.array(found["dep"].to_numpy()), pa.array(found["ref"].to_numpy())
    return pa.table(
        {
            "dep_table": ids["table_name"].take(dep),
            "dep_column": ids["column_name"].take(dep),
            "ref_table": ids["table_name"].take(ref),
            "ref_column": ids["column_name"].take(ref),
            "estimate": pa.array(found["estimate"].to_numpy(), pa.float64(), mask=status == UNDETERMINED),
            "error_bound": found["error_bound"],
            "status": pa.array(names[status], pa.string()),
        }
    )


@dataclass(frozen=True)
class _Tiles:
    """What both placements of the tiles read, one row per column: ids (``column``, ``table_name``,
    ``column_name``, ``n_distinct``), each column's block and whether its value set is held in its tiles;
    how many blocks there are and how many hold changed columns; the tiles' facts and settings."""

    ids: pa.Table
    block: np.ndarray
    held: np.ndarray
    n_blocks: int
    n_changed_blocks: int
    facts: ColumnFacts
    config: SketchConfig


def _on_driver(
    catalog: Catalog, registers: pa.ChunkedArray, tiles: _Tiles, counts: PairCounts, max_pairs: int
) -> pa.Table:
    """The tiles in this process, over the sketches' ``registers`` and every value set read with
    delta-rs (a small lake: no pair is left pending); ``PairBudgetError`` past ``max_pairs`` pairs."""
    ids, held = tiles.ids, tiles.held
    stored = catalog.read_small(ColumnValues.state_table(), None, ["table_name", "column_name", "hash"])
    by_column = (
        stored.join(ids.select(["table_name", "column_name", "column"]), ["table_name", "column_name"])
        .sort_by([("column", "ascending"), ("hash", "ascending")])
        .group_by("column", use_threads=False)
        .aggregate([("hash", "list")])
    )
    hashes = pa.nulls(len(ids), _VALUE_LIST)
    if len(by_column):
        at = np.full(len(ids), -1, np.int64)
        at[by_column["column"].to_numpy()] = np.arange(len(by_column))
        lists = by_column["hash_list"].combine_chunks().cast(_VALUE_LIST)
        hashes = lists.take(pa.array(np.where(held & (at >= 0), at, -1), mask=~(held & (at >= 0))))
    placed = pa.table(
        {"column": ids["column"], "block": pa.array(tiles.block), "registers": registers, "hashes": hashes}
    )
    found = _tiles_on_driver(placed, tiles, max_pairs)
    status = found["status"].to_numpy()
    pairs = pc.greater_equal(found["dep"], 0)
    counts.estimated = int(pc.sum(found["examined"]).as_py() or 0)
    counts.exact = int(((status == EXACT) & pairs.to_numpy(zero_copy_only=False)).sum())
    counts.undetermined = int((status == UNDETERMINED).sum())
    if (status == PENDING).any():
        raise AssertionError("a pair left pending though the tiles held every value set")
    return _named(found.filter(pairs), ids).sort_by([(name, "ascending") for name in PAIR])


def _in_executors(
    catalog: Catalog, sketches: DataFrame, tiles: _Tiles, counts: PairCounts
) -> tuple[DataFrame, DataFrame]:
    """The tiles in the executors, and the pending pairs counted by a join there: the rows of
    ``inclusion_estimates`` as a DataFrame, named by a broadcast join of the column ids (one row per
    column), and the tiles' output it reads, persisted; only counts reach the driver."""
    spark, ids, config = catalog.spark, tiles.ids, tiles.config
    placed = ids.append_column("block", pa.array(tiles.block))
    hashes = (
        value_sets(catalog, ids.filter(pa.array(tiles.held)))
        .groupBy("column")
        .agg(F.array_sort(F.collect_list("hash")).alias("hashes"))
    )
    blocks = sketches.join(
        F.broadcast(arrow_frame(spark, placed.drop_columns(["n_distinct"]))), ["table_name", "column_name"]
    ).join(hashes, "column", "left")
    found = _tiles_in_spark(blocks, tiles).persist()
    try:
        tally = found.groupBy("status").agg(
            F.sum((F.col("dep") >= 0).cast("long")).alias("pairs"), F.sum("examined").alias("examined")
        )
        by_status = {row["status"]: row for row in tally.collect()}  # a row per status
        counts.estimated = sum(int(row["examined"] or 0) for row in by_status.values())
        counts.undetermined = int(by_status[UNDETERMINED]["pairs"]) if UNDETERMINED in by_status else 0
        counts.exact = sum(int(by_status[s]["pairs"]) for s in (EXACT, PENDING) if s in by_status)
        reported = found.where((F.col("dep") >= 0) & (F.col("status") != PENDING))
        if PENDING in by_status:
            distinct = F.broadcast(arrow_frame(spark, ids.select(["column", "n_distinct"])))
            pending = (
                found.where(F.col("status") == PENDING)
                .select("dep", "ref")
                .join(distinct.toDF("dep", "dep_distinct"), "dep")
                .join(distinct.toDF("ref", "ref_distinct"), "ref")
            )
            phi = F.col("shared") / F.greatest(F.col("dep_distinct"), F.lit(1))
            counted = (
                shared_values(catalog, pending, ids)
                .where(phi >= config.inclusion_floor)
                .select(
                    "dep",
                    "ref",
                    phi.alias("estimate"),
                    F.lit(0.0).alias("error_bound"),
                    F.lit(EXACT).cast("tinyint").alias("status"),
                )
            )
            reported = reported.select("dep", "ref", "estimate", "error_bound", "status").unionByName(counted)
        names = F.broadcast(arrow_frame(spark, ids.select(["column", "table_name", "column_name"])))
        status_name = F.element_at(
            F.array(*[F.lit(name) for name in STATUS]), F.col("status").cast("int") + 1
        )
        rows = (
            reported.join(names.toDF("dep", "dep_table", "dep_column"), "dep")
            .join(names.toDF("ref", "ref_table", "ref_column"), "ref")
            .select(
                *PAIR,
                F.when(F.col("status") == UNDETERMINED, F.lit(None))
                .otherwise(F.col("estimate"))
                .alias("estimate"),
                "error_bound",
                status_name.alias("status"),
            )
        )
        return rows, found
    except BaseException:
        found.unpersist()
        raise


def run_discovery(catalog: Catalog, lake: Location, config: Config, committed: int | None) -> PairCounts:
    """The discovery step ``inclusion_estimates``: it reads the state only, not the lake, and estimates
    again only the pairs with a column of a table changed since the last discovery. The rows replace the
    table's content (or its rows of the changed tables) in one commit, which records the run and settings
    they reflect; with no table changed nothing is written."""
    reflects = reflecting(committed, settings_of(sketches=config.sketches), config)
    run = estimate_inclusions(
        catalog,
        config.sketches,
        driver_state_bytes=config.scan.driver_state_bytes,
        driver_max_pairs=config.scan.driver_max_pairs,
    )
    if run.changed_tables == set():
        catalog.record(TARGET, reflects)  # its rows, unchanged, reflect this run
        return run.counts
    replaced = run.replaced()
    if run.on_driver:
        catalog.replace_small(TARGET, run.rows, None if replaced is None else replaced[0], reflects=reflects)
        run.counts.written = len(run.rows)
    else:
        describe_jobs(catalog.spark, f"inclusion estimates written ({run.counts.exact} pairs counted)")
        try:
            run.counts.written = catalog.replace(
                TARGET, run.rows, None if replaced is None else replaced[1], reflects
            )
        finally:
            run.release()
    log.info("inclusion estimates: %d rows written", run.counts.written)
    return run.counts
