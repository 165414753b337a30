"""Exact IND validation of small columns on the driver: Alg. 7's check, dep ⊆ ref, on sorted value hashes.

The IND-Validator of Many (Alg. 7) reads both columns' values. For a column with at most
``inds.driver_validation_values`` distinct values the state keeps its value hashes beside its signature
(``state/ind_columns``), so a candidate whose two columns are both that small is checked here, one
merge of two sorted arrays in numba, with no Spark job; the others go to the distributed anti-join
(``inds.discover``). Both compare the same 64-bit hashes, so both give the same answer.

Why beyond the paper: in a lake of many small tables most candidates are between small columns, and
Spark's join costs a job's scheduling and a shuffle for merges of a few dozen values each. On the
20,000-table corpus of ``bench/many_inds.py`` every candidate is such a pair: validation takes 0.02 s
against 1.34 s through Spark. On the shared web tables it changes little (2,325 of 90,439 candidates):
there the false candidates have a referenced column of hundreds of values, whose signature (m = 650,
§5.2) is full, and those still go to Spark.
"""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa


def hash_sets(values: pa.BinaryArray | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Binary rows of sorted little-endian uint64 hashes as (offsets, hashes, stored): column i's hashes
    are ``hashes[offsets[i]:offsets[i + 1]]``; ``stored`` is False where the row is null (not kept)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks else pa.array([], pa.binary())
    n = len(values)
    stored = values.is_valid().to_numpy(zero_copy_only=False).astype(bool)
    byte_offsets = np.frombuffer(values.buffers()[1], np.int32, n + 1, values.offset * 4).astype(np.int64)
    data = values.buffers()[2]
    raw = np.zeros(0, np.uint8) if data is None else np.frombuffer(data, np.uint8)
    hashes = raw[byte_offsets[0] : byte_offsets[-1]].view("<u8").astype(np.uint64)
    return (byte_offsets - byte_offsets[0]) // 8, hashes, stored


def hash_set_rows(hashes: np.ndarray, bounds: np.ndarray, kept: np.ndarray) -> pa.BinaryArray:
    """Binary rows, the inverse of :func:`hash_sets`: row i holds ``hashes[bounds[i]:bounds[i + 1]]``
    (sorted) where ``kept[i]``, and is null elsewhere. Built on the hashes' bytes, with no loop per row."""
    sizes = np.where(kept, np.diff(bounds), 0)
    offsets = np.zeros(len(kept) + 1, np.int32)
    np.cumsum(sizes * 8, out=offsets[1:])
    in_kept = np.repeat(kept, np.diff(bounds))
    data = np.ascontiguousarray(hashes[in_kept], dtype="<u8")
    validity = pa.array(kept, pa.bool_()).buffers()[1]
    return pa.BinaryArray.from_buffers(
        pa.binary(),
        len(kept),
        [validity, pa.py_buffer(offsets), pa.py_buffer(data)],
        null_count=int(len(kept) - kept.sum()),
    )


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
