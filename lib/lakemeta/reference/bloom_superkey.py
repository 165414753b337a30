"""Bloom-filter super keys, the BF baseline MATE compares XASH with (§7.1.2).

Each value sets H bits of an |a|-bit array, the row's super key ORs them, exactly as XASH super keys do,
so the search and its row filter are unchanged (a :class:`~lakemeta.joinsearch.superkey.SuperKeyHasher`
for ``joinsearch.index`` and ``joinsearch.search``). The paper picks H from the Bloom optimum
H = (|a| / V)·ln 2, V being the mean number of values per row (the mean column count of the corpus);
:meth:`BloomHasher.for_row_width` does that.

Hash functions: the paper uses Murmur3; we use xxHash64 (seed 0) of the value's UTF-8 bytes, the hash the
rest of lakemeta uses (``lakemeta.hashing``), and derive the H functions by double hashing
(Kirsch & Mitzenmacher, the paper's [19]): with h1 = low 32 bits, h2 = (high 32 bits) | 1, function t
sets bit ``(h1 + t·h2) mod |a|``. |a| is a power of two and h2 odd, so the H bits of a value are distinct.
Bits are laid out as in ``joinsearch.superkey`` (bit p from the left is bit ``63 - p % 64`` of word
``p // 64``); nulls hash to zero rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import pyarrow as pa

from lakemeta.hashing import string_buffers, xxh64_bytes
from lakemeta.joinsearch.superkey import set_bit_from_left
from lakemeta.joinsearch.xash import HASH_SIZES

_LOW32 = np.uint64(0xFFFFFFFF)


@numba.njit(cache=True, nogil=True)
def _bloom_kernel(
    offsets: np.ndarray, data: np.ndarray, valid: np.ndarray, n_hashes: int, hash_bits: int, out: np.ndarray
) -> None:
    m = np.uint64(hash_bits)
    for i in range(offsets.shape[0] - 1):
        if not valid[i]:
            continue
        h = xxh64_bytes(data, offsets[i], offsets[i + 1])
        h1 = h & _LOW32
        h2 = (h >> np.uint64(32)) | np.uint64(1)
        for t in range(n_hashes):
            set_bit_from_left(out, i, np.int64((h1 + np.uint64(t) * h2) % m))


@dataclass(frozen=True)
class BloomHasher:
    """Bloom super-key hash: |a| bits (128, 256 or 512), H hash functions per value."""

    hash_bits: int
    n_hashes: int

    def __post_init__(self) -> None:
        if self.hash_bits not in HASH_SIZES:
            raise ValueError(f"hash_bits must be one of {HASH_SIZES}, got {self.hash_bits}")
        if not 1 <= self.n_hashes <= self.hash_bits:
            raise ValueError(f"need 1 <= n_hashes <= hash_bits, got {self.n_hashes}")

    @classmethod
    def for_row_width(cls, hash_bits: int, mean_values_per_row: float) -> BloomHasher:
        """H = round((|a| / V)·ln 2), at least 1 (§7.1.2, V = mean number of columns)."""
        n_hashes = max(1, round(hash_bits / mean_values_per_row * math.log(2)))
        return cls(hash_bits, min(n_hashes, hash_bits))

    @property
    def n_words(self) -> int:
        return self.hash_bits // 64

    def hash_values(self, values: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Bloom bits of each value: uint64 array (len(values), n_words); nulls give zero rows."""
        offsets, data, valid = string_buffers(values)
        out = np.zeros((len(valid), self.n_words), np.uint64)
        _bloom_kernel(offsets, data, valid, self.n_hashes, self.hash_bits, out)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "bloom", "hash_bits": self.hash_bits, "n_hashes": self.n_hashes}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BloomHasher:
        if data.get("kind") != "bloom":
            raise ValueError(f"not a Bloom hasher: {data.get('kind')!r}")
        return cls(int(data["hash_bits"]), int(data["n_hashes"]))
