"""A column's value set: the distinct 64-bit hashes of its canonical values (``lakemeta.hashing``), each with
the number of rows holding it. Free of Spark; the state component (``values.state``) feeds it.

Counts make deletions exact: a value leaves the set when its last row is deleted, and a batch's change to
the set is the signed tally of its rows (+1 inserted, -1 deleted), which sums like the HLL counters do
(BML §4). The set is what HLL registers summarise: where a column is small, its inclusion in any other
column is counted here exactly instead of estimated (the hybrid BML §7 names as future work).

Two different values share a 64-bit hash with probability 2^-64 per pair; an inclusion count |X ∩ Y|
compares |X| · |Y| pairs, so a collision adds a false shared value with probability at most
|X| · |Y| / 2^64 (5·10^-11 for a column of 1,000 values in one of 10^6).
"""

from __future__ import annotations

import numba
import numpy as np


def tally(hashes: np.ndarray, signs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sorted distinct ``hashes``, the sum of ``signs`` over each and the position of a row holding
    each, hashes whose sum is zero left out: with ``signs`` the rows' +1 / -1, a batch's change to the value
    set (the positions tell what else is known of a value, such as whether it is an integer literal)."""
    distinct, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    # float64 sums are exact below 2^53 rows
    counts = np.bincount(inverse, weights=signs, minlength=len(distinct)).astype(np.int64)
    kept = counts != 0
    return distinct[kept], counts[kept], first[kept]


def shared_count(dependent: np.ndarray, referenced: np.ndarray) -> int:
    """|X ∩ Y| from the sorted distinct hashes of X and Y."""
    if not len(referenced):
        return 0
    at = np.minimum(np.searchsorted(referenced, dependent), len(referenced) - 1)
    return int(np.count_nonzero(referenced[at] == dependent))


@numba.njit(cache=True, nogil=True)
def shared_counts(
    first: np.ndarray, second: np.ndarray, offsets: np.ndarray, hashes: np.ndarray
) -> np.ndarray:
    """|X ∩ Y| for each pair (first[i], second[i]) of value sets kept side by side: set c's hashes are
    ``hashes[offsets[c]:offsets[c + 1]]``, sorted and distinct. One merge of the two sorted runs per pair,
    the work of the smaller and larger together, in numba: the inclusion step counts millions of pairs of
    small columns this way inside its tiles (``sketches.pair_tiles``)."""
    result = np.zeros(len(first), dtype=np.int64)
    for i in range(len(first)):
        a, a_end = offsets[first[i]], offsets[first[i] + 1]
        b, b_end = offsets[second[i]], offsets[second[i] + 1]
        shared = 0
        while a < a_end and b < b_end:
            if hashes[a] < hashes[b]:
                a += 1
            elif hashes[b] < hashes[a]:
                b += 1
            else:
                shared += 1
                a += 1
                b += 1
        result[i] = shared
    return result
