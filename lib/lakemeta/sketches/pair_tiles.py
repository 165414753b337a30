"""The inclusion estimates of one tile of column pairs: the work of one executor task (BML §3, and beyond it
where ``sketches.discover`` says so).

The lake's sketched columns, in a fixed order, are cut into blocks of consecutive columns whose registers,
register index and value sets fit ``sketches.tile_bytes`` (``assign_blocks``). The tile (a, b) holds the
ordered pairs (x, y) with x in block a and y in block b: B blocks make B² tiles, each pair lies in exactly
one, and a task holds two blocks whatever the size of the lake (100,000 columns hold 1.6 GB of registers at
p = 14, which is why no single process should hold them all).

Within a tile (``estimate_tile``) the pairs that may reach the floor are found through the register index
(``dominance``) and estimated under the exact marginal (``bml``, Alg. 1-2 at m = p). Those whose estimate
plus its bound reaches the floor are then

* counted where one side is small (``values.inclusion.countable``): where the tile holds both columns'
  value sets (each column of at most ``sketches.exact_max_distinct`` values comes with its sorted value
  hashes), |X ∩ Y| is one merge in numba (``values.hashes.shared_counts``) and the pair is kept when
  Φ reaches the floor; a small column in a large one is marked ``PENDING``, counted after the tiles by a
  join over the value sets (``values.inclusion``);
* estimated again from the joint distribution of their register pairs otherwise (``joint``), and kept where
  that estimate reaches the floor or its bound is too wide to say (``UNDETERMINED``).

Why the counts are made in the tile: in a lake of small tables (statistics datasets: ids 1..n, years,
counts) nearly every column is small and millions of pairs reach the floor; a join per pair over the value
sets would shuffle the sum of their sizes, where the tile already holds both runs of sorted hashes.

What a task needs to know of every column (its table, type family, cardinality and exact distinct count)
is one row per column (``ColumnFacts``), shipped with the task: small by construction, unlike registers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lakemeta.config import SketchConfig
from lakemeta.sketches.bml import estimate_from_dominated
from lakemeta.sketches.dominance import RegisterIndex
from lakemeta.sketches.hll import relative_standard_error
from lakemeta.sketches.joint import joint_inclusion
from lakemeta.values.hashes import shared_counts
from lakemeta.values.inclusion import countable

# A pair is pruned by cardinality only when even |Y| inflated and |X| deflated by this many HLL standard
# errors keeps |Y| / |X| below the floor, so estimation error does not prune a pair that reaches it.
CARDINALITY_SIGMAS = 4.0
# Pairs estimated at once within a tile: bounds the memory of the pair arrays.
_PAIRS_PER_BLOCK = 1 << 22
# Bytes the register index holds per filled register (its sorted copies and their positions), beside the
# 2^p bytes of a column's register row.
_INDEX_BYTES_PER_REGISTER = 40
# A pair's status in a tile's output (``STATUS`` names them as ``inclusion_estimates`` stores them):
# counted, estimated, undetermined (bound too wide), or to be counted after the tiles (a small column in
# a large one, whose value set the tile does not hold).
EXACT, ESTIMATED, UNDETERMINED, PENDING = 0, 1, 2, 3
STATUS = ("exact", "estimated", "undetermined", "pending")


@dataclass(frozen=True)
class ColumnFacts:
    """Per column, in the columns' fixed order: its table (``table_of``), type family (``family_of``, with
    ``compatible[family_x, family_y]``), HLL cardinality, and exact distinct count from the value sets
    (``n_distinct``, 0 where unknown)."""

    table_of: np.ndarray
    family_of: np.ndarray
    compatible: np.ndarray
    cardinality: np.ndarray
    n_distinct: np.ndarray

    def cross_table_pairs(self) -> int:
        """The number of ordered pairs of columns in different tables."""
        per_table = np.bincount(self.table_of).astype(np.int64)
        return int(len(self.table_of) ** 2 - (per_table**2).sum())


class PairBudgetError(Exception):
    """A tile run under a bound on the pairs it may keep (the driver's, ``scan.driver_max_pairs``) found
    more."""


@dataclass(frozen=True)
class ValueSets:
    """The value sets a tile holds, side by side in the order of its columns: column i's sorted distinct
    value hashes are ``hashes[offsets[i]:offsets[i + 1]]`` where ``held[i]`` (none where not)."""

    offsets: np.ndarray
    hashes: np.ndarray
    held: np.ndarray

    @staticmethod
    def of_lists(lists: pa.Array | pa.ChunkedArray) -> ValueSets:
        """From a list<int64> column, each row a column's sorted hashes, null for a set not held."""
        if isinstance(lists, pa.ChunkedArray):
            lists = lists.combine_chunks() if lists.num_chunks else pa.array([], pa.list_(pa.int64()))
        held = lists.is_valid().to_numpy(zero_copy_only=False).astype(bool)
        offsets = lists.offsets.to_numpy().astype(np.int64)
        hashes = lists.values.to_numpy(zero_copy_only=False).astype(np.int64)[offsets[0] : offsets[-1]]
        return ValueSets(offsets - offsets[0], hashes, held)

    @staticmethod
    def none_held(n_columns: int) -> ValueSets:
        """No value set held for any of ``n_columns`` columns: every pair to count is left pending."""
        return ValueSets(np.zeros(n_columns + 1, np.int64), np.zeros(0, np.int64), np.zeros(n_columns, bool))

    @staticmethod
    def concat(first: ValueSets, second: ValueSets) -> ValueSets:
        """The sets of ``first``'s columns, then ``second``'s."""
        offsets = np.concatenate([first.offsets[:-1], second.offsets + first.offsets[-1]])
        return ValueSets(
            offsets, np.concatenate([first.hashes, second.hashes]), np.concatenate([first.held, second.held])
        )


@dataclass(frozen=True)
class TileEstimates:
    """The pairs of a tile that may reach the floor (``dep``, ``ref``: positions in ``ColumnFacts``), with
    their estimate (Φ where counted), bound (0 where counted) and ``status`` (``STATUS``; a ``PENDING``
    pair's estimate and bound are the sketch's, not reported), and how many pairs the tile examined."""

    dep: np.ndarray
    ref: np.ndarray
    estimate: np.ndarray
    error_bound: np.ndarray
    status: np.ndarray
    examined: int


def assign_blocks(
    filled: np.ndarray, p: int, tile_bytes: int, held_values: np.ndarray | None = None
) -> np.ndarray:
    """The block of each column, in order: consecutive columns whose register rows (2^p bytes each),
    register index (by filled register) and value sets held (``held_values`` hashes of 8 bytes each) take
    at most ``tile_bytes`` (a column larger than that alone)."""
    cost = (1 << p) + _INDEX_BYTES_PER_REGISTER * np.asarray(filled, np.int64)
    if held_values is not None:
        cost = cost + 8 * np.asarray(held_values, np.int64)
    start = np.cumsum(cost) - cost
    return np.unique(start // tile_bytes, return_inverse=True)[1].astype(np.int64)


def tile_index(
    columns: np.ndarray, registers: np.ndarray, x_count: int | None, facts: ColumnFacts, config: SketchConfig
) -> RegisterIndex:
    """The register index of a tile's columns (positions in ``facts``, with their register rows) that
    finds its pairs under the rules of ``sketches.discover``: the first ``x_count`` columns are one block's,
    the others the other block's (None: a block's tile with itself)."""
    cardinality = facts.cardinality[columns]
    slack = CARDINALITY_SIGMAS * relative_standard_error(config.precision)
    upper = cardinality * (1.0 + slack)
    if x_count is not None:
        upper[:x_count] = 0.0  # an x of this tile is a y only in the tile of its own block
    return RegisterIndex(
        registers,
        facts.table_of[columns],
        facts.family_of[columns],
        facts.compatible,
        upper,
        cardinality * max(0.0, 1.0 - slack),
        config.inclusion_floor,
    )


def estimate_tile(
    x_columns: np.ndarray,
    x_registers: np.ndarray,
    x_values: ValueSets,
    y_columns: np.ndarray | None,
    y_registers: np.ndarray | None,
    y_values: ValueSets | None,
    facts: ColumnFacts,
    config: SketchConfig,
    max_pairs: int | None = None,
) -> TileEstimates:
    """The pairs (x, y), x of ``x_columns`` and y of ``y_columns`` (positions in ``facts``, with their
    register rows and value sets), that reach ``config.inclusion_floor`` or may reach it (module
    docstring); ``y_columns`` None is a block's tile with itself. With ``max_pairs``, raises
    ``PairBudgetError`` as soon as the pairs kept pass it: the tile then holds at most that many pairs
    and one block of those it estimates, however dense its columns."""
    diagonal = y_columns is None
    columns = x_columns if diagonal else np.concatenate([x_columns, y_columns])
    registers = x_registers if diagonal else np.concatenate([x_registers, y_registers])
    values = x_values if diagonal else ValueSets.concat(x_values, y_values)
    cardinality = facts.cardinality[columns]
    index = tile_index(columns, registers, len(x_columns) if not diagonal else None, facts, config)
    examined, n_kept = 0, 0
    kept: list[tuple[np.ndarray, ...]] = []
    for pairs in index.blocks(_PAIRS_PER_BLOCK, len(x_columns)):
        estimates = estimate_from_dominated(
            pairs.z,
            pairs.x,
            pairs.y,
            cardinality,
            config.precision,
            confidence=config.confidence,
            eps=config.tolerance,
        )
        examined += len(pairs.x)
        reaches = estimates.estimate + estimates.error_bound >= config.inclusion_floor
        kept.append(
            (pairs.x[reaches], pairs.y[reaches], estimates.estimate[reaches], estimates.error_bound[reaches])
        )
        n_kept += int(reaches.sum())
        if max_pairs is not None and n_kept > max_pairs:
            raise PairBudgetError(f"{n_kept} pairs kept, beyond {max_pairs}")
    x, y = (np.concatenate([np.zeros(0, np.int64), *(k[i] for k in kept)]) for i in (0, 1))
    estimate, bound = (np.concatenate([np.zeros(0), *(k[i] for k in kept)]) for i in (2, 3))
    dep_distinct = facts.n_distinct[columns[x]]
    counted = countable(dep_distinct, facts.n_distinct[columns[y]], config.exact_max_distinct)
    status = np.full(len(x), ESTIMATED, np.int8)
    # counted here: both value sets in the tile
    here = counted & values.held[x] & values.held[y]
    shared = shared_counts(x[here], y[here], values.offsets, values.hashes)
    estimate[here], bound[here] = shared / np.maximum(dep_distinct[here], 1), 0.0
    status[here] = EXACT
    status[counted & ~here] = PENDING
    # what is not counted has two large sides: there the joint distribution of the register pairs says
    # more than the dominated ones (``joint``)
    jointly = ~counted
    estimate[jointly], bound[jointly] = joint_inclusion(
        registers, x[jointly], y[jointly], cardinality, config.confidence
    )
    status[jointly & (bound > config.max_error_bound)] = UNDETERMINED
    reported = (status == PENDING) | (status == UNDETERMINED) | (estimate >= config.inclusion_floor)
    return TileEstimates(
        columns[x[reported]],
        columns[y[reported]],
        estimate[reported],
        bound[reported],
        status[reported],
        examined,
    )
