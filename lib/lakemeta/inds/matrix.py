"""The bit-signature matrix (Many §4.1, Alg. 3 lines 8-11).

Row j of the matrix is bit j of every column's signature, stored as a bit-vector over the n columns in
uint64 words (bit c & 63 of word c >> 6 is column c). The IND-Proposer (``proposer.py``) only ever ANDs whole
rows, 64 columns per machine word (§4.4). The matrix is read-only after construction, so executors can
share (broadcast) it and each propose candidates for a range of columns (Alg. 8-9).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from lakemeta.inds.bloom import BloomParams


def words_for(n_bits: int) -> int:
    return (n_bits + 63) // 64


def pack_bits(mask: np.ndarray) -> np.ndarray:
    """A bool vector as a bit-vector of uint64 words (bit i of the result is mask[i]); padding bits are 0."""
    n_words = words_for(mask.shape[0])
    packed = np.zeros(n_words * 8, dtype=np.uint8)
    bits = np.packbits(np.asarray(mask, dtype=bool), bitorder="little")
    packed[: bits.shape[0]] = bits
    return packed.view("<u8").astype(np.uint64)


@numba.njit(cache=True, nogil=True)
def _transpose(signatures: np.ndarray, rows: np.ndarray) -> None:
    for c in range(signatures.shape[0]):
        column_bit = np.uint64(1) << np.uint64(c & 63)
        column_word = c >> 6
        for w in range(signatures.shape[1]):
            x = signatures[c, w]
            while x != 0:
                rows[w * 64 + trailing_zeros(x), column_word] |= column_bit
                x &= x - np.uint64(1)


@dataclass(frozen=True)
class SignatureMatrix:
    """(p·m) x n bit matrix: ``rows[j]`` is bit j of every column's signature (uint64 [p·m, ceil(n/64)])."""

    rows: np.ndarray
    n_columns: int
    params: BloomParams

    @classmethod
    def from_signatures(cls, signatures: np.ndarray, params: BloomParams) -> SignatureMatrix:
        """Transpose per-column signatures (uint64 [n, params.n_words]) into matrix rows (Alg. 3, l. 8-11)."""
        signatures = np.ascontiguousarray(signatures, dtype=np.uint64)
        if signatures.ndim != 2 or signatures.shape[1] != params.n_words:
            raise ValueError(f"signatures must be [n, {params.n_words}] for {params}")
        n_columns = signatures.shape[0]
        # Bits beyond p·m are never set by bloom.py, so padding rows stay empty and are cut off.
        rows = np.zeros((params.n_words * 64, words_for(n_columns)), dtype=np.uint64)
        _transpose(signatures, rows)
        return cls(rows=rows[: params.n_bits], n_columns=n_columns, params=params)
