"""Small vectorised helpers shared by the kernels of several packages: on sorted numpy arrays, and on
64-bit words kept as Arrow binary rows."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import numpy as np
import pyarrow as pa


def run_starts(ordered: np.ndarray) -> np.ndarray:
    """For a sorted array, True at the first element of each run of equal values."""
    starts = np.ones(len(ordered), dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    return starts


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` by a plain sort: several times faster for millions of 64-bit hashes in numpy 2."""
    ordered = np.sort(values)
    return ordered[run_starts(ordered)]


def one_array(values: pa.ChunkedArray) -> pa.Array:
    """The values as one array: the only chunk as it is (``combine_chunks`` copies even that), the chunks
    concatenated otherwise."""
    if values.num_chunks == 1:
        return values.chunk(0)
    return values.combine_chunks() if values.num_chunks else pa.array([], values.type)


def uint64_rows(values: pa.BinaryArray | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Binary rows of little-endian uint64 words (hashes, signature words) as (offsets, words, stored):
    row i's words are ``words[offsets[i]:offsets[i + 1]]``; ``stored`` is False where the row is null.
    Read on the array's buffers, with no loop per row; ``words`` is a view of the array's data
    (Arrow aligns its buffers, and the rows' words start at multiples of 8 bytes), not a copy."""
    if isinstance(values, pa.ChunkedArray):
        values = one_array(values)
    n = len(values)
    stored = values.is_valid().to_numpy(zero_copy_only=False).astype(bool)
    byte_offsets = np.frombuffer(values.buffers()[1], np.int32, n + 1, values.offset * 4).astype(np.int64)
    data = values.buffers()[2]
    raw = np.zeros(0, np.uint8) if data is None else np.frombuffer(data, np.uint8)
    words = raw[byte_offsets[0] : byte_offsets[-1]].view("<u8").astype(np.uint64, copy=False)
    return (byte_offsets - byte_offsets[0]) // 8, words, stored


def expand_ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(starts[i], stops[i])`` over i, as int64: the positions of the ranges'
    elements in order, for one gather with no loop per range. A range with ``stops[i] <= starts[i]`` adds
    nothing, as ``arange`` gives nothing for it; no ranges give an empty array."""
    starts = np.asarray(starts, np.int64)
    lengths = np.maximum(np.asarray(stops, np.int64) - starts, 0)
    ends = np.cumsum(lengths)
    # element j of the result is its range's start plus j's place within that range
    first = np.repeat(starts - (ends - lengths), lengths)
    return first + np.arange(len(first), dtype=np.int64)


def take_rows(offsets: np.ndarray, words: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``at`` of rows kept as (offsets, words) (:func:`uint64_rows`), as (offsets, words) of their
    own: one gather, with no loop per row."""
    starts, stops = offsets[:-1][at], offsets[1:][at]
    taken_offsets = np.zeros(len(at) + 1, np.int64)
    np.cumsum(stops - starts, out=taken_offsets[1:])
    return taken_offsets, words[expand_ranges(starts, stops)]


def binary_rows(words: np.ndarray, bounds: np.ndarray, kept: np.ndarray) -> pa.BinaryArray:
    """Binary rows, the inverse of :func:`uint64_rows`: row i holds ``words[bounds[i]:bounds[i + 1]]``
    where ``kept[i]``, and is null elsewhere. Built on the words' bytes, with no loop per row."""
    sizes = np.where(kept, np.diff(bounds), 0)
    offsets = np.zeros(len(kept) + 1, np.int32)
    np.cumsum(sizes * 8, out=offsets[1:])
    in_kept = np.repeat(kept, np.diff(bounds))
    data = np.ascontiguousarray(words[in_kept], dtype="<u8")
    validity = pa.array(kept, pa.bool_()).buffers()[1]
    return pa.BinaryArray.from_buffers(
        pa.binary(),
        len(kept),
        [validity, pa.py_buffer(offsets), pa.py_buffer(data)],
        null_count=int(len(kept) - kept.sum()),
    )


def shared_codes(*columns: pa.Array | pa.ChunkedArray) -> tuple[list[np.ndarray], pa.Array]:
    """The values of each column as integer codes into one dictionary of them all (equal values, equal
    codes, in any column), and the dictionary: what relates rows across columns (a candidate and its
    reverse, a pair of tables) compared as integers."""
    chunks = [
        chunk
        for column in columns
        for chunk in (column.chunks if isinstance(column, pa.ChunkedArray) else [column])
    ]
    encoded = pa.chunked_array(chunks, columns[0].type if chunks else pa.string()).dictionary_encode()
    codes = np.concatenate(
        [c.indices.to_numpy(zero_copy_only=False) for c in encoded.chunks] or [np.array([], np.int32)]
    )
    dictionary = encoded.chunk(0).dictionary if encoded.num_chunks else pa.array([], pa.string())
    bounds = np.cumsum([0, *(len(column) for column in columns)])
    return [codes[start:stop].astype(np.int64) for start, stop in pairwise(bounds)], dictionary


def mapped(
    values: pa.Array | pa.ChunkedArray, function: Callable[[object], object], type_: pa.DataType
) -> pa.Array:
    """``function`` of each value, called once per distinct value (names, paths: few distinct values in
    many rows)."""
    [codes], dictionary = shared_codes(values)
    return pa.array([function(value) for value in dictionary.to_pylist()], type_).take(pa.array(codes))


def positions(keys: np.ndarray, among: np.ndarray) -> np.ndarray:
    """For each key, the position of an equal value in ``among`` (its first, for repeated values), or -1."""
    if not len(among):
        return np.full(len(keys), -1)
    order = np.argsort(among, kind="stable")
    at = np.minimum(np.searchsorted(among[order], keys), len(among) - 1)
    return np.where(among[order][at] == keys, order[at], -1)
