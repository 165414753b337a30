"""The AStree: a prefix tree over the agree-sets that hold, with specialisation search (DynASt §6, Fig. 3).

An agree-set is the path of its attributes in ascending order; each edge is labelled by an attribute and
siblings are kept sorted by attribute. A node carries a flag (the agree-set holds) and the id of its entry in
the multiset's hash table, where the count lives: counts change on almost every batch, the tree only when an
agree-set appears or vanishes (§6, last paragraph). A vanished agree-set's node stays, unflagged (§7.5).

``specialisations(required, excluded)`` returns the flagged agree-sets S with required ⊆ S and S ∩ excluded
= ∅, in one pass of the tree: a branch is cut as soon as its next attribute passes the smallest required
attribute still missing (paths are ascending, so it can no longer be added) or is excluded. For a candidate
FD X -> A the agree-sets violating it are exactly the specialisations of X that exclude A (§6).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from lakemeta.agreesets.bitmasks import lowest_bit_index
from lakemeta.agreesets.multiset import AgreeSetMultiset, MultisetChange

_NONE = -1
_ROOT = 0


@njit(cache=True)
def _insert_paths(
    attr: np.ndarray,
    first_child: np.ndarray,
    next_sibling: np.ndarray,
    entry: np.ndarray,
    flagged: np.ndarray,
    n_nodes: np.ndarray,
    entry_node: np.ndarray,
    masks: np.ndarray,
    entries: np.ndarray,
) -> None:
    for i in range(masks.shape[0]):
        node = _ROOT
        for w in range(masks.shape[1]):
            x = masks[i, w]
            while x != 0:
                a = w * 64 + lowest_bit_index(x)
                x &= x - np.uint64(1)
                previous = _NONE
                child = first_child[node]
                while child != _NONE and attr[child] < a:
                    previous = child
                    child = next_sibling[child]
                if child == _NONE or attr[child] != a:
                    new = n_nodes[0]
                    n_nodes[0] += 1
                    attr[new] = a
                    first_child[new] = _NONE
                    entry[new] = _NONE
                    flagged[new] = False
                    next_sibling[new] = child
                    if previous == _NONE:
                        first_child[node] = new
                    else:
                        next_sibling[previous] = new
                    child = new
                node = child
        entry[node] = entries[i]
        flagged[node] = True
        entry_node[entries[i]] = node


@njit(cache=True)
def _search(
    attr: np.ndarray,
    first_child: np.ndarray,
    next_sibling: np.ndarray,
    entry: np.ndarray,
    flagged: np.ndarray,
    required: np.ndarray,
    excluded: np.ndarray,
    stack_node: np.ndarray,
    stack_matched: np.ndarray,
    out: np.ndarray,
) -> int:
    """Entries of flagged nodes whose agree-set ⊇ required and misses every excluded attribute."""
    n_required = 0
    for w in range(required.shape[0]):
        x = required[w]
        while x != 0:
            stack_matched[n_required] = w * 64 + lowest_bit_index(x)  # scratch: required attrs in order
            x &= x - np.uint64(1)
            n_required += 1
    required_attrs = stack_matched[:n_required].copy()
    n_out = 0
    top = 0
    stack_node[0] = _ROOT
    stack_matched[0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack_node[top]
        matched = stack_matched[top]
        if flagged[node] and matched == n_required:
            out[n_out] = entry[node]
            n_out += 1
        next_required = required_attrs[matched] if matched < n_required else 1 << 62
        child = first_child[node]
        while child != _NONE:
            a = attr[child]
            if a > next_required:
                break
            if (excluded[a >> 6] >> np.uint64(a & 63)) & np.uint64(1) == 0:
                stack_node[top] = child
                stack_matched[top] = matched + (1 if a == next_required else 0)
                top += 1
            child = next_sibling[child]
    return n_out


@njit(cache=True)
def _specialisation_counts(
    attr: np.ndarray,
    first_child: np.ndarray,
    next_sibling: np.ndarray,
    entry: np.ndarray,
    flagged: np.ndarray,
    n_nodes: int,
    required: np.ndarray,
    excluded: np.ndarray,
    entry_counts: np.ndarray,
) -> np.ndarray:
    stack_node = np.empty(n_nodes + 1, dtype=np.int64)
    stack_matched = np.empty(n_nodes + required.shape[1] * 64 + 1, dtype=np.int64)
    out = np.empty(n_nodes + 1, dtype=np.int64)
    totals = np.zeros(required.shape[0], dtype=np.int64)
    for q in range(required.shape[0]):
        n_out = _search(
            attr,
            first_child,
            next_sibling,
            entry,
            flagged,
            required[q],
            excluded[q],
            stack_node,
            stack_matched,
            out,
        )
        for i in range(n_out):
            totals[q] += entry_counts[out[i]]
    return totals


class AStree:
    """Prefix tree of the agree-sets of one multiset."""

    def __init__(self, multiset: AgreeSetMultiset) -> None:
        self.multiset = multiset
        capacity = 64
        self.attr = np.full(capacity, _NONE, dtype=np.int64)
        self.first_child = np.full(capacity, _NONE, dtype=np.int64)
        self.next_sibling = np.full(capacity, _NONE, dtype=np.int64)
        self.entry = np.full(capacity, _NONE, dtype=np.int64)
        self.flagged = np.zeros(capacity, dtype=bool)
        self.n_nodes = np.ones(1, dtype=np.int64)  # node 0 is the root (the empty agree-set, never flagged)
        self.entry_node = np.full(64, _NONE, dtype=np.int64)
        self._index(np.flatnonzero(multiset.entry_counts() > 0))

    @property
    def size(self) -> int:
        """Number of nodes, root included."""
        return int(self.n_nodes[0])

    def _reserve(self, extra_nodes: int) -> None:
        need = self.size + extra_nodes
        if need > len(self.attr):
            capacity = max(need, 2 * len(self.attr))
            for name in ("attr", "first_child", "next_sibling", "entry"):
                grown = np.full(capacity, _NONE, dtype=np.int64)
                grown[: self.size] = getattr(self, name)[: self.size]
                setattr(self, name, grown)
            self.flagged = np.concatenate([self.flagged, np.zeros(capacity - len(self.flagged), dtype=bool)])
        if self.multiset.n_entries > len(self.entry_node):
            grown = np.full(max(self.multiset.n_entries, 2 * len(self.entry_node)), _NONE, dtype=np.int64)
            grown[: len(self.entry_node)] = self.entry_node
            self.entry_node = grown

    def _index(self, entries: np.ndarray) -> None:
        masks = self.multiset.entry_masks()[entries]
        self._reserve(int(np.unpackbits(np.ascontiguousarray(masks).view(np.uint8)).sum()))
        _insert_paths(
            self.attr,
            self.first_child,
            self.next_sibling,
            self.entry,
            self.flagged,
            self.n_nodes,
            self.entry_node,
            masks,
            entries.astype(np.int64),
        )

    def refresh(self) -> None:
        """Bring the tree up to date with the multiset, however many updates it missed.

        Every entry of the multiset gets its path (an entry exists only because its agree-set held at some
        point, which is when ``sync`` would have added it), and each node's flag is set from its entry's
        count: the same tree as ``sync`` after every update, in one pass.
        """
        self._reserve(0)
        n_entries = self.multiset.n_entries
        self._index(np.flatnonzero(self.entry_node[:n_entries] == _NONE))
        self.flagged[self.entry_node[:n_entries]] = self.multiset.entry_counts() > 0

    def sync(self, change: MultisetChange) -> None:
        """Flag the agree-sets that appeared (adding their paths), unflag those that vanished."""
        self._reserve(0)
        known = self.entry_node[change.appeared] != _NONE
        self.flagged[self.entry_node[change.appeared[known]]] = True
        self._index(change.appeared[~known])
        self.flagged[self.entry_node[change.vanished]] = False

    def specialisations(self, required: np.ndarray, excluded: np.ndarray) -> np.ndarray:
        """Entry ids of the agree-sets S that hold with required ⊆ S and S ∩ excluded = ∅."""
        words = self.multiset.attr_words
        required = np.ascontiguousarray(required, dtype=np.uint64).reshape(words)
        excluded = np.ascontiguousarray(excluded, dtype=np.uint64).reshape(words)
        out = np.empty(self.size + 1, dtype=np.int64)
        n_out = _search(
            self.attr,
            self.first_child,
            self.next_sibling,
            self.entry,
            self.flagged,
            required,
            excluded,
            np.empty(self.size + 1, dtype=np.int64),
            np.empty(self.size + words * 64 + 1, dtype=np.int64),
            out,
        )
        return np.sort(out[:n_out])

    def specialisation_counts(self, required: np.ndarray, excluded: np.ndarray) -> np.ndarray:
        """For each query row, the number of tuple pairs whose agree-set specialises it (counts from §6's
        hash table)."""
        words = self.multiset.attr_words
        required = np.ascontiguousarray(required, dtype=np.uint64).reshape(-1, words)
        excluded = np.ascontiguousarray(excluded, dtype=np.uint64).reshape(-1, words)
        return _specialisation_counts(
            self.attr,
            self.first_child,
            self.next_sibling,
            self.entry,
            self.flagged,
            self.size,
            required,
            excluded,
            self.multiset.entry_counts(),
        )
