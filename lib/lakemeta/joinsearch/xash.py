"""XASH, the syntactic hash of MATE (Esmailoghli et al., VLDB 2022, §5.2-5.3).

A hash of |a| bits (128, 256 or 512) is cut into segments (§5.3.2, Eq. 6): the left-most segment of
|a_l| = |a| - 37·β bits encodes the value length, followed by 37 character segments of β bits each, with
β = max{β : 37·β < |a|} (β = 3, 6, 13 and |a_l| = 17, 34, 31 for |a| = 128, 256, 512).
A value sets alpha bits:

* alpha from Eq. 5, the least alpha with C(|a|, alpha) > C_unique, the number of distinct values in the
  corpus (128 bits and 700M values give alpha = 6, as in §5.3.1);
* alpha - 1 character bits (§5.3.2): the alpha - 1 least frequent characters of the value, ranked by the
  character frequencies of the corpus, ties broken lexicographically. For each, the bit
  x = ceil(λ·β / l_v) of its segment (§5.3.3), λ being the mean 1-based position of the character in the
  value and l_v the value length in characters (for "muhammad", β = 3: positions 1-2 -> x = 1, 3-5 -> x = 2,
  6-8 -> x = 3, as the paper's example reads);
* one length bit (§5.3.4): bit l_v mod |a_l| of the length segment;
* the character segments (not the length segment) are rotated left by l_v bits (§5.3.5), wrapping
  around inside the 37·β character bits.

Character classes: the paper uses "all 37 alphanumeric characters including space". Classes 0-9 are the
digits, 10-35 the letters a-z (ASCII upper case folds to lower case), class 36 is the space together with
every other character (punctuation, non-ASCII letters), so that no character of a value is left without
a segment. With the digits first the paper's example places the first bit of "u" (class 30) at the 108th
bit from the left (17 + 30·3 + 1) and, rotated by 8, at the 100th, as §5.3.5 states. Lexicographic order
of the classes is their index order (ASCII order of '0'-'9' < 'a'-'z'; the catch-all class last).

Bit layout: a hash is ``n_words = |a| / 64`` uint64 words; bit p counted from the left of the paper's bit
array (p = 0 is the first bit of the length segment) is bit ``63 - p % 64`` of word ``p // 64``
(``superkey.set_bit_from_left``). Reading the words most significant bit first therefore spells the
paper's bit array from left to right.

A null value hashes to all zeros: it contributes nothing to a super key. The character frequencies and alpha
must be the same for the indexed corpus and for every query (they are part of :class:`XashHasher`, which
serialises with :meth:`XashHasher.to_dict`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
import pyarrow as pa

from lakemeta.hashing import string_buffers
from lakemeta.joinsearch.superkey import set_bit_from_left

N_CHAR_CLASSES = 37
OTHER_CLASS = 36
HASH_SIZES = (128, 256, 512)


def char_segment_bits(hash_bits: int) -> int:
    """β of Eq. 6: the largest β with 37·β < |a|."""
    _check_hash_bits(hash_bits)
    return (hash_bits - 1) // N_CHAR_CLASSES


def length_segment_bits(hash_bits: int) -> int:
    """|a_l| = |a| - 37·β (§5.3.2): 17, 34 and 31 bits for 128, 256 and 512."""
    return hash_bits - N_CHAR_CLASSES * char_segment_bits(hash_bits)


def ones_per_value(n_unique_values: int, hash_bits: int) -> int:
    """alpha of Eq. 5: the least alpha >= 1 with C(|a|, alpha) > C_unique.

    One of the alpha bits encodes the length, alpha - 1 the characters (§5.3.1).
    """
    _check_hash_bits(hash_bits)
    alpha = 1
    while math.comb(hash_bits, alpha) <= n_unique_values:
        alpha += 1
    return alpha


def _check_hash_bits(hash_bits: int) -> None:
    if hash_bits not in HASH_SIZES:
        raise ValueError(f"hash_bits must be one of {HASH_SIZES}, got {hash_bits}")


@numba.njit(cache=True, inline="always")
def _char_class(lead_byte: np.uint8) -> int:
    """Class of the character whose UTF-8 encoding starts with ``lead_byte`` (see module docstring)."""
    b = np.int64(lead_byte)
    if 48 <= b <= 57:  # '0'-'9'
        return b - 48
    if 97 <= b <= 122:  # 'a'-'z'
        return b - 97 + 10
    if 65 <= b <= 90:  # 'A'-'Z'
        return b - 65 + 10
    return np.int64(OTHER_CLASS)


@numba.njit(cache=True, inline="always")
def _is_continuation(byte: np.uint8) -> bool:
    return (byte & 0xC0) == 0x80


@numba.njit(cache=True, nogil=True)
def _count_classes(offsets: np.ndarray, data: np.ndarray, valid: np.ndarray) -> np.ndarray:
    counts = np.zeros(N_CHAR_CLASSES, np.int64)
    for i in range(offsets.shape[0] - 1):
        if not valid[i]:
            continue
        for b in range(offsets[i], offsets[i + 1]):
            if not _is_continuation(data[b]):
                counts[_char_class(data[b])] += 1
    return counts


def char_frequencies(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Occurrences of each of the 37 character classes over the non-null values (int64, length 37).

    Frequencies of several batches add up, so a corpus can be counted partition by partition.
    """
    offsets, data, valid = string_buffers(values)
    return _count_classes(offsets, data, valid)


