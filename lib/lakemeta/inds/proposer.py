"""The IND-Proposer (Many Alg. 4-6, 8-9, 11) over the signature matrix, with plain or indexed bit-vectors.

dep2refs (Alg. 5): for a dependent column c, AND together every matrix row whose bit c is 1; a surviving
bit k means sig(c) ⊆ sig(k), so k is a referenced candidate. ref2deps (Alg. 6): for a referenced column c,
AND together the negation of every row whose bit c is 0; a surviving bit k means sig(k) ⊆ sig(c).

Deviations from the pseudo-code, each to keep the two strategies equal and the result exact:
- Alg. 5 starts from an empty candidate bit-array and copies the first matching row into it. We start from
  all ones (the identity of AND), restricted to the columns the filters allow (Alg. 11). The two agree
  whenever the column has a set bit; for an empty signature (empty or all-missing column) Alg. 5 as printed
  would propose nothing while Alg. 6 proposes the column as dependent of every other column. §3.2 states
  "an empty column is included in every other column", so ours proposes it everywhere in both strategies.
- The self-bit is cleared up front instead of being skipped at the end (Alg. 5/6 line 12, "k ≠ colIdx"):
  the same output, and it lets the indexed variant stop as soon as no word is active.
- Alg. 11 line 7 reads "if filteredRefs[colIdx] = 0 then continue", which would skip every column that is
  *allowed* as a reference; filteredRefs marks columns that "must no longer be considered as possible
  referenced attributes" (§4.6), so we skip columns whose filteredRefs bit is 1.

Indexed bit-vectors (§4.5): besides the result words, a second bit-vector marks which result words are still
non-zero ("active"). Each AND visits only active words, found by next-set-bit search over the index
(count-trailing-zeros, the hardware instruction of footnote 3), and deactivates words that become zero.
"""

from __future__ import annotations

from typing import Literal

import numba
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from lakemeta.inds.matrix import SignatureMatrix, pack_bits

Strategy = Literal["dep2refs", "ref2deps"]
STRATEGIES: tuple[Strategy, ...] = ("dep2refs", "ref2deps")

_ONE = np.uint64(1)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@numba.njit(cache=True, inline="always")
def _and_plain(result: np.ndarray, row: np.ndarray, flip: np.uint64) -> None:
    for w in range(result.shape[0]):
        result[w] &= row[w] ^ flip


@numba.njit(cache=True, inline="always")
def _and_indexed(result: np.ndarray, index: np.ndarray, row: np.ndarray, flip: np.uint64) -> int:
    """AND ``row ^ flip`` into the active words of ``result``; returns how many words became zero."""
    cleared = 0
    for iw in range(index.shape[0]):
        x = index[iw]
        while x != 0:
            t = trailing_zeros(x)
            x &= x - _ONE
            w = iw * 64 + t
            v = result[w] & (row[w] ^ flip)
            result[w] = v
            if v == 0:
                index[iw] &= ~(_ONE << np.uint64(t))
                cleared += 1
    return cleared


@numba.njit(cache=True, inline="always")
def _append(out: np.ndarray, n: int, dep: int, ref: int) -> np.ndarray:
    if n == out.shape[0]:
        grown = np.empty((2 * out.shape[0], 2), dtype=np.int64)
        grown[:n] = out[:n]
        out = grown
    out[n, 0] = dep
    out[n, 1] = ref
    return out


