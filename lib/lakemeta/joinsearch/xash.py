"""XASH, the syntactic hash of MATE (Esmailoghli et al., VLDB 2022, §5.2-5.3), in two schemes.

Both cut a hash of |a| bits (128, 256 or 512) into segments (§5.3.2, Eq. 6): a length segment of
|a_l| = |a| - 37·β bits and 37 character segments of β bits each, β = max{β : 37·β < |a|} (β = 3, 6, 13
and |a_l| = 17, 34, 31 for |a| = 128, 256, 512). A value sets one length bit, l_v mod |a_l| (§5.3.4),
l_v being its length in characters (code points), and some character bits, each in the segment of its
character at the bit of the area of the value its mean position falls in (§5.3.3); the character bits are
rotated left inside the 37·β character bits (§5.3.5). The schemes differ in which characters they encode,
how many, where the segments lie and how far they rotate.

``authors`` (the default; :data:`AUTHORS`): XASH as the authors' published code computes it (their
``XASH(token, hash_size)`` with ``number_of_ones = 5``), which is what their measurements used:

* characters: the value's distinct characters sorted by their number of occurrences *in the value*, ties
  by code point (§5.3.2: "we pick the alpha - 1 least frequent characters inside a word ... [ties] based
  on lexicographical order"); the first alpha - 1 = 5 at every hash size. Only the 37 characters space,
  '0'-'9', 'a'-'z' have segments: a picked character outside them (punctuation, a non-ASCII letter) uses
  up its place and sets no bit, as in their code. A value therefore sets at most 6 ones: 5 character bits
  and the length bit, fewer when it has fewer than 5 distinct characters or picks such a character. Eq. 5
  would give alpha = 6, 5, 4 at 128, 256, 512 bits; their code keeps 5 character bits at every size.
* location (§5.3.3): with the mean 0-based position m of the character, the area is the least i in
  0..β-1 with m <= (i + 1)·l_v / β (their loop; the paper's example counts positions from 1).
* layout: their code builds an integer, character c (index 0 for space, 1-10 for the digits, 11-36 for
  the letters) at bit c·β + i from the least significant end, the length bit at 37·β + (l_v mod |a_l|).
  That integer, read most significant bit first, is the bit array here: the length segment is the
  left-most (as §5.3.4 asks) and the character segments follow from 'z' down to space.
* rotation (§5.3.5): the character bits rotate towards the length segment by
  d = floor(37·β·(l_v mod |a_l|) / |a_l|) bits, not by l_v: the rotation spreads the lengths over the
  whole character space (l_v = 8 at 128 bits rotates by 52).

``eq5`` (:data:`EQ5`): the paper's text taken literally, with corpus statistics:

* alpha from Eq. 5, the least alpha with C(|a|, alpha) > C_unique, the number of distinct values in the
  corpus (128 bits and 700M values give alpha = 6, as in §5.3.1);
* alpha - 1 character bits (§5.3.2): the alpha - 1 least frequent characters of the value, ranked by the
  character frequencies of the corpus, ties broken lexicographically. For each, the bit
  x = ceil(λ·β / l_v) of its segment (§5.3.3), λ being the mean 1-based position of the character in the
  value (for "muhammad", β = 3: positions 1-2 -> x = 1, 3-5 -> x = 2, 6-8 -> x = 3, as the paper's example
  reads);
* one length bit (§5.3.4): bit l_v mod |a_l| of the length segment, the left-most segment;
* the character segments are rotated left by l_v bits (§5.3.5), wrapping around inside the 37·β
  character bits.

  Character classes: the paper uses "all 37 alphanumeric characters including space". Classes 0-9 are
  the digits, 10-35 the letters a-z, class 36 is the space together with every other character
  (punctuation, non-ASCII letters), so that no character of a value is left without a segment. With the
  digits first the paper's example places the first bit of "u" (class 30) at the 108th bit from the left
  (17 + 30·3 + 1) and, rotated by 8, at the 100th, as §5.3.5 states. Lexicographic order of the classes
  is their index order (ASCII order of '0'-'9' < 'a'-'z'; the catch-all class last).

The ``authors`` scheme encodes more characters per value at 256 and 512 bits and makes fewer values of
one column cover one another (pairs of values of a column of the MATE sample tables: 4.17 M against
6.44 M of 73.9 M at 128 bits). On rows of several values either scheme can filter better, depending on the
values: ``bench/mate_search.py`` measures both, and docs/performance.md says where and why.

Both schemes fold ASCII upper case to lower case (values are normalised before they are hashed, which
lower-cases them anyway). Bit layout: a hash is ``n_words = |a| / 64`` uint64 words; bit p counted from the
left of the bit array (p = 0 is the first bit of the length segment) is bit ``63 - p % 64`` of word
``p // 64`` (``superkey.set_bit_from_left``). A null value hashes to all zeros: it contributes nothing to a
super key. The scheme and its parameters must be the same for the indexed corpus and for every query: they
are part of :class:`XashHasher`, which serialises with :meth:`XashHasher.to_dict`, the scheme's name and
version included.
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
AUTHORS = "authors"
EQ5 = "eq5"
# The version of each scheme's bits, recorded with stored super keys: a change to a scheme's bits must
# raise its version, so that posting lists made with the old bits are rebuilt, never searched with new ones.
SCHEME_VERSIONS = {AUTHORS: 1, EQ5: 1}
# alpha of the authors' code: number_of_ones = 5 characters, plus the length bit.
AUTHORS_ALPHA = 6


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
def _eq5_kernel(
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


@numba.njit(cache=True, inline="always")
def _authors_index(code_point: int) -> int:
    """Index of a character in the authors' alphabet (space, '0'-'9', 'a'-'z'); -1 outside it."""
    if code_point == 32:
        return 0
    if 48 <= code_point <= 57:
        return code_point - 48 + 1
    if 97 <= code_point <= 122:
        return code_point - 97 + 11
    return -1


