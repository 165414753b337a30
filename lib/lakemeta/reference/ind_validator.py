"""The IND-Validator (Many Alg. 7): exact check dependentSet ⊆ referencedSet for a batch of candidates, in
memory (``lakemeta.inds.discover`` validates with a Spark anti-join instead).

Both value sets are sorted by key (``lakemeta.reference.value_store.ValueStore``), so the check is one merge
pass, O(|dep| + |ref|). When the store keeps value bytes, keys are hashes: a dependent value is accepted
only if some referenced value with the same hash has the same bytes, so a hash collision can never validate
a false IND. Equal keys are adjacent, and the referenced cursor stays on the first key of a run so that two
dependent values that collide with each other are each compared against the whole run.
"""

from __future__ import annotations

import numba
import numpy as np

from lakemeta.reference.value_store import ValueStore


@numba.njit(cache=True, inline="always")
def _same_bytes(offsets: np.ndarray, data: np.ndarray, a: int, b: int) -> bool:
    length = offsets[a + 1] - offsets[a]
    if offsets[b + 1] - offsets[b] != length:
        return False
    i = 0
    while i < length and data[offsets[a] + i] == data[offsets[b] + i]:
        i += 1
    return i == length


@numba.njit(cache=True, nogil=True)
def _is_included(
    keys: np.ndarray,
    offsets: np.ndarray,
    data: np.ndarray,
    exact_bytes: bool,
    ds: int,
    de: int,
    rs: int,
    re: int,
) -> bool:
    if de - ds > re - rs:
        return False  # the dependent side has more distinct values than the referenced side
    j = rs
    for i in range(ds, de):
        key = keys[i]
        while j < re and keys[j] < key:
            j += 1
        if j == re or keys[j] != key:
            return False
        if exact_bytes:
            found = False
            r = j
            while r < re and keys[r] == key:
                if _same_bytes(offsets, data, i, r):
                    found = True
                    break
                r += 1
            if not found:
                return False
    return True


@numba.njit(cache=True, nogil=True)
def _validate(
    keys: np.ndarray,
    col_offsets: np.ndarray,
    offsets: np.ndarray,
    data: np.ndarray,
    exact_bytes: bool,
    deps: np.ndarray,
    refs: np.ndarray,
) -> np.ndarray:
    out = np.empty(deps.shape[0], dtype=np.bool_)
    for t in range(deps.shape[0]):
        d, r = deps[t], refs[t]
        out[t] = _is_included(
            keys,
            offsets,
            data,
            exact_bytes,
            col_offsets[d],
            col_offsets[d + 1],
            col_offsets[r],
            col_offsets[r + 1],
        )
    return out


def validate(store: ValueStore, deps: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """For each candidate ``deps[t] ⊆ refs[t]`` (column indices into ``store``), whether it holds exactly."""
    deps = np.ascontiguousarray(deps, dtype=np.int64)
    refs = np.ascontiguousarray(refs, dtype=np.int64)
    if deps.shape != refs.shape or deps.ndim != 1:
        raise ValueError("deps and refs must be 1-d arrays of equal length")
    if deps.size and (min(deps.min(), refs.min()) < 0 or max(deps.max(), refs.max()) >= store.n_columns):
        raise ValueError(f"column index out of range [0, {store.n_columns})")
    if store.exact_bytes:
        offsets, data = store.value_offsets, store.value_data
    else:
        offsets, data = np.zeros(1, np.int64), np.zeros(0, np.uint8)
    return _validate(store.keys, store.col_offsets, offsets, data, store.exact_bytes, deps, refs)
