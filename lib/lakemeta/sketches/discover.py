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
exactly from the value sets of the state instead (``values.inclusion``): that is where the sketch is
weakest, a few values inside a large column (BML's Theorem 1), and where counting is cheap; the other
pairs that may reach the floor, of two large columns, are estimated again from the joint distribution of
their register pairs (``joint``), which is three times more accurate there. The pairs
that reach the floor, and those whose bound is too wide to say (``undetermined``, no estimate), are
written to ``inclusion_estimates`` with their ``status`` (``estimate_inclusions``), replacing its
content in one commit (a deterministic function of the state, so a retried run writes the same rows).
All of this runs in the executors, tile by tile of column pairs (``tiles``); the driver holds one row per
column and the pairs that may reach the floor, never the registers. ``run_step`` runs it as the
discovery step ``inclusion_estimates`` (:mod:`lakemeta.registry`); it reads the state only, not the lake.

What a batch changes: a pair's estimate, bound and status depend on its two columns alone (their
registers, cardinalities, distinct counts, types and tables). So after some batches only the pairs with a
column of a changed table are estimated: the changed columns are put in blocks of their own, and only the
tiles with such a block are computed (a handful of tiles for a few changed columns, against n_blocks^2);
the rows of pairs of two unchanged columns are kept from the last discovery, when it ran with the same
``sketches`` settings (its commit records them, ``discovery_runs.changed_since``). The result equals a
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
from lakemeta.catalog.discovery_runs import changed_since
from lakemeta.config import Config, SketchConfig, settings_of
from lakemeta.profile.state import ColumnProfile
from lakemeta.sketches.state import HllCounters, column_sketches, counter_sketches, register_matrix
from lakemeta.sketches.tiles import ColumnFacts, assign_blocks, estimate_tile
from lakemeta.spark.jobs import arrow_frame, describe_jobs
from lakemeta.storage import Location
from lakemeta.values.inclusion import PAIR, shared_values

log = logging.getLogger(__name__)

TARGET = "inclusion_estimates"
_COLUMNS = [*PAIR, "estimate", "error_bound", "status"]
EXACT, ESTIMATED, UNDETERMINED = "exact", "estimated", "undetermined"  # the rows' status
# What a tile's task returns: its pairs that may reach the floor, and one row (dep = -1) with the number
# of pairs it examined.
_TILE_SCHEMA = pa.schema(
    [
        ("dep", pa.int64()),
        ("ref", pa.int64()),
        ("estimate", pa.float64()),
        ("error_bound", pa.float64()),
        ("counted", pa.bool_()),
        ("examined", pa.int64()),
    ]
)

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


