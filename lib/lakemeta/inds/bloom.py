"""Bloom-filter bit-signatures of columns (Many, §4.1 and §4.3 multi-hashing).

A column's signature is the concatenation of p Bloom filters of m bits each, every filter built with its own
set of k hash functions (§4.3: "multiple Bloom filter signatures with different hash-function sets are
generated per column ... concatenated and treated as one"). If values(A) ⊆ values(B) then sig(A) ⊆ sig(B)
bit for bit (§4.1), so a signature never causes a false negative.

Hash functions. All k·p functions come from one 64-bit xxHash64 h per value by double hashing
(Kirsch & Mitzenmacher): with h1 = low 32 bits of h and h2 = (high 32 bits of h) | 1, function t = j·k + i
(pass j, function i) maps the value to bit ``j·m + (h1 + t·h2) mod m``. Forcing h2 odd keeps the k positions
of one pass distinct whenever m is a power of two. Equal values give equal hashes and so equal bits in every
column, which is all the subset-preservation property needs.

Defaults m = 650, k = 6, p = 2 are the parametrisation the paper runs its WikiTables experiments with
(§5.3-§5.5, Figs. 10, 12-14) and satisfy its advice "m > 100 and p > 1" (§5.2).

Layout: bit b of a signature is bit ``b & 63`` of uint64 word ``b >> 6``; a signature has
``ceil(p·m / 64)`` words. Signatures merge by OR (the filter of a union of value sets).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa

from lakemeta.hashing import hash_strings

_LOW32 = np.uint64(0xFFFFFFFF)


@dataclass(frozen=True)
class BloomParams:
    """Bloom size m (bits per pass), hash-function count k, passes p (Many §4.1, §4.3, §5.2)."""

    m: int = 650
    k: int = 6
    p: int = 2

    def __post_init__(self) -> None:
        if self.m < 1 or self.p < 1 or not 1 <= self.k <= self.m:
            raise ValueError(f"need m >= 1, 1 <= k <= m, p >= 1; got m={self.m} k={self.k} p={self.p}")

    @property
    def n_bits(self) -> int:
        """Signature length p·m: the number of rows of the signature matrix (§4.3)."""
        return self.m * self.p

    @property
    def n_words(self) -> int:
        return (self.n_bits + 63) // 64


@numba.njit(cache=True, nogil=True)
def _set_bloom_bits(
    hashes: np.ndarray,
    col_offsets: np.ndarray,
    pass_bits: np.ndarray,
    k: int,
    p: int,
    word_offsets: np.ndarray,
    out: np.ndarray,
) -> None:
    for c in range(col_offsets.shape[0] - 1):
        um = np.uint64(pass_bits[c])
        first = np.uint64(word_offsets[c] * 64)
        for v in range(col_offsets[c], col_offsets[c + 1]):
            h = hashes[v]
            h1 = h & _LOW32
            h2 = (h >> np.uint64(32)) | np.uint64(1)
            for j in range(p):
                for i in range(k):
                    t = np.uint64(j * k + i)
                    bit = first + np.uint64(j) * um + (h1 + t * h2) % um
                    out[bit >> np.uint64(6)] |= np.uint64(1) << (bit & np.uint64(63))


def words_at(params: BloomParams, levels: np.ndarray) -> np.ndarray:
    """Words of a signature whose m is doubled ``levels`` times: ceil(p·m·2^level / 64) each."""
    return (params.p * (params.m << np.asarray(levels, np.int64)) + 63) // 64


def sized_signatures(
    hashes: np.ndarray, col_offsets: np.ndarray, levels: np.ndarray, params: BloomParams
) -> tuple[np.ndarray, np.ndarray]:
    """Signatures of many columns, column c's with m doubled ``levels[c]`` times (``inds.sized_signatures``),
    as (word_offsets, words): column c's words are ``words[word_offsets[c]:word_offsets[c + 1]]``. At level 0
    a signature is the paper's (``signatures_from_hashes``)."""
    hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
    col_offsets = np.ascontiguousarray(col_offsets, dtype=np.int64)
    levels = np.ascontiguousarray(levels, dtype=np.int64)
    word_offsets = np.zeros(len(levels) + 1, np.int64)
    np.cumsum(words_at(params, levels), out=word_offsets[1:])
    words = np.zeros(word_offsets[-1], dtype=np.uint64)
    _set_bloom_bits(hashes, col_offsets, params.m << levels, params.k, params.p, word_offsets, words)
    return word_offsets, words


def signatures_from_hashes(hashes: np.ndarray, col_offsets: np.ndarray, params: BloomParams) -> np.ndarray:
    """Signatures of many columns at once (Alg. 3 with the §4.3 pass loop): column c owns the hashes
    ``hashes[col_offsets[c]:col_offsets[c + 1]]``. Returns uint64 [n_columns, params.n_words]."""
    n_columns = len(col_offsets) - 1
    _, words = sized_signatures(hashes, col_offsets, np.zeros(n_columns, np.int64), params)
    return words.reshape(n_columns, params.n_words)


def signature_from_hashes(hashes: np.ndarray, params: BloomParams) -> np.ndarray:
    """Signature (uint64 [params.n_words]) of one column given one 64-bit hash per value."""
    hashes = np.asarray(hashes, dtype=np.uint64)
    return signatures_from_hashes(hashes, np.array([0, hashes.shape[0]], np.int64), params)[0]


def signature_from_strings(values: pa.Array | pa.ChunkedArray, params: BloomParams) -> np.ndarray:
    """Signature of one column of canonical strings; Arrow nulls are missing values and add nothing."""
    hashes, valid = hash_strings(values)
    return signature_from_hashes(hashes[valid], params)


def merge_signatures(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Signature of the union of the two columns' value sets (same params)."""
    return np.bitwise_or(a, b)


def signature_to_bytes(signature: np.ndarray) -> bytes:
    """Little-endian bytes of a signature, for storage next to the column's other state."""
    return np.ascontiguousarray(signature, dtype="<u8").tobytes()


def signature_from_bytes(data: bytes, params: BloomParams) -> np.ndarray:
    signature = np.frombuffer(data, dtype="<u8").astype(np.uint64)
    if signature.shape[0] != params.n_words:
        raise ValueError(f"signature has {signature.shape[0]} words, params need {params.n_words}")
    return signature
