"""Bottom-k sketches and Zhang et al.'s inclusion estimator: the baseline BML is compared against.

A bottom-k sketch of a set F keeps its k smallest distinct hash values (Zhang et al. App. C; ranks are the
XXH64 hashes of ``lakemeta.hashing``, one hash function for every column, so sketches are coordinated).
Zhang et al. §2 estimate sigma(F, P) = |F & P| / |F| as J(F, P) / J(F | P, F) (J: Jaccard coefficient,
& and | set intersection and union), each J by the estimator of Cohen and Kaplan [5] over the bottom-k
sample of the union: U = the k smallest hashes of sk(F) | sk(P), which is exactly the bottom-k sketch of
F | P (any of the k smallest hashes of F | P is among the k smallest of the set holding it). With
J_hat(F, P) = |U & sk(F) & sk(P)| / |U| and J_hat(F | P, F) = |U & sk(F)| / |U|,
    sigma_hat(F, P) = |U & sk(F) & sk(P)| / |U & sk(F)|,
where a hash of U is in sk(F) exactly when it is in F (a hash of U that lies in F is among F's k smallest).
When both sets have fewer than k distinct values the sketches hold the whole sets and sigma_hat is exact.
When U holds no hash of F the estimate is undefined: NaN.

Memory. BML §5.1 equates memory with the HLL: a register takes log2 64 = 6 bits and a hash 64 bits, so
k = 2^p · 6 / 64; the default p = 14 gives k = 1536, the k of the paper's Figs. 13-19 (TPC-DS 300).

Deletions are not supported (Zhang et al. App. "Schema and data updates", BML §5.2): once a hash of the
sketch is deleted, the (k+1)-th smallest is unknown without a rescan. ``update`` takes insertions only.
"""

from __future__ import annotations

import struct

import numpy as np
from numba import njit, prange

from lakemeta.arrays import sorted_unique
from lakemeta.sketches.hll import DEFAULT_PRECISION

REGISTER_BITS = 6
HASH_BITS = 64
_HEADER = struct.Struct("<4sBII")  # magic, version, k, number of hashes
_CHUNK = 256  # pairs per parallel work item
_PARALLEL_MIN_PAIRS = 8 * _CHUNK  # below this, starting the thread pool costs more than it saves


def equal_memory_k(p: int = DEFAULT_PRECISION) -> int:
    """k of the bottom-k sketch using the memory of 2^p six-bit HLL registers (BML §5.1)."""
    return (1 << p) * REGISTER_BITS // HASH_BITS


def bottom_k(hashes: np.ndarray, k: int) -> np.ndarray:
    """The k smallest distinct values of ``hashes``, sorted (uint64)."""
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    return sorted_unique(np.asarray(hashes, dtype=np.uint64))[:k]


def update(sketch: np.ndarray, hashes: np.ndarray, k: int) -> np.ndarray:
    """Sketch after inserting ``hashes`` (insert-only; duplicates of sketch values change nothing)."""
    return bottom_k(np.concatenate((np.asarray(sketch, np.uint64), np.asarray(hashes, np.uint64))), k)


def merge(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """Sketch of the union of two sets from their sketches: bottom-k of the union of the two samples."""
    return update(a, b, k)


@njit(cache=True, nogil=True)
def _inclusion_one(f: np.ndarray, p: np.ndarray, k: int) -> float:
    # walk the union of the two sorted samples in increasing order, stopping after k distinct hashes
    i = j = taken = in_f = in_both = 0
    while taken < k and (i < f.shape[0] or j < p.shape[0]):
        if j == p.shape[0] or (i < f.shape[0] and f[i] < p[j]):
            in_f += 1
            i += 1
        elif i == f.shape[0] or p[j] < f[i]:
            j += 1
        else:
            in_f += 1
            in_both += 1
            i += 1
            j += 1
        taken += 1
    return in_both / in_f if in_f > 0 else np.nan


@njit(cache=True, nogil=True)
def _inclusion_range(
    values: np.ndarray,
    offsets: np.ndarray,
    f_idx: np.ndarray,
    p_idx: np.ndarray,
    k: int,
    out: np.ndarray,
    start: int,
    stop: int,
) -> None:
    for i in range(start, stop):
        f, p = f_idx[i], p_idx[i]
        out[i] = _inclusion_one(values[offsets[f] : offsets[f + 1]], values[offsets[p] : offsets[p + 1]], k)


@njit(cache=True, parallel=True)
def _inclusion_parallel(
    values: np.ndarray, offsets: np.ndarray, f_idx: np.ndarray, p_idx: np.ndarray, k: int, out: np.ndarray
) -> None:
    n = f_idx.shape[0]
    for chunk in prange((n + _CHUNK - 1) // _CHUNK):
        _inclusion_range(values, offsets, f_idx, p_idx, k, out, chunk * _CHUNK, min(n, (chunk + 1) * _CHUNK))


def pack(sketches: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate sketches into (values uint64, offsets int64).

    Sketch i is ``values[offsets[i] : offsets[i + 1]]``.
    """
    offsets = np.zeros(len(sketches) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sketches], out=offsets[1:])
    values = np.concatenate(sketches).astype(np.uint64) if sketches else np.zeros(0, np.uint64)
    return values, offsets


def inclusion_estimates(
    values: np.ndarray, offsets: np.ndarray, f_idx: np.ndarray, p_idx: np.ndarray, k: int
) -> np.ndarray:
    """sigma_hat(F, P) = |U & sk(F) & sk(P)| / |U & sk(F)| (Zhang et al. §2, module docstring) for the pairs
    (f_idx[j], p_idx[j]) of packed sketches; NaN where the union sample U holds no value of F."""
    f_idx, p_idx = np.asarray(f_idx, np.int64), np.asarray(p_idx, np.int64)
    args = (np.asarray(values, np.uint64), np.asarray(offsets, np.int64), f_idx, p_idx, k)
    out = np.empty(f_idx.shape[0])
    if f_idx.shape[0] >= _PARALLEL_MIN_PAIRS:
        _inclusion_parallel(*args, out)
    else:
        _inclusion_range(*args, out, 0, f_idx.shape[0])
    return out


def to_bytes(sketch: np.ndarray, k: int) -> bytes:
    """Header (magic, version, k, size) then the sorted hashes as little-endian uint64."""
    return _HEADER.pack(b"LMBK", 1, k, len(sketch)) + np.asarray(sketch, "<u8").tobytes()


def from_bytes(data: bytes) -> tuple[np.ndarray, int]:
    """(sketch, k) from ``to_bytes`` output."""
    magic, version, k, n = _HEADER.unpack_from(data)
    if magic != b"LMBK" or version != 1:
        raise ValueError("not a lakemeta bottom-k sketch (version 1)")
    return np.frombuffer(data, "<u8", n, _HEADER.size).astype(np.uint64), k
