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
* EMD(P̄, F̄) is solved exactly as a transportation problem (POT's network simplex, ``ot.emd2``) over the
  cells that hold mass, and normalised by the dimension: EMD_n = EMD / n (§3, after Lemma 1, whose bound
  |EMD_n on values - EMD_n on G_P| <= 2/l sizes the grid).

Tuples with a null in any column are not values (a FK tuple with a null references nothing).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lakemeta.arrays import run_starts, sorted_unique
from lakemeta.fks.domain_order import order_ranks
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


def emd_n(key: list[pa.Array], candidate: list[pa.Array], n_quantiles: int) -> float:
    """EMD_n(F, P) for a key's distinct tuples ``key`` and a candidate's ``candidate`` (one array per
    dimension, no nulls), on a grid of ``n_quantiles`` quantiles per dimension."""
    if len(key) != len(candidate) or not key:
        raise ValueError("a key and its candidate need the same, non-zero number of columns")
    if not len(key[0]) or not len(candidate[0]):
        raise ValueError("EMD needs values on both sides")
    key_cells, candidate_cells, shape = [], [], []
    for key_values, candidate_values in zip(key, candidate, strict=True):
        _, ranks = order_ranks(
            pa.concat_arrays([key_values.cast(pa.string()), candidate_values.cast(pa.string())])
        )
        bounds = quantile_bounds(ranks[: len(key_values)], n_quantiles)
        cells = np.minimum(np.searchsorted(bounds, ranks, side="left"), len(bounds) - 1)
        key_cells.append(cells[: len(key_values)])
        candidate_cells.append(cells[len(key_values) :])
        shape.append(len(bounds))
    key_flat = np.ravel_multi_index(key_cells, shape)
    candidate_flat = np.ravel_multi_index(candidate_cells, shape)
    support = np.union1d(key_flat, candidate_flat)
    key_mass = np.bincount(np.searchsorted(support, key_flat), minlength=len(support)) / len(key_flat)
    candidate_mass = np.bincount(np.searchsorted(support, candidate_flat), minlength=len(support)) / len(
        candidate_flat
    )
    corners = np.stack(np.unravel_index(support, shape), axis=1) / np.asarray(shape, dtype=np.float64)
    distance = np.abs(corners[:, None, :] - corners[None, :, :]).sum(axis=2)
    import ot  # POT loads scipy.stats (1.6 s): imported where EMD is solved, not by every job

    cost = ot.emd2(key_mass, candidate_mass, distance, numItermax=_MAX_SIMPLEX_ITERATIONS)
    return float(cost) / len(key)
