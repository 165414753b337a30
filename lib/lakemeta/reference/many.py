"""Many end to end in memory (Alg. 1, 8-11): signatures → matrix → proposer → validator → coverage filter.

The production kernels (``lakemeta.inds``: bloom, matrix, proposer, filters) with the merge-based validator
(``ind_validator``) on a ``ValueStore``: the tests check them against brute force here, and
``lakemeta.inds.discover`` runs the same kernels over the lake with Spark.

Semantics of empty and missing values (§3.2). A column's value set is its distinct non-missing values
(Arrow nulls are absent values, the usual SQL reading). Null *representations* (Table 2: "", "N/A", ...) are
ordinary values unless the null filter is on. Hence, with the filters off:
- an empty column, or one with only Arrow nulls, has the empty value set and is included in every other
  column — §3.2: "An empty column is included in every other column in the dataset";
- a column of only, say, "N/A" is included in every column containing "N/A" (null = null semantics, §3.2).
With the null filter on (the default) such columns take no part on either side.
A column is never reported as included in itself (Alg. 5/6 line 12); two distinct columns with equal value
sets are reported in both directions.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from lakemeta.inds.bloom import BloomParams, signatures_from_hashes
from lakemeta.inds.config import ManyConfig
from lakemeta.inds.filters import ColumnStats, column_filters, coverage, low_coverage
from lakemeta.inds.matrix import SignatureMatrix
from lakemeta.inds.proposer import column_ranges, propose_range
from lakemeta.reference.ind_validator import validate
from lakemeta.reference.value_store import ValueStore


@dataclass(frozen=True)
class Inds:
    """Valid unary INDs deps[i] ⊆ refs[i] (global column indices), with distinct counts and coverage."""

    deps: np.ndarray
    refs: np.ndarray
    dep_distinct: np.ndarray
    ref_distinct: np.ndarray
    coverage: np.ndarray

    def __len__(self) -> int:
        return int(self.deps.shape[0])

    def pairs(self) -> set[tuple[int, int]]:
        return set(zip(self.deps.tolist(), self.refs.tolist(), strict=True))

    @classmethod
    def concat(cls, parts: list[Inds]) -> Inds:
        """Union of disjoint parts (one per column range, Alg. 8 line 8), sorted by (dep, ref)."""
        fields = {
            name: np.concatenate([getattr(p, name) for p in parts]) for name in cls.__dataclass_fields__
        }
        order = np.lexsort((fields["refs"], fields["deps"]))
        return cls(**{name: values[order] for name, values in fields.items()})


def build_matrix(store: ValueStore, params: BloomParams) -> SignatureMatrix:
    """Signature-Generator (Alg. 3 with §4.3 passes) over the store's per-value 64-bit keys."""
    signatures = signatures_from_hashes(store.keys, store.col_offsets, params)
    return SignatureMatrix.from_signatures(signatures, params)


def detect_range(
    matrix: SignatureMatrix,
    store: ValueStore,
    lo: int,
    hi: int,
    config: ManyConfig,
    filtered_cols: np.ndarray | None = None,
    filtered_refs: np.ndarray | None = None,
) -> Inds:
    """IND-Detection-Worker (Alg. 9, with filters Alg. 11): propose for current columns [lo, hi), validate,
    then drop low-coverage INDs when that filter is on. ``matrix`` is the full (broadcast) matrix."""
    candidates = propose_range(matrix, lo, hi, config.strategy, config.indexed, filtered_cols, filtered_refs)
    deps, refs = candidates[:, 0], candidates[:, 1]
    valid = validate(store, deps, refs)
    deps, refs = deps[valid], refs[valid]
    n_distinct = store.n_distinct
    dep_distinct, ref_distinct = n_distinct[deps], n_distinct[refs]
    if config.filters.low_coverage:
        keep = ~low_coverage(dep_distinct, ref_distinct, config.filters.tau)
        deps, refs = deps[keep], refs[keep]
        dep_distinct, ref_distinct = dep_distinct[keep], ref_distinct[keep]
    return Inds(deps, refs, dep_distinct, ref_distinct, coverage(dep_distinct, ref_distinct))


def discover(
    store: ValueStore, config: ManyConfig | None = None, stats: ColumnStats | None = None, n_workers: int = 1
) -> Inds:
    """All valid unary INDs among the store's columns (Filtering ManyParallel, Alg. 8 and 10).

    ``stats`` (one entry per column) is needed when the null, integer or non-unique filter is on. The
    column ranges run on ``n_workers`` threads; the numba kernels release the GIL.
    """
    config = config or ManyConfig()
    filtered_cols, filtered_refs = column_filters(stats, config.filters, store.n_columns)
    matrix = build_matrix(store, config.params)
    ranges = column_ranges(store.n_columns, n_workers)

    def worker(bounds: tuple[int, int]) -> Inds:
        return detect_range(matrix, store, bounds[0], bounds[1], config, filtered_cols, filtered_refs)

    if n_workers == 1:
        return Inds.concat([worker(bounds) for bounds in ranges])
    with ThreadPoolExecutor(max_workers=n_workers) as pool:
        return Inds.concat(list(pool.map(worker, ranges)))
