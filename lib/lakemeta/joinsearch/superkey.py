"""Super keys: the OR of the hashes of a row's values (MATE §4, §5.1) and the row filter of §6.3.

A super key is a fixed-size bit array stored with every posting-list item of its row. The query side ORs
the hashes of the key values of a query row; a candidate row can hold that key tuple only if every bit of
the query super key is set in the row's super key, i.e. ``query | row == row`` (Alg. 1, line 18). Because
the same deterministic hash of the same value is OR-ed into both, a joinable row always passes (§6.3,
Lemma): the filter has false positives, never false negatives.

Super keys are uint64 arrays of shape (n, n_words). Bit p counted from the left of the bit array is bit
``63 - p % 64`` of word ``p // 64`` (most significant bit first), for every hasher: XASH (``xash``) and the
Bloom baseline (``lakemeta.reference.bloom_superkey``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numba
import numpy as np
import pyarrow as pa


class SuperKeyHasher(Protocol):
    """A value hash that super keys are OR-ed from (XASH, or a Bloom filter for comparison)."""

    @property
    def n_words(self) -> int: ...

    def hash_values(self, values: pa.Array | pa.ChunkedArray) -> np.ndarray: ...


@numba.njit(cache=True, inline="always")
def set_bit_from_left(out: np.ndarray, row: int, bit_from_left: int) -> None:
    """Set bit ``bit_from_left`` (0 = left-most) of hash ``out[row]`` in the layout of the module doc."""
    out[row, bit_from_left >> 6] |= np.uint64(1) << np.uint64(63 - (bit_from_left & 63))


def row_super_keys(columns: Sequence[pa.Array | pa.ChunkedArray], hasher: SuperKeyHasher) -> np.ndarray:
    """Super key of each row of a table given column by column (equal lengths): OR of its values' hashes."""
    if not columns:
        raise ValueError("a super key needs at least one column")
    keys = hasher.hash_values(columns[0])
    for column in columns[1:]:
        keys |= hasher.hash_values(column)
    return keys


def group_super_keys(value_hashes: np.ndarray, group_ids: np.ndarray, n_groups: int) -> np.ndarray:
    """OR of ``value_hashes`` per group (e.g. cells in long format -> rows): shape (n_groups, n_words)."""
    keys = np.zeros((n_groups, value_hashes.shape[1]), np.uint64)
    np.bitwise_or.at(keys, np.asarray(group_ids, dtype=np.int64), value_hashes)
    return keys


def covers(row_keys: np.ndarray, query_keys: np.ndarray) -> np.ndarray:
    """Row filter of Alg. 1, line 18, pairwise: ``query | row == row`` for every word (bool per pair)."""
    return np.all((query_keys | row_keys) == row_keys, axis=-1)


def super_keys_to_binary(keys: np.ndarray) -> pa.Array:
    """Super keys as a fixed-size binary array (8·n_words bytes each, big-endian words: the bit array
    reads left to right in byte order), the form stored in the posting-list state."""
    big_endian = np.ascontiguousarray(keys, dtype=">u8")
    width = 8 * big_endian.shape[1]
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), big_endian.shape[0], [None, pa.py_buffer(big_endian.tobytes())]
    )


def super_keys_from_binary(keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Inverse of :func:`super_keys_to_binary`: uint64 array of shape (n, n_words)."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    width = keys.type.byte_width
    if keys.null_count or width % 8:
        raise ValueError("super keys must be non-null fixed-size binary of 8·n_words bytes")
    raw = np.frombuffer(keys.buffers()[1], dtype=np.uint8)
    raw = raw[keys.offset * width : (keys.offset + len(keys)) * width]
    return raw.view(">u8").astype(np.uint64).reshape(len(keys), width // 8)
