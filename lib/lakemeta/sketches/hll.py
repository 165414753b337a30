"""HyperLogLog with deletions (BML §4): per bucket, per rho, the number of row occurrences.

State. ``ColumnHllCounters`` at one high precision ``p``: for each bucket of the top ``p`` hash bits and each
rho, how many row occurrences (duplicates counted) of the column hash there. BML §4 keeps a max-heap of at
most l - m nodes per bucket, each node a rho with a counter; the sorted (bucket, rho, count) arrays here are
that heap laid flat, and they are also the rows of the ``state/hll_counters`` Delta table. A batch gives a
delta of the same shape (counts may be negative); merging adds it and drops zeros
(``catalog.counts.merge_counts``; in memory, ``lakemeta.reference.hll_merge``). Counts never go below zero: a
delete of a value that was never inserted is an error, not a silent clamp.

Metric. The HLL register of a bucket is the largest rho with a positive count (Definition 2, Eq. 2);
registers at any m <= p are derived by folding (``fold_registers``), exactly, so only precision p is
stored. The cardinality estimate is Flajolet et al.'s HLL estimator with its small- and large-range
corrections (BML §2.2, Alg. 3).

Bits (l = 64, as the paper's 64-bit hash). bucket = top m bits of the hash (Alg. 3 line 6); rho = position
of the leftmost 1 in the remaining l - m bits (Alg. 3 line 7), and l - m + 1 when those bits are all zero,
so rho ∈ [1, l - m + 1]. That last convention is what makes folding exact (proof at ``fold_registers``).

Default precision p = 14. Eq. 12 picks m = log2(max(n_X, n_Y)) / 2 per pair, so p = 14 serves every pair
whose larger column has up to 2^28 ≈ 2.7·10^8 distinct values without clamping m, and it is the paper's own
memory budget (§5.1: 2^14 · 6 bits per column, TPC-DS 300). The cardinalities n_X, n_Y that BML's Lookup
needs are estimated at p, where HLL's standard error is 1.04 / 2^7 ≈ 0.8 %.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import leading_zeros

from lakemeta.arrays import run_starts

HASH_BITS = 64
DEFAULT_PRECISION = 14
MAX_PRECISION = 26
# a counter key packs (bucket, rho): rho <= 65 < 2^7
_RHO_BITS = 7
_RHO_MASK = (1 << _RHO_BITS) - 1


@dataclass(frozen=True)
class ColumnHllCounters:
    """Counters of one column at precision p, sorted by (bucket, rho), no zero counts.

    As stored state every count is positive; as a batch delta counts may be negative.
    """

    p: int
    bucket: np.ndarray  # uint32
    rho: np.ndarray  # uint8
    count: np.ndarray  # int64

    def __len__(self) -> int:
        return int(self.bucket.shape[0])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ColumnHllCounters):
            return NotImplemented
        return (
            self.p == other.p
            and np.array_equal(self.bucket, other.bucket)
            and np.array_equal(self.rho, other.rho)
            and np.array_equal(self.count, other.count)
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def keys(self) -> np.ndarray:
        return (self.bucket.astype(np.int64) << _RHO_BITS) | self.rho.astype(np.int64)


def _check_precision(p: int) -> None:
    if not 0 <= p <= MAX_PRECISION:
        raise ValueError(f"precision must be in [0, {MAX_PRECISION}], got {p}")


def empty_counters(p: int = DEFAULT_PRECISION) -> ColumnHllCounters:
    """The state of a column with no values."""
    _check_precision(p)
    return ColumnHllCounters(p, np.zeros(0, np.uint32), np.zeros(0, np.uint8), np.zeros(0, np.int64))


@njit(cache=True, nogil=True)
def _bucket_rho_keys(hashes: np.ndarray, p: int) -> np.ndarray:
    # Alg. 3 lines 6-7: bucket = leftmost p bits; rho = leftmost 1 in the other l - p bits (l - p + 1 if none)
    n = hashes.shape[0]
    keys = np.empty(n, dtype=np.int64)
    tail_bits = HASH_BITS - p
    for i in range(n):
        h = hashes[i]
        bucket = np.int64(h >> np.uint64(tail_bits)) if p > 0 else np.int64(0)
        tail = h << np.uint64(p)
        rho = np.int64(leading_zeros(tail)) + 1 if tail != 0 else np.int64(tail_bits + 1)
        keys[i] = (bucket << _RHO_BITS) | rho
    return keys


def _aggregate(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum counts per key (sorted unique keys out), dropping keys whose sum is zero."""
    if keys.shape[0] == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.flatnonzero(run_starts(sorted_keys))
    sums = np.add.reduceat(counts[order].astype(np.int64), starts)
    unique_keys = sorted_keys[starts]
    nonzero = sums != 0
    return unique_keys[nonzero], sums[nonzero]


