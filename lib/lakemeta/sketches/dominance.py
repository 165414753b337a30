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
registers (some 2,300 distinct values at p = 14) is compared word by word with every Y the other rules
allow, as ``bml`` compares two rows: there the index would visit most of the lake per register.

The other rules, applied to every pair returned, are the caller's: ``table_of`` (pairs within one table are
not returned), ``family_of`` with ``compatible`` (type families that can hold the same values), and
``reachable`` cardinalities: upper[y] >= floor * lower[x].
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from lakemeta.sketches.bml import dominated_lanes

_CHUNK = 64  # columns X per parallel work item
_DENSE_SHARE = 8  # a column filling more than 2^p / 8 registers is compared row against row


@dataclass(frozen=True)
class DominatedPairs:
    """Ordered pairs (x, y) with z = the number of buckets with V^X_i <= V^Y_i over all 2^p registers."""

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray


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
                y_first, y_last = filled_start[y], filled_start[y + 1]
                if _DENSE_SHARE * (y_last - y_first) > width:
                    dominated = 0
                    for w in range(words.shape[1]):  # eight registers per word
                        dominated += dominated_lanes(words[x, w], words[y, w])
                else:  # only y's filled registers can dominate a filled one of x
                    dominated = width - filled
                    for j in range(y_first, y_last):
                        bucket = filled_bucket[j]
                        dominated += 0 < regs[x, bucket] <= regs[y, bucket]
                out_y[found], out_z[found] = y, dominated
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
        n = self.regs.shape[0]
        if self.regs.shape[1] % 8:
            raise ValueError(f"registers of 2^p buckets, p >= 3, are compared by words: {self.regs.shape[1]}")
        filled_rows, filled_bucket = np.nonzero(self.regs)
        values = self.regs[filled_rows, filled_bucket]
        # the filled registers by bucket, largest value first within a bucket
        order = np.lexsort((-values.astype(np.int16), filled_bucket))
        self._arrays = (
            self.regs,
            self.regs.view(np.uint64),
            np.searchsorted(filled_rows, np.arange(n + 1)).astype(np.int64),
            filled_bucket.astype(np.int64),
            np.searchsorted(filled_bucket[order], np.arange(self.regs.shape[1] + 1)).astype(np.int64),
            filled_rows[order].astype(np.int64),
            values[order],
            np.asarray(table_of, np.int64),
            np.asarray(family_of, np.int64),
            np.asarray(compatible, np.bool_),
            np.asarray(upper, np.float64),
            floor * np.asarray(lower, np.float64),
        )

    def counts(self) -> np.ndarray:
        """How many pairs each column x has (those ``pairs`` returns)."""
        n = self.regs.shape[0]
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

    def blocks(self, max_pairs: int) -> Iterator[DominatedPairs]:
        """All pairs, in blocks of consecutive columns x holding at most ``max_pairs`` pairs each (or one
        column's, where that is more), so that memory follows the block, not the lake."""
        counts = self.counts()
        ends = np.cumsum(counts)
        first, n = 0, len(counts)
        while first < n:
            done = ends[first - 1] if first else 0
            stop = max(first + 1, int(np.searchsorted(ends, done + max_pairs, side="right")))
            yield self.pairs(first, min(stop, n), counts)
            first = stop