@numba.njit(cache=True, nogil=True)
def _propose(
    rows: np.ndarray, lo: int, hi: int, ref2deps: bool, indexed: bool, skip: np.ndarray, allowed: np.ndarray
) -> np.ndarray:
    n_words = allowed.shape[0]
    # dep2refs ANDs rows whose bit c is 1 as they are; ref2deps ANDs rows whose bit c is 0, negated.
    wanted_bit = np.uint64(0) if ref2deps else _ONE
    flip = _ALL if ref2deps else np.uint64(0)
    result = np.empty(n_words, dtype=np.uint64)
    index = np.zeros((n_words + 63) // 64, dtype=np.uint64)
    out = np.empty((64, 2), dtype=np.int64)
    n_out = 0
    for c in range(lo, hi):
        if skip[c]:
            continue
        column_word = c >> 6
        column_shift = np.uint64(c & 63)
        result[:] = allowed
        result[column_word] &= ~(_ONE << column_shift)
        n_active = 0
        if indexed:
            index[:] = 0
            for w in range(n_words):
                if result[w] != 0:
                    index[w >> 6] |= _ONE << np.uint64(w & 63)
                    n_active += 1
        for b in range(rows.shape[0]):
            if n_active == 0 and indexed:
                break
            row = rows[b]
            if (row[column_word] >> column_shift) & _ONE == wanted_bit:
                if indexed:
                    n_active -= _and_indexed(result, index, row, flip)
                else:
                    _and_plain(result, row, flip)
        for w in range(n_words):
            if indexed and (index[w >> 6] >> np.uint64(w & 63)) & _ONE == 0:
                continue
            x = result[w]
            while x != 0:
                k = w * 64 + trailing_zeros(x)
                x &= x - _ONE
                out = _append(out, n_out, k, c) if ref2deps else _append(out, n_out, c, k)
                n_out += 1
    return out[:n_out].copy()


def _mask(mask: np.ndarray | None, n_columns: int) -> np.ndarray:
    if mask is None:
        return np.zeros(n_columns, dtype=bool)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (n_columns,):
        raise ValueError(f"filter mask must have shape ({n_columns},), got {mask.shape}")
    return mask


def propose_range(
    matrix: SignatureMatrix,
    lo: int,
    hi: int,
    strategy: Strategy = "dep2refs",
    indexed: bool = True,
    filtered_cols: np.ndarray | None = None,
    filtered_refs: np.ndarray | None = None,
    current: np.ndarray | None = None,
) -> np.ndarray:
    """IND candidates (int64 [n, 2] of (dep, ref) column indices) whose *current* column lies in [lo, hi).

    The current column is the dependent one for dep2refs and the referenced one for ref2deps (Alg. 9).
    ``filtered_cols`` excludes columns entirely, ``filtered_refs`` excludes them as referenced side
    (Alg. 10-11). Ranges are disjoint, so the union over a partition of [0, n) is the full candidate set.
    ``current`` (all columns when None) limits the current columns further: the candidates with a changed
    column as dependent are dep2refs over the changed columns, those with one as referenced side
    ref2deps over them (``inds.discover``).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    n = matrix.n_columns
    if not 0 <= lo <= hi <= n:
        raise ValueError(f"need 0 <= lo <= hi <= {n}, got [{lo}, {hi})")
    cols = _mask(filtered_cols, n)
    refs = _mask(filtered_refs, n)
    ref2deps = strategy == "ref2deps"
    if ref2deps:
        skip, allowed = cols | refs, pack_bits(~cols)
    else:
        skip, allowed = cols, pack_bits(~(cols | refs))
    if current is not None:
        skip = skip | ~_mask(current, n)
    return _propose(matrix.rows, lo, hi, ref2deps, indexed, skip, allowed)


def propose(
    matrix: SignatureMatrix,
    strategy: Strategy = "dep2refs",
    indexed: bool = True,
    filtered_cols: np.ndarray | None = None,
    filtered_refs: np.ndarray | None = None,
) -> np.ndarray:
    """All IND candidates (Alg. 4): ``propose_range`` over every column."""
    return propose_range(matrix, 0, matrix.n_columns, strategy, indexed, filtered_cols, filtered_refs)


@numba.njit(cache=True, nogil=True)
def _propose_changed(
    signatures: np.ndarray,
    changed: np.ndarray,
    is_changed: np.ndarray,
    filtered_cols: np.ndarray,
    filtered_refs: np.ndarray,
    set_sizes: np.ndarray,
) -> np.ndarray:
    n_columns, n_words = signatures.shape
    # the changed columns' first words side by side: a pair whose first words rule out both directions
    # (nearly every pair) costs one load and two tests, with no other branch
    first_words = np.empty(changed.shape[0], np.uint64)
    for i in range(changed.shape[0]):
        first_words[i] = signatures[changed[i], 0]
    out = np.empty((64, 2), dtype=np.int64)
    n_out = 0
    for k in range(n_columns):  # every column once; its signature stays in cache for all changed ones
        if filtered_cols[k]:
            continue
        b0 = signatures[k, 0]
        for i in range(changed.shape[0]):
            a0 = first_words[i]
            if (a0 & ~b0) != 0 and (b0 & ~a0) != 0:
                continue
            c = changed[i]
            # two changed columns are tested once, when k is the larger
            if c == k or (is_changed[k] and k < c):
                continue
            # dep2refs for c: sig(c) ⊆ sig(k); ref2deps for c: sig(k) ⊆ sig(c); a dependent side with
            # more distinct values than the referenced one is not tested
            c_in_k = not filtered_refs[k] and set_sizes[c] <= set_sizes[k]
            k_in_c = not filtered_refs[c] and set_sizes[k] <= set_sizes[c]
            w = 0
            while w < n_words and (c_in_k or k_in_c):
                a, b = signatures[c, w], signatures[k, w]
                c_in_k = c_in_k and (a & ~b) == 0
                k_in_c = k_in_c and (b & ~a) == 0
                w += 1
            if c_in_k:
                out = _append(out, n_out, c, k)
                n_out += 1
            if k_in_c:
                out = _append(out, n_out, k, c)
                n_out += 1
    return out[:n_out].copy()


def propose_changed(
    signatures: np.ndarray,
    changed: np.ndarray,
    filtered_cols: np.ndarray | None = None,
    filtered_refs: np.ndarray | None = None,
    set_sizes: np.ndarray | None = None,
) -> np.ndarray:
    """The candidates (dep, ref) with a ``changed`` column (a mask) on either side, as ``propose_range``
    with ``current`` gives them from both strategies, but from the signatures (uint64 [n, words]) as they
    are: each changed column's subset test against every other signature, row by row. With ``set_sizes``
    (distinct values per column) only the pairs whose dependent side has at most as many as the
    referenced one: the others cannot be INDs, and the test of a pair stops at its first word that
    rules out the one direction left.

    Beyond the paper, for a discovery after a small batch: the matrix of Alg. 3 pays off when every column
    is a current one; for a few changed columns, transposing 10^5 signatures costs more than the one pass
    over them that tests all changed columns at once."""
    n = signatures.shape[0]
    is_changed = _mask(changed, n)
    cols = _mask(filtered_cols, n)
    found = _propose_changed(
        np.ascontiguousarray(signatures, np.uint64),
        np.flatnonzero(is_changed & ~cols).astype(np.int64),  # a filtered column is on no side
        is_changed,
        cols,
        _mask(filtered_refs, n),
        np.zeros(n, np.int64) if set_sizes is None else np.ascontiguousarray(set_sizes, np.int64),
    )
    return found[np.lexsort((found[:, 1], found[:, 0]))]


def column_ranges(n_columns: int, n_workers: int) -> list[tuple[int, int]]:
    """Split [0, n_columns) into n_workers contiguous half-open ranges (Alg. 8 lines 6-7).

    Alg. 8 pairs lo = ⌈(i-1)·n/w⌉ with an inclusive up = ⌊i·n/w⌋, which overlaps neighbouring ranges when
    n/w is integral; half-open [⌈(i-1)·n/w⌉, ⌈i·n/w⌉) is the disjoint cover it intends.
    """
    if n_workers < 1:
        raise ValueError("n_workers must be >= 1")
    bounds = [-(-i * n_columns // n_workers) for i in range(n_workers + 1)]
    return [(bounds[i], bounds[i + 1]) for i in range(n_workers)]
