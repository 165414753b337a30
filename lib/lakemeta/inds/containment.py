"""Exact IND validation of small columns on the driver: Alg. 7's check, dep ⊆ ref, on sorted value hashes.

The IND-Validator of Many (Alg. 7) reads both columns' values. For a column with at most
``inds.driver_validation_values`` distinct values the state keeps its value hashes beside its signature
(``state/ind_columns``), so a candidate whose two columns are both that small is checked here, one
merge of two sorted arrays in numba, with no Spark job; the others go to the distributed anti-join
(``inds.discover``). Both compare the same 64-bit hashes, so both give the same answer.

Why beyond the paper: in a lake of many small tables most candidates are between small columns, and
Spark's join costs a job's scheduling and a shuffle for merges of a few dozen values each. On the
20,000-table corpus of ``bench/many_inds.py`` every candidate is such a pair, and validation here takes a
small fraction of its time through Spark (docs/performance.md, "Measurements behind the code"). The kept
hashes also serve the finer check of ``inds.sized_signatures``: a small dependent's values are looked up in a
large referenced column's sized signature.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def contained(deps: np.ndarray, refs: np.ndarray, offsets: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """For each candidate (deps[i], refs[i]): whether every hash of the dependent column occurs among the
    referenced column's (both sorted and distinct): a merge that stops at the first missing value."""
    result = np.zeros(len(deps), dtype=np.bool_)
    for i in range(len(deps)):
        d, d_end = offsets[deps[i]], offsets[deps[i] + 1]
        r, r_end = offsets[refs[i]], offsets[refs[i] + 1]
        if d_end - d > r_end - r:
            continue
        while d < d_end:
            while r < r_end and hashes[r] < hashes[d]:
                r += 1
            if r == r_end or hashes[r] != hashes[d]:
                break
            d += 1
        result[i] = d == d_end
    return result