def _from_keys(p: int, keys: np.ndarray, counts: np.ndarray) -> ColumnHllCounters:
    return ColumnHllCounters(
        p, (keys >> _RHO_BITS).astype(np.uint32), (keys & _RHO_MASK).astype(np.uint8), counts.astype(np.int64)
    )


_DENSE_MAX_PRECISION = 16  # dense tally: 2^p (l - p + 1) int64 cells, 26 MB at p = 16


@njit(cache=True, nogil=True)
def _dense_tally(hashes: np.ndarray, signs: np.ndarray, p: int) -> tuple[np.ndarray, np.ndarray]:
    """Occurrences per (bucket, rho) tallied in one dense array, then its nonzero cells as sorted keys:
    one pass, no sort. Cell index = bucket (l - p + 1) + rho - 1 keeps (bucket, rho) order."""
    tail_bits = HASH_BITS - p
    n_rho = tail_bits + 1
    tally = np.zeros((1 << p) * n_rho, dtype=np.int64)
    for i in range(hashes.shape[0]):
        h = hashes[i]
        bucket = np.int64(h >> np.uint64(tail_bits)) if p > 0 else np.int64(0)
        tail = h << np.uint64(p)
        rho = np.int64(leading_zeros(tail)) + 1 if tail != 0 else np.int64(n_rho)
        tally[bucket * n_rho + rho - 1] += signs[i]
    cells = np.flatnonzero(tally)
    keys = ((cells // n_rho) << _RHO_BITS) | (cells % n_rho + 1)
    return keys, tally[cells]


def counter_delta(
    hashes: np.ndarray, signs: np.ndarray | None = None, p: int = DEFAULT_PRECISION
) -> ColumnHllCounters:
    """Counter delta of a batch: occurrences per (bucket, rho), +1 per inserted and -1 per deleted row.

    ``hashes`` are the non-null value hashes of the batch's rows (``lakemeta.hashing.hash_strings``),
    ``signs`` the matching +1 (insert) / -1 (delete), or any integer multiplicity; None means all inserts.
    Up to p = 16 the counts are tallied densely (linear time); above, by sorting the (bucket, rho) keys.
    """
    _check_precision(p)
    hashes = np.ascontiguousarray(hashes, dtype=np.uint64)
    signs = np.ones(hashes.shape[0], dtype=np.int64) if signs is None else np.asarray(signs, np.int64)
    if signs.shape != hashes.shape:
        raise ValueError("hashes and signs must have the same shape")
    if p <= _DENSE_MAX_PRECISION:
        keys, counts = _dense_tally(hashes, np.ascontiguousarray(signs), p)
    else:
        keys, counts = _aggregate(_bucket_rho_keys(hashes, p), signs)
    return _from_keys(p, keys, counts)


def add_counters(a: ColumnHllCounters, b: ColumnHllCounters) -> ColumnHllCounters:
    """a + b with zero counts dropped; counts may be negative (partial deltas of one batch add up)."""
    if a.p != b.p:
        raise ValueError(f"precision mismatch: p={a.p} and p={b.p}")
    keys, counts = _aggregate(np.concatenate((a.keys, b.keys)), np.concatenate((a.count, b.count)))
    return _from_keys(a.p, keys, counts)


def registers(counters: ColumnHllCounters, m: int | None = None) -> np.ndarray:
    """HLL registers (uint8, 2^m of them; m = p when None): per bucket the largest rho with a positive count.

    Eq. 2 (Definition 2) over the values present; an empty bucket has register 0.
    """
    p = counters.p
    positive = counters.count > 0
    bucket, rho = counters.bucket[positive], counters.rho[positive]
    regs = np.zeros(1 << p, dtype=np.uint8)
    if bucket.shape[0]:
        # entries are sorted by (bucket, rho): the last entry of each bucket holds its largest rho, and
        # it is the entry before the next bucket's first
        starts = np.flatnonzero(run_starts(bucket))
        last = np.append(starts[1:], bucket.shape[0]) - 1
        regs[bucket[last]] = rho[last]
    return regs if m is None else fold_registers(regs, p, m)


@njit(cache=True, nogil=True)
def _register_maxima(hashes: np.ndarray, p: int) -> np.ndarray:
    tail_bits = HASH_BITS - p
    regs = np.zeros(1 << p, dtype=np.uint8)
    for i in range(hashes.shape[0]):
        h = hashes[i]
        bucket = np.int64(h >> np.uint64(tail_bits)) if p > 0 else np.int64(0)
        tail = h << np.uint64(p)
        rho = np.uint8(leading_zeros(tail) + 1) if tail != 0 else np.uint8(tail_bits + 1)
        if rho > regs[bucket]:
            regs[bucket] = rho
    return regs


def registers_of(hashes: np.ndarray, p: int = DEFAULT_PRECISION) -> np.ndarray:
    """The HLL registers of a set of hashes (Eq. 2), without the counters: what a sketch that is never
    updated by deletions needs (phase 2's tuple sketches, ``fks.candidates``), in one pass over the
    hashes and 2^p bytes. Equal to ``registers(counter_delta(hashes, p=p))``."""
    _check_precision(p)
    return _register_maxima(np.ascontiguousarray(hashes, dtype=np.uint64), p)


def fold_registers(regs: np.ndarray, p: int, m: int) -> np.ndarray:
    """Registers at precision m <= p from registers at p, equal to the registers built directly at m.

    Works on the last axis, so a (columns x 2^p) matrix folds in one call.

    Proof of exactness. Let h be a 64-bit hash. At precision p its bucket is b = h[1..p] and its rho r_p is
    the position of the first 1 in h[p+1..64] (65 - p if none). At m <= p its bucket is b >> (p - m) and its
    rho r_m is the position of the first 1 in h[m+1..64], whose first p - m bits are low = b mod 2^(p-m).
      * low != 0: the first 1 lies inside low, r_m = (p - m) - bitlength(low) + 1, whatever r_p is;
      * low == 0: r_m = (p - m) + r_p, and the all-zero case gives (p - m) + 65 - p = 65 - m, the cap at m.
    So for a fixed p-bucket b, r_m = g_b(r_p) with g_b non-decreasing, hence the max of r_m over the values
    of b is g_b(max r_p) = g_b(R_p[b]) when b holds a value (R_p[b] > 0). The m-register is the max over its
    2^(p-m) p-buckets, the non-empty ones contributing g_b(R_p[b]), and 0 if all are empty. ``_fold_rows``
    computes exactly that, with no approximation.
    """
    _check_precision(p)
    if not 0 <= m <= p:
        raise ValueError(f"need 0 <= m <= p, got m={m}, p={p}")
    regs = np.ascontiguousarray(regs, dtype=np.uint8)
    if regs.shape[-1] != 1 << p:
        raise ValueError(f"expected {1 << p} registers on the last axis, got {regs.shape[-1]}")
    rows = regs.reshape(-1, 1 << p)
    return _fold_rows(rows, p, m).reshape((*regs.shape[:-1], 1 << m))


@njit(cache=True, nogil=True)
def _fold_rows(rows: np.ndarray, p: int, m: int) -> np.ndarray:
    shift = p - m
    low_mask = (1 << shift) - 1
    out = np.zeros((rows.shape[0], 1 << m), dtype=np.uint8)
    for r in range(rows.shape[0]):
        for b in range(rows.shape[1]):
            rho_p = rows[r, b]
            if rho_p == 0:  # empty p-bucket: contributes nothing
                continue
            low = b & low_mask
            # low != 0: first 1 inside low, at (p - m) - bitlength(low) + 1; low == 0: (p - m) + r_p
            rho_m = (
                shift - (64 - np.int64(leading_zeros(np.uint64(low)))) + 1 if low else shift + np.int64(rho_p)
            )
            j = b >> shift
            if rho_m > out[r, j]:
                out[r, j] = rho_m
    return out


_INVERSE_POWERS = np.ldexp(1.0, -np.arange(256))  # 2^-R for every uint8 register value


@njit(cache=True, nogil=True)
def _harmonic_terms(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: Σ_j 2^(-R_j) and the number of zero registers."""
    inverse_sum = np.zeros(rows.shape[0])
    zeros = np.zeros(rows.shape[0], dtype=np.int64)
    for r in range(rows.shape[0]):
        for j in range(rows.shape[1]):
            inverse_sum[r] += _INVERSE_POWERS[rows[r, j]]
            zeros[r] += rows[r, j] == 0
    return inverse_sum, zeros


def _alpha(n_buckets: int) -> float:
    # Flajolet et al. 2007, Fig. 3
    if n_buckets == 16:
        return 0.673
    if n_buckets == 32:
        return 0.697
    if n_buckets == 64:
        return 0.709
    return 0.7213 / (1.0 + 1.079 / n_buckets)


def relative_standard_error(p: int) -> float:
    """HLL's relative standard error of a distinct-count estimate at precision p: 1.04 / sqrt(2^p)
    (BML §2.2, after Flajolet et al.)."""
    return 1.04 / float(np.sqrt(float(1 << p)))


def estimate_cardinality(regs: np.ndarray) -> np.ndarray:
    """HLL distinct-count estimate per row of registers (last axis: 2^m buckets, m >= 4).

    Flajolet et al. 2007 (BML §2.2, [14]): raw E = alpha_M M² / Σ_j 2^(-R_j); E <= 5M/2 with V > 0 empty
    registers -> linear counting M ln(M / V); E > 2^l / 30 -> -2^l ln(1 - E / 2^l), with l = 64 bits.
    """
    regs = np.ascontiguousarray(regs, dtype=np.uint8)
    n_buckets = regs.shape[-1]
    if n_buckets < 16 or n_buckets & (n_buckets - 1):
        raise ValueError(f"cardinality estimation needs 2^m >= 16 buckets, got {n_buckets}")
    inverse_sum, zeros = _harmonic_terms(regs.reshape(-1, n_buckets))
    inverse_sum, zeros = inverse_sum.reshape(regs.shape[:-1]), zeros.reshape(regs.shape[:-1])
    raw = _alpha(n_buckets) * n_buckets * n_buckets / inverse_sum
    linear = n_buckets * np.log(n_buckets / np.maximum(zeros, 1))
    two_l = 2.0**HASH_BITS
    large = -two_l * np.log1p(-np.minimum(raw, two_l * (1 - 1e-16)) / two_l)
    return np.where((raw <= 2.5 * n_buckets) & (zeros > 0), linear, np.where(raw > two_l / 30, large, raw))


_COUNTERS_HEADER = struct.Struct("<4sBBBQ")  # magic, version, p, count width in bytes, entries
_REGISTERS_HEADER = struct.Struct("<4sBB")  # magic, version, m
_COUNT_DTYPES = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def counters_to_bytes(counters: ColumnHllCounters) -> bytes:
    """Compact bytes: header, then bucket (uint16 if p <= 16 else uint32), rho (uint8) and count in the
    narrowest signed integer width holding every count, each array little-endian."""
    peak = int(np.abs(counters.count).max()) if len(counters) else 0
    width = next(w for w, dt in _COUNT_DTYPES.items() if peak <= np.iinfo(dt).max)
    bucket_dtype = "<u2" if counters.p <= 16 else "<u4"
    return b"".join(
        (
            _COUNTERS_HEADER.pack(b"LMHC", 1, counters.p, width, len(counters)),
            counters.bucket.astype(bucket_dtype).tobytes(),
            counters.rho.astype(np.uint8).tobytes(),
            counters.count.astype(np.dtype(_COUNT_DTYPES[width]).newbyteorder("<")).tobytes(),
        )
    )


def counters_from_bytes(data: bytes) -> ColumnHllCounters:
    magic, version, p, width, n = _COUNTERS_HEADER.unpack_from(data)
    if magic != b"LMHC" or version != 1:
        raise ValueError("not lakemeta HLL counters (version 1)")
    bucket_dtype = np.dtype("<u2" if p <= 16 else "<u4")
    pos = _COUNTERS_HEADER.size
    bucket = np.frombuffer(data, bucket_dtype, n, pos)
    pos += n * bucket_dtype.itemsize
    rho = np.frombuffer(data, np.uint8, n, pos)
    pos += n
    count = np.frombuffer(data, np.dtype(_COUNT_DTYPES[width]).newbyteorder("<"), n, pos)
    return ColumnHllCounters(p, bucket.astype(np.uint32), rho.copy(), count.astype(np.int64))


def registers_to_bytes(regs: np.ndarray) -> bytes:
    """Header (magic, version, m) then one byte per register."""
    n = regs.shape[0]
    if regs.ndim != 1 or n & (n - 1) or n == 0:
        raise ValueError("expected a 1-D array of 2^m registers")
    return _REGISTERS_HEADER.pack(b"LMHR", 1, n.bit_length() - 1) + regs.astype(np.uint8).tobytes()


def registers_from_bytes(data: bytes) -> np.ndarray:
    magic, version, m = _REGISTERS_HEADER.unpack_from(data)
    if magic != b"LMHR" or version != 1:
        raise ValueError("not lakemeta HLL registers (version 1)")
    return np.frombuffer(data, np.uint8, 1 << m, _REGISTERS_HEADER.size).copy()
