"""Signatures sized to their column: m doubled with the column's size, beyond Many's one m for all.

Why. Many gives every column a signature of the same p·m bits (m = 650, §5.2). A column of n distinct
values sets about 1 - exp(-k·n/m) of each pass's bits, so past a few hundred values a signature is full,
and every smaller column is proposed as included in it. On the shared web tables 88,374 candidates
survived the matrix and the size rule for 928 valid INDs, their referenced columns mostly of 300-6,500
values (``bench/many_inds.py``, section ``sized_signatures``).

What. A column of n distinct values keeps the signature of m·2^L bits per pass, L the fewest doublings at
which k is optimal for n (m·2^L >= k·n / ln 2, a pass at most half full), at most ``inds.max_doublings``.
Bit positions are those of ``bloom`` with m·2^L in place of m: (h1 + t·h2) mod m·2^L. As m divides m·2^L,
that position mod m·2^c is the position at any coarser level c, so OR-ing a signature's bits onto their
positions mod m·2^c (folding) gives exactly the column's signature at level c. Hence:

- the matrix of Alg. 3 is built from each signature folded to level 0, the paper's signatures;
- a candidate the matrix proposes is checked again at a finer level (``may_be_contained``): the
  dependent's kept value hashes (``inds.containment``) against the referenced signature at its own
  level, a Bloom filter's membership test; otherwise the dependent's signature against the referenced one
  folded to the dependent's level. If values(dep) ⊆ values(ref), the dependent's bits at any level are
  among the referenced column's (§4.1), so no IND is lost; the validator still decides every survivor.

The level is chosen from the column's exact distinct count (``columns.n_distinct``), which every task
summarising a part of the column must agree on before it sees the whole column. ``max_doublings = 0``
keeps the paper's signatures, the baseline of the benchmark.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from lakemeta.inds.bloom import BloomParams, words_at

_LOW32 = np.uint64(0xFFFFFFFF)
_ONE = np.uint64(1)
# Doublings a stored signature's length is matched against: far beyond any configured cap.
_LEVELS_KNOWN = 40


def levels_for(set_sizes: np.ndarray, params: BloomParams, max_doublings: int) -> np.ndarray:
    """The doublings of m for columns of ``set_sizes`` distinct values: the fewest L with
    m·2^L >= k·n / ln 2, at most ``max_doublings``."""
    needed = params.k * np.asarray(set_sizes, np.float64) / math.log(2)
    thresholds = params.m * 2.0 ** np.arange(max_doublings + 1)
    return np.minimum(np.searchsorted(thresholds, needed, side="left"), max_doublings).astype(np.int64)


def levels_of(word_counts: np.ndarray, params: BloomParams) -> np.ndarray:
    """The level of each stored signature from its length in words (``bloom.words_at`` is increasing)."""
    lengths = words_at(params, np.arange(_LEVELS_KNOWN))
    levels = np.searchsorted(lengths, word_counts)
    if np.any(levels >= _LEVELS_KNOWN) or np.any(
        lengths[np.minimum(levels, _LEVELS_KNOWN - 1)] != word_counts
    ):
        raise ValueError(f"stored signatures do not have the length of any level of {params}")
    return levels.astype(np.int64)


@numba.njit(cache=True, nogil=True)
def _fold(
    word_offsets: np.ndarray, words: np.ndarray, levels: np.ndarray, m: int, p: int, out: np.ndarray
) -> None:
    for c in range(levels.shape[0]):
        pass_bits = m << levels[c]
        first = word_offsets[c]
        if levels[c] == 0:  # already the base signature: its words as they are
            out[c, :] = words[first : word_offsets[c + 1]]
            continue
        for w in range(first, word_offsets[c + 1]):
            x = words[w]
            while x != 0:
                b = (w - first) * 64 + trailing_zeros(x)
                x &= x - _ONE
                j = b // pass_bits
                if j < p:
                    folded = j * m + (b - j * pass_bits) % m
                    out[c, folded >> 6] |= _ONE << np.uint64(folded & 63)


def fold_to_base(
    word_offsets: np.ndarray, words: np.ndarray, levels: np.ndarray, params: BloomParams
) -> np.ndarray:
    """Each sized signature folded to level 0: the paper's signature of the column (uint64
    [n_columns, params.n_words]), what the matrix of Alg. 3 is built from."""
    if not np.any(levels):  # every signature is the paper's already: its words as they lie, not copied
        base = np.asarray(words[word_offsets[0] : word_offsets[-1]], np.uint64)
        return base.reshape(len(levels), params.n_words)
    out = np.zeros((len(levels), params.n_words), np.uint64)
    _fold(
        np.ascontiguousarray(word_offsets, np.int64),
        np.ascontiguousarray(words, np.uint64),
        np.ascontiguousarray(levels, np.int64),
        params.m,
        params.p,
        out,
    )
    return out


@numba.njit(cache=True, inline="always")
def _is_set(words: np.ndarray, first: int, bit: int) -> bool:
    return (words[first + (bit >> 6)] >> np.uint64(bit & 63)) & _ONE == _ONE


@numba.njit(cache=True, nogil=True)
def _may_be_contained(
    deps: np.ndarray,
    refs: np.ndarray,
    word_offsets: np.ndarray,
    words: np.ndarray,
    levels: np.ndarray,
    hash_offsets: np.ndarray,
    hashes: np.ndarray,
    has_hashes: np.ndarray,
    m: int,
    k: int,
    p: int,
) -> np.ndarray:
    result = np.ones(deps.shape[0], dtype=np.bool_)
    for i in range(deps.shape[0]):
        d, r = deps[i], refs[i]
        r_first, r_bits = word_offsets[r], m << levels[r]
        if has_hashes[d]:
            # every kept value's k·p bits in the referenced signature at its own level (Bloom membership)
            um = np.uint64(r_bits)
            for v in range(hash_offsets[d], hash_offsets[d + 1]):
                h1 = hashes[v] & _LOW32
                h2 = (hashes[v] >> np.uint64(32)) | _ONE
                for j in range(p):
                    for t in range(j * k, (j + 1) * k):
                        bit = j * r_bits + int((h1 + np.uint64(t) * h2) % um)
                        if not _is_set(words, r_first, bit):
                            result[i] = False
                            break
                    if not result[i]:
                        break
                if not result[i]:
                    break
            continue
        # the dependent's signature against the referenced one, both at the coarser of their levels
        level = min(levels[d], levels[r])
        bits = m << level
        d_first, d_bits = word_offsets[d], m << levels[d]
        copies = r_bits // bits  # positions of the referenced signature that fold onto one
        for w in range(d_first, word_offsets[d + 1]):
            x = words[w]
            while x != 0:
                b = (w - d_first) * 64 + trailing_zeros(x)
                x &= x - _ONE
                j = b // d_bits
                q = (b - j * d_bits) % bits
                found = False
                for c in range(copies):
                    if _is_set(words, r_first, j * r_bits + q + c * bits):
                        found = True
                        break
                if not found:
                    result[i] = False
                    break
            if not result[i]:
                break
    return result


def may_be_contained(
    deps: np.ndarray,
    refs: np.ndarray,
    word_offsets: np.ndarray,
    words: np.ndarray,
    levels: np.ndarray,
    hash_offsets: np.ndarray,
    hashes: np.ndarray,
    has_hashes: np.ndarray,
    params: BloomParams,
) -> np.ndarray:
    """For each candidate (deps[i], refs[i]): False where the sized signatures show that some dependent
    value is not in the referenced column; True (possibly included) otherwise. Columns index the sized
    signatures (``word_offsets``, ``words``, ``levels``) and the kept value hashes (``hash_offsets``,
    ``hashes``, where ``has_hashes``)."""
    return _may_be_contained(
        np.ascontiguousarray(deps, np.int64),
        np.ascontiguousarray(refs, np.int64),
        np.ascontiguousarray(word_offsets, np.int64),
        np.ascontiguousarray(words, np.uint64),
        np.ascontiguousarray(levels, np.int64),
        np.ascontiguousarray(hash_offsets, np.int64),
        np.ascontiguousarray(hashes, np.uint64),
        np.ascontiguousarray(has_hashes, np.bool_),
        params.m,
        params.k,
        params.p,
    )