def _value_counts(catalog: Catalog, tables: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """Each column's exact number of distinct values (``columns.n_distinct``, from the value sets), 0
    where unknown."""
    known_columns = catalog.read_small("columns")
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


def _tile_task(facts: ColumnFacts, config: SketchConfig, x: pa.Table, y: pa.Table) -> pa.Table:
    """applyInArrow body of one tile: x holds the rows of block a, y those of block b (empty for a = b)."""
    p = config.precision
    tile = estimate_tile(
        x["column"].to_numpy(),
        register_matrix(x["registers"], p),
        y["column"].to_numpy() if len(y) else None,
        register_matrix(y["registers"], p) if len(y) else None,
        facts,
        config,
    )
    # one more row, of no pair, carries the number of pairs the tile examined
    return pa.table(
        {
            "dep": np.append(tile.dep, -1),
            "ref": np.append(tile.ref, -1),
            "estimate": np.append(tile.estimate, 0.0),
            "error_bound": np.append(tile.error_bound, 0.0),
            "counted": np.append(tile.counted, False),
            "examined": np.append(np.zeros(len(tile.dep), np.int64), tile.examined),
        },
        schema=_TILE_SCHEMA,
    )


def _estimate_tiles(
    blocks: DataFrame, n_blocks: int, n_changed_blocks: int, facts: ColumnFacts, config: SketchConfig
) -> pa.Table:
    """The tiles of ``blocks`` (column, block, registers) with a changed block (the first
    ``n_changed_blocks``) estimated in the executors (``tiles``): block a's rows go to the tiles (a, b) as
    x and to the tiles (b, a), b != a, as y."""
    other = F.explode(F.sequence(F.lit(0), F.lit(n_blocks - 1))).alias("other")
    spread = blocks.select("column", "block", "registers", other).where(
        (F.col("block") < n_changed_blocks) | (F.col("other") < n_changed_blocks)
    )
    x_side = spread.select("column", "registers", (F.col("block") * n_blocks + F.col("other")).alias("tile"))
    # new names for the second side's columns, so that the cogroup does not see one column on both sides
    y_side = spread.where(F.col("other") != F.col("block")).select(
        F.col("column").alias("column"),
        F.col("registers").alias("registers"),
        (F.col("other") * n_blocks + F.col("block")).alias("tile"),
    )
    return (
        x_side.groupBy("tile")
        .cogroup(y_side.groupBy("tile"))
        .applyInArrow(functools.partial(_tile_task, facts, config), from_arrow_schema(_TILE_SCHEMA))
        .toArrow()
    )


def _estimate_tiles_on_driver(
    placed: pa.Table, n_blocks: int, n_changed_blocks: int, facts: ColumnFacts, config: SketchConfig
) -> pa.Table:
    """``_estimate_tiles`` on the driver, tile by tile, for ``placed`` (column, block, registers): the tile
    (a, b) with a changed block takes block a's rows as x and, for b != a, block b's as y."""
    block = placed["block"].to_numpy()
    sides = placed.select(["column", "registers"])
    empty = sides.schema.empty_table()
    tiles = [
        _tile_task(
            facts,
            config,
            sides.filter(pa.array(block == a)),
            sides.filter(pa.array(block == b)) if b != a else empty,
        )
        for a in range(n_blocks)
        for b in range(n_blocks)
        if a < n_changed_blocks or b < n_changed_blocks
    ]
    return pa.concat_tables(tiles)


def _rows(pairs: pa.Table, estimate: np.ndarray, bound: np.ndarray, status: np.ndarray | str) -> pa.Table:
    """Rows of ``inclusion_estimates`` for ``pairs``; an undetermined row has no estimate."""
    status = np.broadcast_to(np.asarray(status, dtype=object), (len(pairs),))
    return (
        pairs.select(PAIR)
        .append_column("estimate", pa.array(estimate, pa.float64(), mask=status == UNDETERMINED))
        .append_column("error_bound", pa.array(bound, pa.float64()))
        .append_column("status", pa.array(status, pa.string()))
    )


def _blocks(filled: np.ndarray, changed: np.ndarray, config: SketchConfig) -> tuple[np.ndarray, int]:
    """Each column's block, the changed columns' blocks first and apart from the others, and how many
    blocks hold changed columns: the tiles with one of those hold every pair with a changed column."""
    block = np.zeros(len(filled), np.int64)
    changed_blocks = assign_blocks(filled[changed], config.precision, config.tile_bytes)
    n_changed_blocks = int(changed_blocks.max()) + 1 if len(changed_blocks) else 0
    block[changed] = changed_blocks
    block[~changed] = assign_blocks(filled[~changed], config.precision, config.tile_bytes) + n_changed_blocks
    return block, n_changed_blocks


def estimate_inclusions(
    catalog: Catalog, config: SketchConfig, incremental: bool = True, driver_state_bytes: int = 0
) -> tuple[pa.Table, PairCounts, set[str] | None]:
    """Φ for every candidate pair, and the rows of ``inclusion_estimates``: the pairs that reach the floor
    or may reach it:

    * ``exact``: one of the two columns has at most ``exact_max_distinct`` values and the estimate plus
      its bound reaches the floor: Φ counted from the value sets (``values.inclusion``), kept when it
      reaches the floor, with bound 0;
    * ``estimated``: two large columns, whose joint estimate (``joint``) reaches the floor with a bound of
      at most ``max_error_bound``;
    * ``undetermined``: the bound is wider than ``max_error_bound`` and the estimate plus the bound
      reaches the floor: no estimate is reported, as the sketch cannot say (an FK search still treats the
      pair as a candidate, ``fks.discover``).

    The pairs are estimated tile by tile in the executors (``tiles``); the driver holds one row per column
    and the pairs that may reach the floor. Where the HLL counters of the whole lake are at most
    ``driver_state_bytes`` (a small lake) the sketches are built and the tiles estimated on the driver, by
    the same kernels: a Spark pass costs a one-table batch about 13 jobs whatever the lake's size.
    ``incremental``: where the stored estimates were written with these settings, only the pairs with a
    column of a table changed since are estimated (a pair's estimate depends on its two columns alone), the
    others' rows kept. Also returns the changed tables (None:
    every pair was estimated). ``driver_state_bytes`` also bounds ``shared_values``' reads."""
    spark = catalog.spark
    counts = PairCounts()
    changed_tables = changed_since(catalog, [TARGET], settings_of(sketches=config)) if incremental else None
    if changed_tables == set():
        return catalog.read_small(TARGET).select(_COLUMNS), counts, changed_tables
    # A small lake's sketches (every column's, the counters at most ``driver_state_bytes``) are built and
    # its tiles estimated on the driver, by the same kernels as in the executors.
    on_driver = catalog.reads_on_driver(HllCounters.state_table(), None, driver_state_bytes)
    sketches: DataFrame | None = None
    if on_driver:
        counters = catalog.read_small(
            HllCounters.state_table(), None, ["table_name", "column_name", "bucket", "rho"]
        )
        known = counter_sketches(counters, config.precision)
    else:
        describe_jobs(spark, "HLL sketches of every column, for the inclusion estimates")
        sketches = column_sketches(catalog, config.precision).persist()
        known = sketches.select("table_name", "column_name", "cardinality", "filled").toArrow()
    try:
        known = known.sort_by([("table_name", "ascending"), ("column_name", "ascending")])
        tables = known["table_name"].to_numpy(zero_copy_only=False).astype(object)
        columns = known["column_name"].to_numpy(zero_copy_only=False).astype(object)
        value_counts = _value_counts(catalog, tables, columns)
        facts = column_facts(
            tables, _column_families(catalog, tables, columns), known["cardinality"].to_numpy(), value_counts
        )
        counts.considered = facts.cross_table_pairs()
        changed = (
            np.ones(len(tables), bool)
            if changed_tables is None
            else pc.is_in(known["table_name"], pa.array(sorted(changed_tables), pa.string())).to_numpy(
                zero_copy_only=False
            )
        )
        block, n_changed_blocks = _blocks(known["filled"].to_numpy(), changed, config)
        n_blocks = int(block.max()) + 1 if len(block) else 0
        n_tiles = n_blocks * n_blocks - (n_blocks - n_changed_blocks) ** 2
        describe_jobs(
            spark,
            f"inclusion estimates of the pairs of {int(changed.sum())} changed columns among {len(known)}, "
            f"in {n_tiles} tiles",
        )
        if not n_tiles:
            found = _TILE_SCHEMA.empty_table()
        elif sketches is None:
            placed = pa.table(
                {
                    "column": np.arange(len(known), dtype=np.int64),
                    "block": block,
                    "registers": known["registers"],
                }
            )
            found = _estimate_tiles_on_driver(placed, n_blocks, n_changed_blocks, facts, config)
        else:
            placed = arrow_frame(
                spark,
                known.select(["table_name", "column_name"])
                .append_column("column", pa.array(np.arange(len(known), dtype=np.int64)))
                .append_column("block", pa.array(block)),
            )
            blocks = sketches.join(F.broadcast(placed), ["table_name", "column_name"])
            found = _estimate_tiles(blocks, n_blocks, n_changed_blocks, facts, config)
    finally:
        if sketches is not None:
            sketches.unpersist()
    counts.estimated = int(pc.sum(found["examined"]).as_py() or 0)
    found = found.filter(pc.greater_equal(found["dep"], 0)).sort_by(
        [("dep", "ascending"), ("ref", "ascending")]
    )
    x_idx, y_idx = found["dep"].to_numpy(), found["ref"].to_numpy()
    estimate, bound = found["estimate"].to_numpy(), found["error_bound"].to_numpy()
    exact = found["counted"].to_numpy(zero_copy_only=False)
    pairs = pa.table(
        {
            "dep_table": pa.array(tables[x_idx], pa.string()),
            "dep_column": pa.array(columns[x_idx], pa.string()),
            "ref_table": pa.array(tables[y_idx], pa.string()),
            "ref_column": pa.array(columns[y_idx], pa.string()),
            "dep_distinct": pa.array(value_counts[x_idx]),
            "ref_distinct": pa.array(value_counts[y_idx]),
        }
    )
    counted = pairs.filter(pa.array(exact))
    counts.exact = len(counted)
    shared = shared_values(catalog, counted, driver_state_bytes)
    phi = shared / np.maximum(counted["dep_distinct"].to_numpy(), 1)
    reaches = phi >= config.inclusion_floor
    undetermined = ~exact & (bound > config.max_error_bound)
    sketched = ~exact
    result = pa.concat_tables(
        [
            _rows(counted.filter(pa.array(reaches)), phi[reaches], np.zeros(int(reaches.sum())), EXACT),
            _rows(
                pairs.filter(pa.array(sketched)),
                estimate[sketched],
                bound[sketched],
                np.where(undetermined, UNDETERMINED, ESTIMATED)[sketched],
            ),
        ]
    )
    if changed_tables is not None:
        # the pairs of two unchanged columns, as the last discovery estimated them
        last = catalog.read_small(TARGET).select(_COLUMNS)
        touched = pa.array(sorted(changed_tables), pa.string())
        unchanged = pc.invert(
            pc.or_(pc.is_in(last["dep_table"], touched), pc.is_in(last["ref_table"], touched))
        )
        result = pa.concat_tables([last.filter(unchanged).cast(result.schema), result])
    result = result.sort_by([(name, "ascending") for name in PAIR])
    counts.written = len(result)
    counts.undetermined = int(undetermined.sum())
    log.info(
        "inclusion estimates: %d columns (%s changed) in %d blocks, %d cross-table pairs; %d estimated (a "
        "dominated register, types and cardinalities that allow the floor %.2f), %d counted exactly from "
        "the value sets, %d written (reaching the floor, or undetermined: %d)",
        len(tables),
        "all" if changed_tables is None else int(changed.sum()),
        n_blocks,
        counts.considered,
        counts.estimated,
        config.inclusion_floor,
        counts.exact,
        counts.written,
        counts.undetermined,
    )
    return result, counts, changed_tables


def run_step(catalog: Catalog, lake: Location, config: Config, committed: int | None) -> PairCounts:
    """The discovery step ``inclusion_estimates``: it reads the state only, not the lake, and estimates
    again only the pairs with a column of a table changed since the last discovery. The rows replace the
    table's content in one commit, which records the run and settings they reflect; with no table changed
    nothing is written."""
    reflects = {"run": committed, "settings": settings_of(sketches=config.sketches)}
    result, counts, changed = estimate_inclusions(
        catalog, config.sketches, driver_state_bytes=config.scan.driver_state_bytes
    )
    if changed != set():
        catalog.replace_small(TARGET, result, reflects=reflects)
    return counts
