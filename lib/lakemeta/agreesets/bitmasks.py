"""Attribute masks: agree-sets as multi-word bitsets over attribute positions.

DynASt §2 stores an agree-set as a bitset with one bit per attribute of R. Tables may have up to thousands of
columns, so a mask is a row of ``attribute_words(n)`` uint64 words; attribute ``a`` is bit ``a % 64`` of word
``a // 64``. This module holds the conversions between masks, attribute index lists and column names, and the
word-level primitives (popcount, trailing zeros) that every kernel of the package uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numba import njit

WORD_BITS = 64


def attribute_words(n_attributes: int) -> int:
    """Number of uint64 words of a mask over ``n_attributes`` attributes (at least one)."""
    return max(1, (n_attributes + WORD_BITS - 1) // WORD_BITS)


def masks_from_indices(index_lists: Iterable[Iterable[int]], n_attributes: int) -> np.ndarray:
    """One mask row per list of attribute indices."""
    lists = [list(indices) for indices in index_lists]
    masks = np.zeros((len(lists), attribute_words(n_attributes)), dtype=np.uint64)
    for row, indices in enumerate(lists):
        for attribute in indices:
            if not 0 <= attribute < n_attributes:
                raise ValueError(f"attribute index {attribute} outside 0..{n_attributes - 1}")
            masks[row, attribute // WORD_BITS] |= np.uint64(1) << np.uint64(attribute % WORD_BITS)
    return masks


def mask_to_indices(mask: np.ndarray) -> list[int]:
    """Ascending attribute indices set in one mask row."""
    bits = np.unpackbits(np.ascontiguousarray(mask, dtype="<u8").view(np.uint8), bitorder="little")
    return np.flatnonzero(bits).tolist()


def masks_to_names(masks: np.ndarray, column_names: Sequence[str]) -> list[list[str]]:
    """Each mask row as the sorted list of its column names (the catalog's ``array<string>, sorted``)."""
    names = list(column_names)
    return [sorted(names[a] for a in mask_to_indices(row)) for row in np.atleast_2d(masks)]


def names_to_mask(names: Iterable[str], column_names: Sequence[str]) -> np.ndarray:
    """The mask of a set of column names."""
    position = {name: index for index, name in enumerate(column_names)}
    return masks_from_indices([[position[name] for name in names]], len(position))[0]


@njit(cache=True, inline="always")
def popcount64(x: np.uint64) -> np.int64:
    """Number of set bits of one word (SWAR)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True, inline="always")
def lowest_bit_index(x: np.uint64) -> np.int64:
    """Index of the lowest set bit of a non-zero word."""
    return popcount64((x & (~x + np.uint64(1))) - np.uint64(1))
