"""Randomness of a foreign-key candidate: the EMD between the key's values and the candidate's on the
key's quantile grid (Zhang et al. §3).

A true FK's values are a near-uniform random sample of its key's values; a column that merely falls
inside the key's range (a prefix or suffix of an auto-increment key, a small code range) is not. For a
key P = (C1..Cn) and a candidate F = (C'1..C'n):

* the domain of dimension i is ordered (``domain_order``: numbers numerically, strings lexicographically,
  mixed columns as ``sort -n``), jointly over P's and F's values so that F's values not in P fall where
  the order puts them;
* Def. 3: the quantile grid G_P has, in dimension i, the l_i-quantiles of the *distinct* values of P in
  that dimension (l_i = min(l, their number)): the j-th is the value of rank ceil(N_i·j/l_i); cell j holds
  the values in (q_{j-1}, q_j]. P̄ counts P's tuples per cell divided by |P|;
* Def. 4: F̄ counts F's *distinct* tuples per cell of G_P divided by |F|. Values beyond P's largest
  quantile (at most 1-θ of F passes the inclusion threshold) are counted in the last cell, so that F̄'s mass
  is 1 as the transportation problem needs;
* the ground distance between two cells is the quantile distance of Def. 2 between their upper corners,
  Σ_i |j_i - j'_i| / l_i (Manhattan, in quantiles);
* EMD(P̄, F̄) is solved exactly: in one dimension in closed form, in several as a transportation problem
  (POT's network simplex, ``ot.emd2``) over the cells that hold mass (``KeyGrid``); it is normalised by
  the dimension: EMD_n = EMD / n (§3, after Lemma 1, whose bound |EMD_n on values - EMD_n on G_P| <= 2/l
  sizes the grid).

Tuples with a null in any column are not values (a FK tuple with a null references nothing).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakemeta.arrays import run_starts, sorted_unique
from lakemeta.fks.domain_order import DomainKeys, count_below, domain_keys, order_ranks
from lakemeta.hashing import canonical, hash_tuples

_MAX_SIMPLEX_ITERATIONS = 10_000_000


def distinct_rows(tuple_hashes: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The row number of one row of each distinct tuple without a null.

    Tuples are told apart by their 64-bit hashes (``lakemeta.hashing.hash_tuples``): two distinct tuples
    sharing a hash would count as one, which among n tuples happens with probability about n^2 / 2^65
    (3e-7 for TPC-H lineitem's 6 M rows) and moves one tuple's mass, 1/n, on the grid.
    """
    rows = np.flatnonzero(valid)
    ordered = rows[np.argsort(tuple_hashes[rows])]
    return ordered[run_starts(tuple_hashes[ordered])]


def distinct_tuples(
    columns: list[pa.Array], tuple_hashes: tuple[np.ndarray, np.ndarray] | None = None
) -> list[pa.Array]:
    """The distinct tuples of ``columns`` without a null in any column, column by column, as canonical
    strings (``distinct_rows``); ``tuple_hashes`` are the rows' (hashes, valid) where the caller has them,
    else ``hash_tuples`` of the columns."""
    rows = pa.array(distinct_rows(*(tuple_hashes or hash_tuples(columns))))
    return [canonical(column.take(rows)) for column in columns]


def quantile_bounds(key_ranks: np.ndarray, n_quantiles: int) -> np.ndarray:
    """Def. 3 in one dimension: the ranks of the l-quantiles of the key's distinct values, ascending."""
    distinct = sorted_unique(key_ranks)
    n = min(n_quantiles, len(distinct))
    return distinct[np.ceil(len(distinct) * np.arange(1, n + 1) / n).astype(np.int64) - 1]


