"""The 64-bit hash of a canonical value that all of lakemeta uses: XXH64 (seed 0) of its UTF-8 bytes.

One hash function everywhere is what makes the state of different components and columns comparable: the
deletable HLL counters and bottom-k sketches (BML §4, Zhang et al. App. C) are coordinated because every
column hashes a value alike, Many's Bloom signatures and the validator's merge keys (Many §4.1) read one
hash per value, and MATE's Bloom super keys (§7.1.2) derive their bits from it. The kernels read the Arrow
buffers directly (validity, int32/int64 offsets, uint8 data): no Python object is created per value.

Input: (large_)string and (large_)binary arrays are read as they are, plain or chunked, sliced or not; any
other type is first turned into its canonical form (``canonical``), so that columns of different physical
types holding the same values hash alike (an integer key in one file, a decimal(10,0) or a double in
another, as foreign keys across files need).

The canonical form of a value, by Arrow type:

* strings and binary: the value as it is (no trimming, no case folding);
* integers: decimal digits with a leading ``-`` when negative (``42``, ``-7``);
* decimals: the digits with the fractional part's trailing zeros removed, and the point too when nothing
  is left after it (``12.50`` -> ``12.5``, ``10.00`` -> ``10``), so an integral decimal is its digits;
* floating point: the shortest string that reads back as the same number (``0.1``, ``2.5e-7``); integral
  values below 10^16 come out as their digits (``3.0`` -> ``3``); ``-0`` is ``0``; ``nan``, ``inf``;
* booleans ``true`` / ``false``; dates ``YYYY-MM-DD``; timestamps ``YYYY-MM-DD HH:MM:SS.ffffff`` with a
  ``Z`` when zoned (Spark writes UTC); dictionary arrays by their values' form.

Nulls: a null is a missing value, not a value. ``hash_strings`` and ``hash_tuples`` return
``(hashes, valid)`` with one entry per row; ``valid`` is False for a null (for tuples, a row with any null)
and ``hashes`` holds 0 there. Callers keep ``hashes[valid]``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)

_READ_AS_IS = (pa.string(), pa.large_string(), pa.binary(), pa.large_binary())
_LARGE_OFFSETS = (pa.large_string(), pa.large_binary())


@njit(cache=True, inline="always")
def _rotl(x: np.uint64, r: int) -> np.uint64:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(cache=True, inline="always")
def _read_le(data: np.ndarray, i: int, n_bytes: int) -> np.uint64:
    # little-endian load of n_bytes (4 or 8), as the XXH64 specification reads its input
    v = np.uint64(0)
    for b in range(n_bytes):
        v |= np.uint64(data[i + b]) << np.uint64(8 * b)
    return v


@njit(cache=True, inline="always")
def _round(acc: np.uint64, lane: np.uint64) -> np.uint64:
    acc = acc + lane * _P2
    acc = _rotl(acc, 31)
    return acc * _P1


@njit(cache=True, inline="always")
def _merge_round(acc: np.uint64, val: np.uint64) -> np.uint64:
    acc ^= _round(np.uint64(0), val)
    return acc * _P1 + _P4


@njit(cache=True, inline="always")
def _converge(v1: np.uint64, v2: np.uint64, v3: np.uint64, v4: np.uint64) -> np.uint64:
    # the four accumulators of the 32-byte stripes folded into one
    h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
    h = _merge_round(h, v1)
    h = _merge_round(h, v2)
    h = _merge_round(h, v3)
    return _merge_round(h, v4)


@njit(cache=True, inline="always")
def _lane_step(h: np.uint64, lane: np.uint64) -> np.uint64:
    # one 8-byte lane after the stripes
    h ^= _round(np.uint64(0), lane)
    return _rotl(h, 27) * _P1 + _P4


@njit(cache=True, inline="always")
def _avalanche(h: np.uint64) -> np.uint64:
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    h ^= h >> np.uint64(32)
    return h


@njit(cache=True)
def xxh64_bytes(data: np.ndarray, start: int, end: int) -> np.uint64:
    """XXH64 with seed 0 of ``data[start:end]`` (uint8), the reference algorithm of Y. Collet step by step."""
    length = end - start
    i = start
    if length >= 32:
        v1 = _P1 + _P2
        v2 = _P2
        v3 = np.uint64(0)
        v4 = np.uint64(0) - _P1
        limit = end - 32
        while i <= limit:
            v1 = _round(v1, _read_le(data, i, 8))
            v2 = _round(v2, _read_le(data, i + 8, 8))
            v3 = _round(v3, _read_le(data, i + 16, 8))
            v4 = _round(v4, _read_le(data, i + 24, 8))
            i += 32
        h = _converge(v1, v2, v3, v4)
    else:
        h = _P5
    h += np.uint64(length)
    while i + 8 <= end:
        h = _lane_step(h, _read_le(data, i, 8))
        i += 8
    if i + 4 <= end:
        h ^= _read_le(data, i, 4) * _P1
        h = _rotl(h, 23) * _P2 + _P3
        i += 4
    while i < end:
        h ^= np.uint64(data[i]) * _P5
        h = _rotl(h, 11) * _P1
        i += 1
    return _avalanche(h)


@njit(cache=True, nogil=True)
def _hash_spans(offsets: np.ndarray, data: np.ndarray, valid: np.ndarray) -> np.ndarray:
    n = offsets.shape[0] - 1
    out = np.zeros(n, dtype=np.uint64)
    for r in range(n):
        if valid[r]:
            out[r] = xxh64_bytes(data, offsets[r], offsets[r + 1])
    return out


def canonical(arr: pa.Array) -> pa.Array:
    """The canonical string form of every value (module docstring); strings and binary as they are."""
    if arr.type in _READ_AS_IS:
        return arr
    if pa.types.is_dictionary(arr.type):
        return canonical(arr.dictionary_decode())
    if pa.types.is_timestamp(arr.type) and arr.type.tz not in (None, "UTC"):
        # an instant is one value whichever zone a reader attached: written as UTC
        return canonical(arr.cast(pa.timestamp(arr.type.unit, "UTC")))
    text = arr.cast(pa.large_string())
    if pa.types.is_decimal(arr.type) and arr.type.scale > 0:
        # every value holds a point: strip the fraction's trailing zeros, then a bare point
        return pc.utf8_rtrim(pc.utf8_rtrim(text, characters="0"), characters=".")
    if pa.types.is_floating(arr.type):
        return pc.if_else(pc.equal(text, "-0"), pa.scalar("0", pa.large_string()), text)
    return text


INTEGER_LITERAL = r"^[+-]?[0-9]+$"


def integer_literals(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Whether each value's canonical form is an integer literal (``INTEGER_LITERAL``; False for a null):
    every value of an integer type, a decimal whose fraction is zero, any other type by its canonical
    string. Binary values are bytes, never literals."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    kind = arr.type
    if pa.types.is_integer(kind):
        return _validity(arr)
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or not len(arr):
        return np.zeros(len(arr), np.bool_)
    if pa.types.is_decimal128(kind) and kind.scale == 0:
        return _validity(arr)
    text = canonical(arr)
    return pc.fill_null(pc.match_substring_regex(text, INTEGER_LITERAL), False).to_numpy(zero_copy_only=False)


def _array_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    arr = canonical(arr)
    n = len(arr)
    if n == 0:
        return np.zeros(1, np.int64), np.zeros(0, np.uint8), np.zeros(0, np.bool_)
    _, off_buf, data_buf = arr.buffers()
    off_dtype = np.int64 if arr.type in _LARGE_OFFSETS else np.int32
    offsets = np.frombuffer(off_buf, dtype=off_dtype, count=arr.offset + n + 1)[arr.offset :]
    data = np.zeros(0, np.uint8) if data_buf is None else np.frombuffer(data_buf, dtype=np.uint8)
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else np.ones(n, dtype=np.bool_)
    return offsets.astype(np.int64, copy=False), data, valid


def _chunks(values: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return list(values.chunks) if isinstance(values, pa.ChunkedArray) else [values]


def string_buffers(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(offsets, data, valid)`` of a string array, one entry per row (nulls kept), for numba kernels.

    ``offsets`` is int64 of length n + 1 and already shifted by the array's slice offset, ``data`` the
    UTF-8 bytes (uint8, a zero-copy view of the Arrow buffer), ``valid`` the non-null mask: row i is
    ``data[offsets[i]:offsets[i + 1]]``. A chunked array with several chunks is combined first (a copy);
    other types are turned into their canonical form first.
    """
    chunks = _chunks(values)
    if len(chunks) == 1:
        return _array_buffers(chunks[0])
    return _array_buffers(values.combine_chunks())


