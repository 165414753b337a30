"""Bloom-filter super keys, the BF baseline MATE compares XASH with (§7.1.2).

Each value sets H bits of an |a|-bit array, the row's super key ORs them, exactly as XASH super keys do,
so the search and its row filter are unchanged (a :class:`~lakemeta.joinsearch.superkey.SuperKeyHasher`
for ``joinsearch.index`` and ``joinsearch.search``). The paper picks H from the Bloom optimum
H = (|a| / V)·ln 2, V being the mean number of values per row (the mean column count of the corpus);
:meth:`BloomHasher.for_row_width` does that.

The MATE authors' code sets H = 5 at every size (:data:`AUTHORS_N_HASHES`); the benchmark measures both.

Hash functions: the paper uses Murmur3; we use xxHash64 (seed 0) of the value's UTF-8 bytes, the hash the
rest of lakemeta uses (``lakemeta.hashing``), and take the H bit positions from the first H outputs of
SplitMix64 (Steele, Lea, Flood, OOPSLA 2014) seeded with it: output t is the SplitMix64 finaliser of
``h + (t + 1)·0x9E3779B97F4A7C15`` and its top log2 |a| bits choose the bit. Each position depends on all
64 bits of the value's hash, and the positions of one value behave as independent uniform draws, which is
what a Bloom filter's false-positive rate (1 - e^{-VH/|a|})^H of §7.1.2 assumes; as in any Bloom filter
two of a value's H positions may coincide.

Why not double hashing (Kirsch & Mitzenmacher, the paper's [19]), ``(h1 + t·h2) mod |a|``: with |a| a power
of two only the low log2 |a| bits of h1 and h2 enter, so a value sets one of at most |a|²/2 patterns (8,192
at 128 bits, whatever H) and its bits 3..H follow from its first two: a filter of two independent hashes,
not H.

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

# H of the authors' Bloom super keys, the same at every hash size.
AUTHORS_N_HASHES = 5
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, inline="always")
def _splitmix64_finalise(z: np.uint64) -> np.uint64:
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True, nogil=True)
def _bloom_kernel(
    offsets: np.ndarray, data: np.ndarray, valid: np.ndarray, n_hashes: int, shift: int, out: np.ndarray
) -> None:
    """Bit ``output_t >> shift`` for t < n_hashes, output_t the t-th SplitMix64 output seeded with the
    value's xxHash64 (module docstring); ``shift`` = 64 - log2 |a|."""
    right = np.uint64(shift)
    for i in range(offsets.shape[0] - 1):
        if not valid[i]:
            continue
        state = xxh64_bytes(data, offsets[i], offsets[i + 1])
        for _ in range(n_hashes):
            state += _GOLDEN
            set_bit_from_left(out, i, np.int64(_splitmix64_finalise(state) >> right))


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
        _bloom_kernel(offsets, data, valid, self.n_hashes, 64 - (self.hash_bits.bit_length() - 1), out)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "bloom", "hash_bits": self.hash_bits, "n_hashes": self.n_hashes}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BloomHasher:
        if data.get("kind") != "bloom":
            raise ValueError(f"not a Bloom hasher: {data.get('kind')!r}")
        return cls(int(data["hash_bits"]), int(data["n_hashes"]))