class KeyGrid:
    """A key's quantile grid G_P and its mass P̄ (Def. 3), built once per key and shared by its candidates.

    A candidate's value falls in the cell of the first quantile not below it, so placing the candidate's
    values needs their order among the l quantile values only, not among all of the key's values: each
    candidate orders l + |F| values rather than |P| + |F| (the key's order is built here once).

    In one dimension EMD_n is the L1 distance of the two cumulative masses (the transportation problem on
    a line, whose optimum moves mass only between neighbouring cells), Σ_j |P̄(≤ j) - F̄(≤ j)| / l, exactly
    the network simplex's optimum in O(l); several dimensions solve the transportation problem (POT).
    """

    def __init__(self, key: list[pa.Array], n_quantiles: int) -> None:
        if not key or not len(key[0]):
            raise ValueError("EMD needs values on both sides")
        self.bounds: list[DomainKeys] = []  # per dimension, the quantile values' domain keys, ascending
        cells = []
        for values in key:
            ordered, ranks = order_ranks(values.cast(pa.string()))
            bounds = quantile_bounds(ranks, n_quantiles)
            self.bounds.append(domain_keys(ordered.take(pa.array(bounds))))
            cells.append(np.searchsorted(bounds, ranks, side="left"))
        self.shape = [len(bounds) for bounds, _ in self.bounds]
        self.key_cells = np.ravel_multi_index(cells, self.shape)

    def cells(self, candidate: list[pa.Array]) -> np.ndarray:
        """The flat grid cell of each candidate tuple; values beyond the last quantile in the last cell."""
        return self.cells_of_keys([domain_keys(values) for values in candidate])

    def cells_of_keys(self, candidate: list[DomainKeys]) -> np.ndarray:
        """``cells`` of the candidate tuples' ``domain_order.domain_keys``, per dimension (a task keeps a
        column's keys for all the keys it is a candidate of)."""
        if len(candidate) != len(self.bounds):
            raise ValueError("a key and its candidate need the same, non-zero number of columns")
        per_dimension = [
            np.minimum(count_below(bounds, values), len(bounds[0]) - 1)
            for bounds, values in zip(self.bounds, candidate, strict=True)
        ]
        return np.ravel_multi_index(per_dimension, self.shape)

    def emd_n(self, candidate: list[pa.Array]) -> float:
        """EMD_n(F, P) for the candidate's distinct tuples (one array per dimension, no nulls)."""
        return self.emd_n_of_cells(self.cells(candidate))

    def emd_n_of_cells(self, candidate_cells: np.ndarray) -> float:
        """EMD_n(F, P) for the candidate's distinct tuples given by their cells (``cells``)."""
        if not len(candidate_cells):
            raise ValueError("EMD needs values on both sides")
        if len(self.shape) == 1:
            size = self.shape[0]
            key_mass = np.bincount(self.key_cells, minlength=size) / len(self.key_cells)
            candidate_mass = np.bincount(candidate_cells, minlength=size) / len(candidate_cells)
            return float(np.abs(np.cumsum(key_mass - candidate_mass)[:-1]).sum()) / size
        support = np.union1d(self.key_cells, candidate_cells)
        key_mass = np.bincount(np.searchsorted(support, self.key_cells), minlength=len(support)) / len(
            self.key_cells
        )
        candidate_mass = np.bincount(np.searchsorted(support, candidate_cells), minlength=len(support)) / len(
            candidate_cells
        )
        corners = np.stack(np.unravel_index(support, self.shape), axis=1) / np.asarray(
            self.shape, dtype=np.float64
        )
        distance = np.abs(corners[:, None, :] - corners[None, :, :]).sum(axis=2)
        import ot  # POT loads scipy.stats, a slow import: imported where EMD is solved, not by every job

        cost = ot.emd2(key_mass, candidate_mass, distance, numItermax=_MAX_SIMPLEX_ITERATIONS)
        return float(cost) / len(self.shape)


def emd_n(key: list[pa.Array], candidate: list[pa.Array], n_quantiles: int) -> float:
    """EMD_n(F, P) for a key's distinct tuples ``key`` and a candidate's ``candidate`` (one array per
    dimension, no nulls), on a grid of ``n_quantiles`` quantiles per dimension."""
    if len(key) != len(candidate) or not key:
        raise ValueError("a key and its candidate need the same, non-zero number of columns")
    return KeyGrid(key, n_quantiles).emd_n(candidate)