@njit(cache=True, inline="always")
def _put_digits(buffer: np.ndarray, pos: int, magnitude: np.uint64, min_digits: int) -> int:
    """Write ``magnitude`` in decimal at ``buffer[pos:]``, left-padded with zeros to ``min_digits``."""
    n_digits = 1
    probe = magnitude // np.uint64(10)
    while probe > 0:
        n_digits += 1
        probe //= np.uint64(10)
    n_digits = max(n_digits, min_digits)
    for i in range(n_digits - 1, -1, -1):
        buffer[pos + i] = 48 + np.uint8(magnitude % np.uint64(10))
        magnitude //= np.uint64(10)
    return pos + n_digits


@njit(cache=True, inline="always")
def _magnitude(value: np.int64) -> np.uint64:
    # |value| without overflow at the int64 minimum
    return np.uint64(-(value + 1)) + np.uint64(1) if value < 0 else np.uint64(value)


@njit(cache=True, nogil=True)
def _hash_scaled_integers(values: np.ndarray, valid: np.ndarray, scale: int) -> np.ndarray:
    """XXH64 of the canonical form of value / 10^scale: integers (scale 0) and decimals whose unscaled
    value fits in 64 bits, formatted like Arrow's cast with the fraction's trailing zeros removed."""
    out = np.zeros(values.shape[0], dtype=np.uint64)
    buffer = np.empty(64, dtype=np.uint8)
    for r in range(values.shape[0]):
        if not valid[r]:
            continue
        value = values[r]
        pos = 0
        if value < 0:
            buffer[0] = 45  # '-'
            pos = 1
        end = _put_digits(buffer, pos, _magnitude(value), scale + 1)
        if scale > 0:
            point = end - scale
            last = end
            while last > point and buffer[last - 1] == 48:
                last -= 1
            if last > point:  # a fraction remains: shift it right by one to make room for the point
                for i in range(last - 1, point - 1, -1):
                    buffer[i + 1] = buffer[i]
                buffer[point] = 46  # '.'
                end = last + 1
            else:
                end = point
        out[r] = xxh64_bytes(buffer, 0, end)
    return out


