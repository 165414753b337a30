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

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

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
                dominated = 0
                for b in range(width):
                    dominated += regs[x, b] <= regs[y, b]
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
    offsets: np.ndarray,
    out_y: np.ndarray,
    out_z: np.ndarray,
    write: bool,
) -> None:
    """Counts the pairs of every x into offsets[x + 1] (write False), or writes them from offsets[x]."""
    n = regs.shape[0]
    for chunk in prange((n + _CHUNK - 1) // _CHUNK):
        counter = np.zeros(n, np.int32)
        touched = np.empty(n, np.int64)
        for x in range(chunk * _CHUNK, min(n, (chunk + 1) * _CHUNK)):
            start = offsets[x] if write else 0
            found = _pairs_of(
                x,
                regs,
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
                offsets[x + 1] = found


def dominated_pairs(
    regs: np.ndarray,
    table_of: np.ndarray,
    family_of: np.ndarray,
    compatible: np.ndarray,
    upper: np.ndarray,
    lower: np.ndarray,
    floor: float,
) -> DominatedPairs:
    """The ordered pairs (x, y) of rows of a (columns x 2^p) register matrix with x, y in different tables
    (``table_of``), of compatible families (``compatible[family_of[x], family_of[y]]``), with
    upper[y] >= floor * lower[x] and D(x, y) > 0 (every such y for a dense x), and their z."""
    regs = np.ascontiguousarray(regs, dtype=np.uint8)
    n = regs.shape[0]
    filled_rows, filled_bucket = np.nonzero(regs)
    filled_start = np.searchsorted(filled_rows, np.arange(n + 1)).astype(np.int64)
    values = regs[filled_rows, filled_bucket]
    # the filled registers by bucket, largest value first within a bucket
    order = np.lexsort((-values.astype(np.int16), filled_bucket))
    by_bucket_start = np.searchsorted(filled_bucket[order], np.arange(regs.shape[1] + 1)).astype(np.int64)
    index = (
        filled_start,
        filled_bucket.astype(np.int64),
        by_bucket_start,
        filled_rows[order].astype(np.int64),
        values[order],
        np.asarray(table_of, np.int64),
        np.asarray(family_of, np.int64),
        np.asarray(compatible, np.bool_),
        np.asarray(upper, np.float64),
        floor * np.asarray(lower, np.float64),
    )
    offsets = np.zeros(n + 1, np.int64)
    _all_pairs(regs, *index, offsets, np.zeros(0, np.int64), np.zeros(0, np.int64), False)
    np.cumsum(offsets, out=offsets)
    y, z = np.empty(offsets[-1], np.int64), np.empty(offsets[-1], np.int64)
    _all_pairs(regs, *index, offsets, y, z, True)
    x = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    return DominatedPairs(x, y, z)
