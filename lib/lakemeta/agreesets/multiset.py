"""The relation evidence multiset ES^m(r): agree-set -> number of tuple pairs (DynASt Def. 3.1, Property 1).

State layout (the "hash table that specifies for each agree-set the number of times it occurs", §6):
entries are appended and never move, so an entry id is a stable handle the AStree can point to; an
open-addressing index (linear probing, power-of-two slots) maps an agree-set mask to its entry. An entry whose
count falls to zero stays in place (the lazy strategy of §7.5) and is invisible in every export; it is dropped
when the multiset is serialised and read back. Empty agree-sets are never stored (§3: not informative).

The same structure holds a batch delta Δ+ or Δ- while the evidence kernels fill it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from numba import njit

from lakemeta.agreesets.bitmasks import attribute_words, masks_from_indices, masks_to_names

_EMPTY_SLOT = -1


@njit(cache=True, inline="always")
def hash_key(src: np.ndarray, offset: int, n_words: int) -> np.uint64:
    """Hash of the mask ``src[offset:offset+n_words]``."""
    h = np.uint64(0x9E3779B97F4A7C15)
    for w in range(n_words):
        h ^= src[offset + w]
        h *= np.uint64(0xFF51AFD7ED558CCD)
        h ^= h >> np.uint64(33)
    return h


@njit(cache=True, inline="always")
def same_key(keys: np.ndarray, entry: int, src: np.ndarray, offset: int, n_words: int) -> bool:
    """Whether entry ``entry`` holds the mask ``src[offset:offset+n_words]``."""
    base = entry * n_words
    for w in range(n_words):  # noqa: SIM110 - an explicit loop compiles to a tight numba loop
        if keys[base + w] != src[offset + w]:
            return False
    return True


@njit(cache=True)
def find_entry(keys: np.ndarray, slots: np.ndarray, src: np.ndarray, offset: int, n_words: int) -> int:
    """Entry id of the mask ``src[offset:offset+n_words]``, or -1."""
    mask = np.uint64(slots.shape[0] - 1)
    i = hash_key(src, offset, n_words) & mask
    while True:
        entry = slots[i]
        if entry == _EMPTY_SLOT:
            return -1
        if same_key(keys, entry, src, offset, n_words):
            return entry
        i = (i + np.uint64(1)) & mask


@njit(cache=True, inline="always")
def add_count(
    keys: np.ndarray,
    counts: np.ndarray,
    slots: np.ndarray,
    size: np.ndarray,
    src: np.ndarray,
    offset: int,
    n_words: int,
    delta: int,
) -> int:
    """Add ``delta`` to the count of a mask, inserting it if new; capacity must have been reserved."""
    mask = np.uint64(slots.shape[0] - 1)
    i = hash_key(src, offset, n_words) & mask
    while True:
        entry = slots[i]
        if entry == _EMPTY_SLOT:
            entry = size[0]
            size[0] += 1
            for w in range(n_words):
                keys[entry * n_words + w] = src[offset + w]
            counts[entry] = delta
            slots[i] = entry
            return entry
        if same_key(keys, entry, src, offset, n_words):
            counts[entry] += delta
            return entry
        i = (i + np.uint64(1)) & mask


@njit(cache=True)
def reserve(
    keys: np.ndarray, counts: np.ndarray, slots: np.ndarray, size: np.ndarray, extra: int, n_words: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Grow the arrays so ``extra`` more entries fit with the index at most half full.

    Growth doubles, and leaves a quarter of headroom after a bulk load, so that the batches that follow do not
    copy and rehash the whole table at once."""
    need = size[0] + extra
    if need <= counts.shape[0] and 2 * need <= slots.shape[0]:
        return keys, counts, slots
    capacity = max(need + need // 4, 2 * counts.shape[0])
    new_keys = np.zeros(capacity * n_words, dtype=np.uint64)
    new_keys[: size[0] * n_words] = keys[: size[0] * n_words]
    new_counts = np.zeros(capacity, dtype=np.int64)
    new_counts[: size[0]] = counts[: size[0]]
    n_slots = 1
    while n_slots < 2 * capacity:
        n_slots *= 2
    new_slots = np.full(n_slots, _EMPTY_SLOT, dtype=np.int64)
    slot_mask = np.uint64(n_slots - 1)
    for entry in range(size[0]):
        i = hash_key(new_keys, entry * n_words, n_words) & slot_mask
        while new_slots[i] != _EMPTY_SLOT:
            i = (i + np.uint64(1)) & slot_mask
        new_slots[i] = entry
    return new_keys, new_counts, new_slots


@njit(cache=True)
def _merge_into(
    keys: np.ndarray,
    counts: np.ndarray,
    slots: np.ndarray,
    size: np.ndarray,
    src_keys: np.ndarray,
    src_counts: np.ndarray,
    src_size: int,
    n_words: int,
    sign: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    keys, counts, slots = reserve(keys, counts, slots, size, src_size, n_words)
    appeared = np.empty(src_size, dtype=np.int64)
    vanished = np.empty(src_size, dtype=np.int64)
    n_appeared = 0
    n_vanished = 0
    for e in range(src_size):
        delta = src_counts[e]
        if delta == 0:
            continue
        entry = add_count(keys, counts, slots, size, src_keys, e * n_words, n_words, 0)
        before = counts[entry]
        after = before + sign * delta
        if after < 0:
            raise ValueError("multiset subtraction of an agree-set count the multiset does not hold")
        counts[entry] = after
        if before == 0 and after > 0:
            appeared[n_appeared] = entry
            n_appeared += 1
        elif before > 0 and after == 0:
            vanished[n_vanished] = entry
            n_vanished += 1
    return keys, counts, slots, appeared[:n_appeared], vanished[:n_vanished]


def _sorted_difference(entries: np.ndarray, removed: np.ndarray) -> np.ndarray:
    """Sorted entries not in ``removed`` (both hold distinct entry ids): ``np.setdiff1d`` without its
    look-up table over the whole id range, which costs more than the rest of an update on large multisets."""
    return np.sort(entries[~np.isin(entries, removed, assume_unique=True, kind="sort")])


@dataclass(frozen=True)
class MultisetChange:
    """Entries whose support status changed in an update: count 0 -> positive, positive -> 0."""

    appeared: np.ndarray
    vanished: np.ndarray


class AgreeSetMultiset:
    """A multiset of non-empty agree-sets over ``n_attributes`` attributes, with counts."""

    def __init__(self, n_attributes: int, initial_capacity: int = 16) -> None:
        self.n_attributes = n_attributes
        self.attr_words = attribute_words(n_attributes)
        self.keys = np.zeros(0, dtype=np.uint64)
        self.counts = np.zeros(0, dtype=np.int64)
        self.slots = np.full(1, _EMPTY_SLOT, dtype=np.int64)
        self.size = np.zeros(1, dtype=np.int64)
        self.reserve(initial_capacity)

    def reserve(self, extra: int) -> None:
        """Make room for ``extra`` more distinct agree-sets."""
        self.keys, self.counts, self.slots = reserve(
            self.keys, self.counts, self.slots, self.size, extra, self.attr_words
        )

    @classmethod
    def from_arrays(cls, n_attributes: int, masks: np.ndarray, counts: np.ndarray) -> AgreeSetMultiset:
        """Build from mask rows and their counts (repeated masks add up; empty masks are dropped)."""
        multiset = cls(n_attributes)
        delta = cls(n_attributes, initial_capacity=len(counts))
        masks = np.ascontiguousarray(masks, dtype=np.uint64).reshape(len(counts), multiset.attr_words)
        counts = np.asarray(counts, dtype=np.int64)
        if (counts < 0).any():
            raise ValueError("agree-set counts must be non-negative")
        keep = masks.any(axis=1) & (counts > 0)
        masks, counts = masks[keep], counts[keep]
        flat = masks.reshape(-1)
        for row in range(len(counts)):
            add_count(
                delta.keys,
                delta.counts,
                delta.slots,
                delta.size,
                flat,
                row * multiset.attr_words,
                multiset.attr_words,
                int(counts[row]),
            )
        multiset.add(delta, +1)
        return multiset

    @property
    def n_entries(self) -> int:
        """Number of entry slots used (including entries whose count fell to zero)."""
        return int(self.size[0])

    def entry_masks(self) -> np.ndarray:
        """All entries' masks, indexed by entry id (zero-count entries included)."""
        return self.keys[: self.n_entries * self.attr_words].reshape(self.n_entries, self.attr_words)

    def entry_counts(self) -> np.ndarray:
        """All entries' counts, indexed by entry id."""
        return self.counts[: self.n_entries]

    def masks_and_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """The support ES(r) = supp(ES^m(r)) as mask rows, with each agree-set's count (Def. 3.1)."""
        counts = self.entry_counts()
        held = counts > 0
        return self.entry_masks()[held].copy(), counts[held].copy()

    def count(self, mask: np.ndarray) -> int:
        """occ(ES^m(r), mask): the number of tuple pairs whose agree-set is exactly ``mask``."""
        key = np.ascontiguousarray(mask, dtype=np.uint64).reshape(self.attr_words)
        entry = find_entry(self.keys, self.slots, key, 0, self.attr_words)
        return 0 if entry < 0 else int(self.counts[entry])

    def total(self) -> int:
        """Number of tuple pairs with a non-empty agree-set."""
        return int(self.entry_counts().sum())

    def __len__(self) -> int:
        return int((self.entry_counts() > 0).sum())

    def as_dict(self) -> dict[tuple[int, ...], int]:
        """{tuple of mask words: count}: a plain view for comparisons and debugging."""
        masks, counts = self.masks_and_counts()
        return {tuple(int(w) for w in row): int(c) for row, c in zip(masks, counts, strict=True)}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AgreeSetMultiset):
            return NotImplemented
        return self.n_attributes == other.n_attributes and self.as_dict() == other.as_dict()

    __hash__ = None  # mutable

    def add(self, other: AgreeSetMultiset, sign: int) -> MultisetChange:
        """Multiset union (sign=+1) or subtraction (sign=-1) of ``other`` in place (Property 1).

        Subtraction is exact: Δ- is a sub-multiset of ES^m(r^curr) (appendix, proof of Property 1), so a count
        going below zero means the caller broke that precondition and raises instead of clamping to 0.
        """
        if other.n_attributes != self.n_attributes:
            raise ValueError("multisets over different schemas")
        self.keys, self.counts, self.slots, appeared, vanished = _merge_into(
            self.keys,
            self.counts,
            self.slots,
            self.size,
            other.keys,
            other.counts,
            other.n_entries,
            self.attr_words,
            sign,
        )
        return MultisetChange(appeared=appeared, vanished=vanished)

    def update(self, delta_plus: AgreeSetMultiset, delta_minus: AgreeSetMultiset) -> MultisetChange:
        """ES^m(r^next) = ES^m(r^curr) ⊖ Δ- ⊕ Δ+ (Property 1; deletions first, §3)."""
        removed = self.add(delta_minus, -1)
        added = self.add(delta_plus, +1)
        appeared = _sorted_difference(added.appeared, removed.vanished)
        vanished = _sorted_difference(removed.vanished, added.appeared)
        return MultisetChange(appeared=appeared, vanished=vanished)

    def to_arrow(self, column_names: Sequence[str]) -> pa.Table:
        """The state table layout ``agree_set (list<string>, sorted), count`` of the catalog."""
        masks, counts = self.masks_and_counts()
        return pa.table(
            {
                "agree_set": pa.array(masks_to_names(masks, column_names), pa.list_(pa.string())),
                "count": pa.array(counts, pa.int64()),
            }
        )

    @classmethod
    def from_arrow(cls, table: pa.Table, column_names: Sequence[str]) -> AgreeSetMultiset:
        """Inverse of :meth:`to_arrow`."""
        position = {name: index for index, name in enumerate(column_names)}
        sets = table.column("agree_set").to_pylist()
        masks = masks_from_indices(([position[name] for name in names] for names in sets), len(position))
        return cls.from_arrays(len(position), masks, table.column("count").to_numpy())