@njit(cache=True, nogil=True)
def _hash_dates(days: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """XXH64 of ``YYYY-MM-DD`` for days since 1970-01-01 (years 0..9999), by Hinnant's civil_from_days."""
    out = np.zeros(days.shape[0], dtype=np.uint64)
    buffer = np.empty(10, dtype=np.uint8)
    buffer[4] = 45
    buffer[7] = 45
    for r in range(days.shape[0]):
        if not valid[r]:
            continue
        z = np.int64(days[r]) + 719468
        era = (z if z >= 0 else z - 146096) // 146097
        doe = z - era * 146097
        yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
        doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
        mp = (5 * doy + 2) // 153
        day = doy - (153 * mp + 2) // 5 + 1
        month = mp + 3 if mp < 10 else mp - 9
        year = yoe + era * 400 + (1 if month <= 2 else 0)
        _put_digits(buffer, 0, np.uint64(year), 4)
        _put_digits(buffer, 5, np.uint64(month), 2)
        _put_digits(buffer, 8, np.uint64(day), 2)
        out[r] = xxh64_bytes(buffer, 0, 10)
    return out


_MIN_DAY, _MAX_DAY = -719528, 2932896  # 0000-01-01 and 9999-12-31


def _validity(arr: pa.Array) -> np.ndarray:
    return arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else np.ones(len(arr), np.bool_)


def _decimal_unscaled(arr: pa.Array) -> np.ndarray | None:
    """The unscaled values of a decimal128 array as int64, or None when one does not fit in 64 bits."""
    words = np.frombuffer(arr.buffers()[1], dtype="<i8").reshape(-1, 2)[arr.offset : arr.offset + len(arr)]
    low, high = words[:, 0], words[:, 1]
    return low.copy() if np.array_equal(high, low >> 63) else None


def _hash_chunk(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Hashes of one chunk's canonical forms; integers, dates and 64-bit decimals are formatted inside the
    kernel (no string array is built), every other type goes through ``canonical``."""
    kind = arr.type
    if len(arr) and (
        pa.types.is_signed_integer(kind) or (pa.types.is_unsigned_integer(kind) and kind.bit_width < 64)
    ):
        valid = _validity(arr)
        values = arr.cast(pa.int64()).fill_null(0).to_numpy()
        return _hash_scaled_integers(values, valid, 0), valid
    if len(arr) and pa.types.is_date32(kind):
        valid = _validity(arr)
        days = arr.view(pa.int32()).fill_null(0).to_numpy().astype(np.int64)
        if days.min() >= _MIN_DAY and days.max() <= _MAX_DAY:
            return _hash_dates(days, valid), valid
    if len(arr) and pa.types.is_decimal128(kind) and kind.scale >= 0:
        unscaled = _decimal_unscaled(arr)
        if unscaled is not None:
            valid = _validity(arr)
            return _hash_scaled_integers(unscaled, valid, kind.scale), valid
    offsets, data, valid = _array_buffers(arr)
    return _hash_spans(offsets, data, valid), valid


def hash_strings(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """XXH64 (seed 0) of every value's canonical form (strings: their UTF-8 bytes, binary: their bytes),
    chunk by chunk, without copying string data.

    Returns ``(hashes uint64, valid bool)``, both of ``len(values)``; null positions have ``valid`` False
    and hash 0 and must be dropped by the caller (``hashes[valid]``).
    """
    hashes, valids = [np.zeros(0, np.uint64)], [np.zeros(0, np.bool_)]
    for chunk in _chunks(values):
        chunk_hashes, valid = _hash_chunk(chunk)
        hashes.append(chunk_hashes)
        valids.append(valid)
    return np.concatenate(hashes), np.concatenate(valids)


@njit(cache=True, nogil=True)
def _hash_lanes(lanes: np.ndarray, valid: np.ndarray) -> np.ndarray:
    # XXH64 (seed 0) of each row's c 8-byte little-endian lanes, lanes[:, row]: xxh64_bytes's steps on input
    # whose length is a multiple of 8, with the lanes read as words instead of bytes
    c, n = lanes.shape
    length = np.uint64(8 * c)
    out = np.zeros(n, dtype=np.uint64)
    for r in range(n):
        if not valid[r]:
            continue
        i = 0
        if c >= 4:
            v1 = _P1 + _P2
            v2 = _P2
            v3 = np.uint64(0)
            v4 = np.uint64(0) - _P1
            while i + 4 <= c:
                v1 = _round(v1, lanes[i, r])
                v2 = _round(v2, lanes[i + 1, r])
                v3 = _round(v3, lanes[i + 2, r])
                v4 = _round(v4, lanes[i + 3, r])
                i += 4
            h = _converge(v1, v2, v3, v4)
        else:
            h = _P5
        h += length
        while i < c:
            h = _lane_step(h, lanes[i, r])
            i += 1
        out[r] = _avalanche(h)
    return out


_SPARK_SEED = np.uint64(42)  # the seed of Spark's xxhash64


@njit(cache=True, nogil=True)
def _spark_xxhash64_pairs(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    # XXH64.hashLong(v, seed): the 8-byte input's steps of xxh64_bytes with the seed in place of 0
    out = np.empty(len(first), dtype=np.uint64)
    for r in range(len(first)):
        h = _avalanche(_lane_step(_SPARK_SEED + _P5 + np.uint64(8), first[r]))
        out[r] = _avalanche(_lane_step(h + _P5 + np.uint64(8), second[r]))
    return out


def spark_xxhash64(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Spark's ``xxhash64(a, b)`` of two bigint columns without nulls, as signed 64-bit integers: XXH64 of
    each value's 8 little-endian bytes, the first seeded with 42 and the second with the first's hash (Spark's
    ``XxHash64`` folds its children through ``XXH64.hashLong``)."""
    lanes = [np.ascontiguousarray(values, dtype=np.int64).view(np.uint64) for values in (first, second)]
    return _spark_xxhash64_pairs(*lanes).view(np.int64)


def combine_hashes(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The tuple hashes of rows from their columns' ``hash_strings`` results (``hash_tuples``), so that a
    caller holding each column's hashes combines them for any column tuple without hashing values again."""
    if not parts:
        raise ValueError("a tuple hash needs at least one column")
    n = len(parts[0][0])
    if any(len(hashes) != n for hashes, _ in parts):
        raise ValueError("all columns must have the same length")
    valid = np.logical_and.reduce([column_valid for _, column_valid in parts])
    lanes = np.stack([np.asarray(hashes, dtype=np.uint64) for hashes, _ in parts])
    return _hash_lanes(lanes, valid), valid


def hash_tuples(columns: list[pa.Array | pa.ChunkedArray]) -> tuple[np.ndarray, np.ndarray]:
    """XXH64 (seed 0) of each row's tuple of values, for multi-column sketches and tuple equality.

    The tuple (v1, ..., vc) is encoded as the concatenation of the values' own hashes (``hash_strings``,
    over their canonical forms), each as 8 little-endian bytes. The encoding has a fixed width per column,
    so tuples that only split the same characters differently (("ab", "c") and ("a", "bc")) differ, unlike
    the field-separator concatenation of Zhang et al. App. C; and a column hashed once serves every tuple
    it is part of (``combine_hashes``). A row with a null in any column is not a tuple of values: ``valid``
    is False there and its hash is 0. All columns must have the same length.
    """
    if not columns:
        raise ValueError("hash_tuples needs at least one column")
    return combine_hashes([hash_strings(column) for column in columns])


class ColumnHashes:
    """``hash_strings`` of the columns of one table of rows, each computed when first asked for: the
    components that read one slice of a batch in the scan (the HLL counters and the value sets) hash each
    of its cells once between them. Memory: 9 bytes per cell of the slice, which the scan bounds."""

    def __init__(self, rows: pa.Table) -> None:
        self._rows = rows
        self._hashes: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def __getitem__(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """(hashes, valid) of ``column``, as ``hash_strings`` returns them."""
        if column not in self._hashes:
            self._hashes[column] = hash_strings(self._rows[column])
        return self._hashes[column]