@numba.njit(cache=True, inline="always")
def _code_point(data: np.ndarray, b: int) -> int:
    """The code point whose UTF-8 encoding starts at ``data[b]``, ASCII upper case folded to lower case."""
    lead = np.int64(data[b])
    if lead < 0x80:
        return lead + 32 if 65 <= lead <= 90 else lead
    if lead < 0xE0:
        n, cp = 1, lead & 0x1F
    elif lead < 0xF0:
        n, cp = 2, lead & 0x0F
    else:
        n, cp = 3, lead & 0x07
    for j in range(1, n + 1):
        cp = (cp << 6) | (np.int64(data[b + j]) & 0x3F)
    return cp


@numba.njit(cache=True, nogil=True)
def _authors_kernel(
    offsets: np.ndarray,
    data: np.ndarray,
    valid: np.ndarray,
    n_picks: int,
    beta: int,
    length_bits: int,
    out: np.ndarray,
) -> None:
    """The ``authors`` scheme (module docstring) for every value; bits are placed by their position p from
    the least significant end of the authors' integer, i.e. at ``hash_bits - 1 - p`` from the left."""
    hash_bits = out.shape[1] * 64
    char_space = N_CHAR_CLASSES * beta
    longest = 0
    for i in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[i + 1] - offsets[i])
    # the value's distinct characters: code point, occurrences, sum of 0-based positions, picked yet
    chars = np.empty(longest, np.int64)
    counts = np.empty(longest, np.int64)
    position_sums = np.empty(longest, np.int64)
    picked = np.empty(longest, np.bool_)
    ascii_slot = np.full(128, -1, np.int64)
    for i in range(offsets.shape[0] - 1):
        if not valid[i]:
            continue
        length = 0
        n_distinct = 0
        for b in range(offsets[i], offsets[i + 1]):
            if _is_continuation(data[b]):
                continue
            cp = _code_point(data, b)
            slot = -1
            if cp < 128:
                slot = ascii_slot[cp]
            else:
                for s in range(n_distinct):
                    if chars[s] == cp:
                        slot = s
                        break
            if slot < 0:
                slot = n_distinct
                n_distinct += 1
                chars[slot], counts[slot], position_sums[slot], picked[slot] = cp, 0, 0, False
                if cp < 128:
                    ascii_slot[cp] = slot
            counts[slot] += 1
            position_sums[slot] += length
            length += 1
        length_mod = length % length_bits
        rotation = char_space * length_mod // length_bits
        set_bit_from_left(out, i, hash_bits - 1 - (char_space + length_mod))
        for _ in range(min(n_picks, n_distinct)):
            best = -1
            for s in range(n_distinct):  # least occurrences in the value, ties by code point (§5.3.2)
                if not picked[s] and (
                    best < 0
                    or counts[s] < counts[best]
                    or (counts[s] == counts[best] and chars[s] < chars[best])
                ):
                    best = s
            picked[best] = True
            c = _authors_index(chars[best])
            if c < 0:  # a picked character without a segment sets no bit
                continue
            # least area i with mean <= (i + 1)·l_v / β, mean = position_sums / counts (0-based), exactly
            denominator = counts[best] * length
            area = max(0, (position_sums[best] * beta + denominator - 1) // denominator - 1)
            p = (c * beta + area + rotation) % char_space
            set_bit_from_left(out, i, hash_bits - 1 - p)
        for s in range(n_distinct):
            if chars[s] < 128:
                ascii_slot[chars[s]] = -1


@dataclass(frozen=True)
class XashHasher:
    """XASH with its parameters: hash size |a|, scheme (module docstring), alpha (one-bits per value at
    most: alpha - 1 characters and the length) and, for ``eq5``, the corpus character frequencies.

    Make one with :meth:`authors` or :meth:`eq5` (or :meth:`from_corpus`, an ``eq5`` hasher fitted to a
    corpus)."""

    hash_bits: int
    scheme: str
    alpha: int
    char_frequencies: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        _check_hash_bits(self.hash_bits)
        if self.scheme not in SCHEME_VERSIONS:
            raise ValueError(f"XASH scheme must be one of {sorted(SCHEME_VERSIONS)}, got {self.scheme!r}")
        if self.alpha < 1:
            raise ValueError("alpha must be at least 1 (the length bit)")
        if self.scheme == EQ5 and (
            self.char_frequencies is None or len(self.char_frequencies) != N_CHAR_CLASSES
        ):
            raise ValueError(f"the eq5 scheme needs {N_CHAR_CLASSES} char_frequencies")
        if self.scheme == AUTHORS and self.char_frequencies is not None:
            raise ValueError("the authors scheme ranks characters within the value: no char_frequencies")

    @classmethod
    def authors(cls, hash_bits: int = 128, alpha: int = AUTHORS_ALPHA) -> XashHasher:
        """The authors' scheme: alpha - 1 = 5 characters picked within the value, at every size."""
        return cls(hash_bits, AUTHORS, alpha)

    @classmethod
    def eq5(cls, hash_bits: int, alpha: int, char_frequencies: tuple[int, ...]) -> XashHasher:
        """The Eq. 5 scheme with ``alpha`` and the corpus shares of the 37 character classes."""
        return cls(hash_bits, EQ5, alpha, tuple(int(f) for f in char_frequencies))

    @classmethod
    def from_corpus(cls, distinct_values: pa.Array | pa.ChunkedArray, hash_bits: int = 128) -> XashHasher:
        """``eq5`` hasher for a corpus given as its distinct (normalised, non-null) values.

        alpha follows Eq. 5 from the number of values; the frequencies are counted over the same values.
        """
        frequencies = char_frequencies(distinct_values)
        n_unique = len(distinct_values) - distinct_values.null_count
        return cls.eq5(hash_bits, ones_per_value(n_unique, hash_bits), tuple(int(f) for f in frequencies))

    @property
    def n_words(self) -> int:
        return self.hash_bits // 64

    @property
    def version(self) -> int:
        return SCHEME_VERSIONS[self.scheme]

    def class_rank(self) -> np.ndarray:
        """``eq5``: character classes from least to most frequent, ties by class index (lexicographic)."""
        return np.argsort(np.asarray(self.char_frequencies, dtype=np.int64), kind="stable")

    def hash_values(self, values: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """XASH of each value: uint64 array of shape (len(values), n_words); nulls give zero rows."""
        offsets, data, valid = string_buffers(values)
        out = np.zeros((len(valid), self.n_words), np.uint64)
        beta, length_bits = char_segment_bits(self.hash_bits), length_segment_bits(self.hash_bits)
        if self.scheme == AUTHORS:
            _authors_kernel(offsets, data, valid, self.alpha - 1, beta, length_bits, out)
        else:
            _eq5_kernel(offsets, data, valid, self.class_rank(), self.alpha - 1, beta, length_bits, out)
        return out

    def describe(self) -> str:
        """The scheme, its version, size and alpha in words (for messages)."""
        return (
            f"XASH scheme {self.scheme!r} version {self.version}, {self.hash_bits} bits, alpha {self.alpha}"
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": "xash",
            "scheme": self.scheme,
            "version": self.version,
            "hash_bits": self.hash_bits,
            "alpha": self.alpha,
        }
        if self.char_frequencies is not None:
            data["char_frequencies"] = list(self.char_frequencies)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> XashHasher:
        """Inverse of :meth:`to_dict`. A record without a scheme is an ``eq5`` hasher of version 1 (the
        only scheme before schemes were recorded, with the same bits). A scheme this code does not know,
        or another version of one it knows, cannot be reproduced: ValueError."""
        if data.get("kind") != "xash":
            raise ValueError(f"not a XASH hasher: {data.get('kind')!r}")
        scheme, version = data.get("scheme", EQ5), int(data.get("version", 1))
        if SCHEME_VERSIONS.get(scheme) != version:
            raise ValueError(
                f"XASH scheme {scheme!r} version {version} is not one this version of lakemeta makes "
                f"(it makes {SCHEME_VERSIONS}): rebuild the posting lists (`lakemeta rebuild`)"
            )
        frequencies = data.get("char_frequencies")
        return cls(
            int(data["hash_bits"]),
            scheme,
            int(data["alpha"]),
            None if frequencies is None else tuple(int(f) for f in frequencies),
        )
