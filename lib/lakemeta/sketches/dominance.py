"""Step 1 of BML (Alg. 1 lines 3-6) at m = p for every column pair of a lake at once, without visiting
every pair: z(X, Y) = |{i : V^X_i <= V^Y_i}| over all 2^p registers, for the pairs where it can matter.

A bucket where X is empty (V^X_i = 0) is dominated by any Y, so z(X, Y) = 2^p - f_X + D(X, Y), with f_X
the number of X's filled registers and D(X, Y) the number of them that Y dominates. Most columns of a lake
of small tables fill a few dozen of the 2^p registers, and for such an X the Y with D(X, Y) > 0 are found
through an index of the filled registers by bucket, each bucket's entries sorted by value: X's filled
register (i, v) is dominated exactly by the entries of bucket i holding at least v, a prefix of the
sorted list. The cost is the number of (register, dominating register) matches, not the number of
pairs: 10,000 columns of web tables (10^8 ordered pairs) take about a second.

A pair with D(X, Y) = 0 has the smallest z that X allows, P̂ = 1 - f_X / 2^p, at or below P(0) under the
exact marginal (X's empty buckets alone give pr(V^X = 0), estimated by the same registers through linear
counting): its estimate is Φ̂ = 0 and it is not returned. A column that fills more than an eighth of the
registers (some 2,300 distinct values at p = 14) is compared with every Y the other rules allow, by the
kernel ``dominated_counts`` uses for given pairs: there the index would visit most of the lake per register.

The other rules, applied to every pair returned, are the caller's: ``table_of`` (pairs within one table are
not returned), ``family_of`` with ``compatible`` (type families that can hold the same values), and
``reachable`` cardinalities: upper[y] >= floor * lower[x].
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

_CHUNK = 64  # columns X per parallel work item
_PAIRS_CHUNK = 256  # pairs per parallel work item of ``dominated_counts``
_PARALLEL_MIN_PAIRS = 8 * _PAIRS_CHUNK  # below this, starting the thread pool costs more than it saves
_DENSE_SHARE = 8  # a column filling more than 2^p / 8 registers is compared row against row
_REGISTER_VALUES = 64  # a register holds rho <= 64 - p + 1 < 64

_HIGH_BITS = np.uint64(0x8080808080808080)
_LOW_BITS = np.uint64(0x7F7F7F7F7F7F7F7F)
_LANE_ONES = np.uint64(0x0101010101010101)


@dataclass(frozen=True)
class DominatedPairs:
    """Ordered pairs (x, y) with z = the number of buckets with V^X_i <= V^Y_i over all 2^p registers."""

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray


@njit(cache=True, inline="always")
def dominated_lanes(x: np.uint64, y: np.uint64) -> np.uint64:
    """How many of the 8 byte lanes of two words hold x <= y as unsigned bytes (no carry between lanes).

    Per lane, (y | 0x80) - (x & 0x7f) >= 1 never borrows, and its top bit says low7(y) >= low7(x); x <= y
    when the top bits differ in y's favour, or agree and the low seven bits say so.
    """
    low_le = (y | _HIGH_BITS) - (x & _LOW_BITS)
    le = ((~x & y) | (~(x ^ y) & low_le)) & _HIGH_BITS
    return ((le >> np.uint64(7)) * _LANE_ONES) >> np.uint64(56)


@njit(cache=True, inline="always")
def _dominated(
    x: int, y: int, regs: np.ndarray, words: np.ndarray, filled_start: np.ndarray, filled_bucket: np.ndarray
) -> int:
    """z(x, y) over all 2^p registers, by the cheapest of three equal sums: 2^p - f_x plus D(x, y) counted
    over x's filled registers, or over y's (only a filled register of y can dominate a filled one of x), or
    z word by word, eight registers per word."""
    width = regs.shape[1]
    x_first, x_last = filled_start[x], filled_start[x + 1]
    y_first, y_last = filled_start[y], filled_start[y + 1]
    x_filled, y_filled = x_last - x_first, y_last - y_first
    if 8 * min(x_filled, y_filled) >= width:
        dominated = 0
        for w in range(words.shape[1]):
            dominated += dominated_lanes(words[x, w], words[y, w])
        return dominated
    dominated = width - x_filled
    if x_filled <= y_filled:
        for j in range(x_first, x_last):
            dominated += regs[x, filled_bucket[j]] <= regs[y, filled_bucket[j]]
    else:
        for j in range(y_first, y_last):
            bucket = filled_bucket[j]
            dominated += 0 < regs[x, bucket] <= regs[y, bucket]
    return dominated


@njit(cache=True, nogil=True)
def _dominated_range(
    regs: np.ndarray,
    words: np.ndarray,
    filled_start: np.ndarray,
    filled_bucket: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    z: np.ndarray,
    start: int,
    stop: int,
) -> None:
    for i in range(start, stop):
        z[i] = _dominated(x[i], y[i], regs, words, filled_start, filled_bucket)


@njit(cache=True, parallel=True)
def _dominated_parallel(
    regs: np.ndarray,
    words: np.ndarray,
    filled_start: np.ndarray,
    filled_bucket: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    z: np.ndarray,
) -> None:
    n = x.shape[0]
    for chunk in prange((n + _PAIRS_CHUNK - 1) // _PAIRS_CHUNK):
        start, stop = chunk * _PAIRS_CHUNK, min(n, (chunk + 1) * _PAIRS_CHUNK)
        _dominated_range(regs, words, filled_start, filled_bucket, x, y, z, start, stop)


def _filled(regs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's filled registers: the row's first entry in ``filled_bucket``, and their buckets."""
    filled_rows, filled_bucket = np.nonzero(regs)
    filled_start = np.searchsorted(filled_rows, np.arange(regs.shape[0] + 1)).astype(np.int64)
    return filled_start, filled_bucket.astype(np.int64)