@numba.njit(cache=True, nogil=True)
def _xash_kernel(
    offsets: np.ndarray,
    data: np.ndarray,
    valid: np.ndarray,
    class_rank: np.ndarray,
    n_char_bits: int,
    beta: int,
    length_bits: int,
    out: np.ndarray,
) -> None:
    counts = np.zeros(N_CHAR_CLASSES, np.int64)
    position_sums = np.zeros(N_CHAR_CLASSES, np.int64)
    char_space = N_CHAR_CLASSES * beta
    for i in range(offsets.shape[0] - 1):
        if not valid[i]:
            continue
        length = 0
        for b in range(offsets[i], offsets[i + 1]):
            if _is_continuation(data[b]):
                continue
            length += 1
            c = _char_class(data[b])
            counts[c] += 1
            position_sums[c] += length
        set_bit_from_left(out, i, length % length_bits)  # §5.3.4
        rotation = length % char_space  # §5.3.5
        picked = 0
        for r in range(N_CHAR_CLASSES):  # classes from least to most frequent in the corpus (§5.3.2)
            if picked == n_char_bits:
                break
            c = class_rank[r]
            if counts[c] == 0:
                continue
            picked += 1
            # §5.3.3: x = ceil(mean_position·β / l_v) in 1..β, in exact integer arithmetic
            denominator = counts[c] * length
            x = (position_sums[c] * beta + denominator - 1) // denominator
            char_bit = c * beta + x - 1
            set_bit_from_left(out, i, length_bits + (char_bit - rotation + char_space) % char_space)
        counts[:] = 0
        position_sums[:] = 0


@dataclass(frozen=True)
class XashHasher:
    """XASH with its corpus-dependent parameters: hash size |a|, alpha (Eq. 5) and character frequencies."""

    hash_bits: int
    alpha: int
    char_frequencies: tuple[int, ...]

    def __post_init__(self) -> None:
        _check_hash_bits(self.hash_bits)
        if len(self.char_frequencies) != N_CHAR_CLASSES:
            raise ValueError(f"char_frequencies needs {N_CHAR_CLASSES} entries")
        if self.alpha < 1:
            raise ValueError("alpha must be at least 1 (the length bit)")

    @classmethod
    def from_corpus(cls, distinct_values: pa.Array | pa.ChunkedArray, hash_bits: int = 128) -> XashHasher:
        """Hasher for a corpus given as its distinct (normalised, non-null) values.

        alpha follows Eq. 5 from the number of values; the frequencies are counted over the same values.
        """
        frequencies = char_frequencies(distinct_values)
        n_unique = len(distinct_values) - distinct_values.null_count
        return cls(hash_bits, ones_per_value(n_unique, hash_bits), tuple(int(f) for f in frequencies))

    @property
    def n_words(self) -> int:
        return self.hash_bits // 64

    def class_rank(self) -> np.ndarray:
        """Character classes from least to most frequent, ties by class index (lexicographic)."""
        return np.argsort(np.asarray(self.char_frequencies, dtype=np.int64), kind="stable")

    def hash_values(self, values: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """XASH of each value: uint64 array of shape (len(values), n_words); nulls give zero rows."""
        offsets, data, valid = string_buffers(values)
        out = np.zeros((len(valid), self.n_words), np.uint64)
        _xash_kernel(
            offsets,
            data,
            valid,
            self.class_rank(),
            self.alpha - 1,
            char_segment_bits(self.hash_bits),
            length_segment_bits(self.hash_bits),
            out,
        )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "xash",
            "hash_bits": self.hash_bits,
            "alpha": self.alpha,
            "char_frequencies": list(self.char_frequencies),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> XashHasher:
        if data.get("kind") != "xash":
            raise ValueError(f"not a XASH hasher: {data.get('kind')!r}")
        frequencies = tuple(int(f) for f in data["char_frequencies"])
        return cls(int(data["hash_bits"]), int(data["alpha"]), frequencies)