def dominated_counts(regs: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """z(x[j], y[j]) = |{i : V^x_i <= V^y_i}| over all 2^p registers of a (columns x 2^p) matrix, for the
    given pairs (Alg. 1 lines 3-6 at m = p)."""
    regs = np.ascontiguousarray(regs, dtype=np.uint8)
    padding = -regs.shape[1] % 8  # empty registers in both rows: each adds one dominated bucket
    if padding:
        regs = np.pad(regs, ((0, 0), (0, padding)))
    x, y = np.asarray(x, np.int64), np.asarray(y, np.int64)
    z = np.empty(x.shape[0], np.int64)
    args = (regs, regs.view(np.uint64), *_filled(regs), x, y, z)
    if x.shape[0] >= _PARALLEL_MIN_PAIRS:
        _dominated_parallel(*args)
    else:
        _dominated_range(*args, 0, x.shape[0])
    return z - padding


@njit(cache=True, inline="always")
def _allowed(
    x: int,
    y: int,
    table_of: np.ndarray,
    family_of: np.ndarray,
    compatible: np.ndarray,
    upper: np.ndarray,
    threshold: float,
) -> bool:
    return (
        table_of[x] != table_of[y]
        and compatible[family_of[x], family_of[y]]
        and upper[y] > 0.0
        and upper[y] >= threshold
    )


@njit(cache=True, nogil=True)
def _pairs_of(
    x: int,
    regs: np.ndarray,
    words: np.ndarray,
    filled_start: np.ndarray,
    filled_bucket: np.ndarray,
    by_bucket_start: np.ndarray,
    by_bucket_column: np.ndarray,
    by_bucket_value: np.ndarray,
    table_of: np.ndarray,
    family_of: np.ndarray,
    compatible: np.ndarray,
    upper: np.ndarray,
    threshold: float,
    counter: np.ndarray,
    touched: np.ndarray,
    out_y: np.ndarray,
    out_z: np.ndarray,
    write: bool,
) -> int:
    """The pairs (x, y) with y allowed and D(x, y) > 0 (or every allowed y, for a dense x); writes them
    into out_y / out_z when ``write``, and returns how many there are."""
    width = regs.shape[1]
    first, last = filled_start[x], filled_start[x + 1]
    filled = last - first
    if filled == 0:
        return 0
    found = 0
    if _DENSE_SHARE * filled > width:
        for y in range(regs.shape[0]):
            if not _allowed(x, y, table_of, family_of, compatible, upper, threshold):
                continue
            if write:
                out_y[found] = y
                out_z[found] = _dominated(x, y, regs, words, filled_start, filled_bucket)
            found += 1
        return found
    n_touched = 0
    for j in range(first, last):
        bucket = filled_bucket[j]
        value = regs[x, bucket]
        for e in range(by_bucket_start[bucket], by_bucket_start[bucket + 1]):
            if by_bucket_value[e] < value:
                break  # the bucket's entries are sorted by value, largest first
            y = by_bucket_column[e]
            if counter[y] == 0:
                touched[n_touched] = y
                n_touched += 1
            counter[y] += 1
    for t in range(n_touched):
        y = touched[t]
        if _allowed(x, y, table_of, family_of, compatible, upper, threshold):
            if write:
                out_y[found], out_z[found] = y, width - filled + counter[y]
            found += 1
        counter[y] = 0
    return found


@njit(cache=True, parallel=True)
def _all_pairs(
    regs: np.ndarray,
    words: np.ndarray,
    filled_start: np.ndarray,
    filled_bucket: np.ndarray,
    by_bucket_start: np.ndarray,
    by_bucket_column: np.ndarray,
    by_bucket_value: np.ndarray,
    table_of: np.ndarray,
    family_of: np.ndarray,
    compatible: np.ndarray,
    upper: np.ndarray,
    thresholds: np.ndarray,
    first: int,
    stop: int,
    offsets: np.ndarray,
    out_y: np.ndarray,
    out_z: np.ndarray,
    write: bool,
) -> None:
    """For x in [first, stop): counts the pairs of x into offsets[x - first + 1] (write False), or writes
    them from offsets[x - first]. A work item takes every chunks-th column, so that the dense columns,
    wherever they sit, spread over the threads."""
    n = regs.shape[0]
    chunks = (stop - first + _CHUNK - 1) // _CHUNK
    for chunk in prange(chunks):
        counter = np.zeros(n, np.int32)
        touched = np.empty(n, np.int64)
        for x in range(first + chunk, stop, chunks):
            start = offsets[x - first] if write else 0
            found = _pairs_of(
                x,
                regs,
                words,
                filled_start,
                filled_bucket,
                by_bucket_start,
                by_bucket_column,
                by_bucket_value,
                table_of,
                family_of,
                compatible,
                upper,
                thresholds[x],
                counter,
                touched,
                out_y[start:],
                out_z[start:],
                write,
            )
            if not write:
                offsets[x - first + 1] = found


@njit(cache=True, nogil=True)
def _by_bucket(by_bucket: np.ndarray, filled: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The filled registers of a (2^p x columns) register matrix by bucket, largest value first within a
    bucket: each bucket's first entry, and the entries' columns and values. A counting sort bucket by
    bucket, so that reads and writes stay local (a comparison sort of the millions of filled registers of
    a few hundred large columns takes seconds)."""
    width, n = by_bucket.shape
    bucket_start = np.empty(width + 1, np.int64)
    columns = np.empty(filled, np.int64)
    values = np.empty(filled, np.uint8)
    slots = np.empty(_REGISTER_VALUES + 1, np.int64)
    start = 0
    for bucket in range(width):
        bucket_start[bucket] = start
        slots[:] = 0
        for x in range(n):
            value = by_bucket[bucket, x]
            if value:
                slots[_REGISTER_VALUES - value] += 1
        offset = start
        for v in range(_REGISTER_VALUES + 1):
            count = slots[v]
            slots[v] = offset
            offset += count
        for x in range(n):
            value = by_bucket[bucket, x]
            if value:
                slot = _REGISTER_VALUES - value
                columns[slots[slot]], values[slots[slot]] = x, value
                slots[slot] += 1
        start = offset
    bucket_start[width] = start
    return bucket_start, columns, values


class RegisterIndex:
    """The filled registers of a (columns x 2^p) register matrix by column and by bucket, with the rules
    the pairs must pass: x, y in different tables (``table_of``), of compatible families
    (``compatible[family_of[x], family_of[y]]``), and upper[y] >= floor * lower[x]."""

    def __init__(
        self,
        regs: np.ndarray,
        table_of: np.ndarray,
        family_of: np.ndarray,
        compatible: np.ndarray,
        upper: np.ndarray,
        lower: np.ndarray,
        floor: float,
    ) -> None:
        self.regs = np.ascontiguousarray(regs, dtype=np.uint8)
        if self.regs.shape[1] % 8:
            raise ValueError(f"registers of 2^p buckets, p >= 3, are compared by words: {self.regs.shape[1]}")
        filled_start, filled_bucket = _filled(self.regs)
        self._arrays = (
            self.regs,
            self.regs.view(np.uint64),
            filled_start,
            filled_bucket,
            *_by_bucket(np.ascontiguousarray(self.regs.T), filled_start[-1]),
            np.asarray(table_of, np.int64),
            np.asarray(family_of, np.int64),
            np.asarray(compatible, np.bool_),
            np.asarray(upper, np.float64),
            floor * np.asarray(lower, np.float64),
        )

    def counts(self, columns: int | None = None) -> np.ndarray:
        """How many pairs each column x < ``columns`` (every column by default) has (those ``pairs``
        returns)."""
        n = self.regs.shape[0] if columns is None else columns
        counts = np.zeros(n + 1, np.int64)
        empty = np.zeros(0, np.int64)
        _all_pairs(*self._arrays, 0, n, counts, empty, empty, False)
        return counts[1:]

    def pairs(self, first: int, stop: int, counts: np.ndarray) -> DominatedPairs:
        """The pairs (x, y) of the columns x in [first, stop) with D(x, y) > 0 (every y the rules allow,
        for a dense x), and their z; ``counts`` as ``counts`` gives them."""
        offsets = np.concatenate([[0], np.cumsum(counts[first:stop])]).astype(np.int64)
        y, z = np.empty(offsets[-1], np.int64), np.empty(offsets[-1], np.int64)
        _all_pairs(*self._arrays, first, stop, offsets, y, z, True)
        x = np.repeat(np.arange(first, stop, dtype=np.int64), np.diff(offsets))
        return DominatedPairs(x, y, z)

    def blocks(self, max_pairs: int, columns: int | None = None) -> Iterator[DominatedPairs]:
        """All pairs of the columns x < ``columns`` (every column by default), in blocks of consecutive
        columns x holding at most ``max_pairs`` pairs each (or one column's, where that is more), so that
        memory follows the block, not the lake."""
        counts = self.counts(columns)
        ends = np.cumsum(counts)
        first, n = 0, len(counts)
        while first < n:
            done = ends[first - 1] if first else 0
            stop = max(first + 1, int(np.searchsorted(ends, done + max_pairs, side="right")))
            yield self.pairs(first, min(stop, n), counts)
            first = stop
