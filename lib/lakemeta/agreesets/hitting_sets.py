"""Minimal hitting sets (minimal transversals) of a hypergraph of attribute masks: MMCS with bitsets.

MMCS (Murakami & Uno, "Efficient algorithms for dualizing large-scale hypergraphs", DAM 2014) grows a set S
depth-first, always branching on the uncovered edge with the fewest candidate vertices, and keeps S minimal
throughout: every u in S must keep a critical edge (an edge hit by u alone). Vertices are attributes (a mask
of ``attr_words`` words); edges are tracked as bitsets over edge indices (``crit[u]``, ``uncov``), so adding a
vertex is a handful of word operations per edge word. Used for keys (UCCs) and FD left-hand sides (DepMiner's
minimal transversals of cmax(r, A), DynASt §1).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from lakemeta.agreesets.bitmasks import lowest_bit_index, popcount64

_FIRST_CAPACITY = 1024  # rows of the first buffer of minimal hitting sets


@njit(cache=True)
def minimal_sets(masks: np.ndarray) -> np.ndarray:
    """The inclusion-minimal distinct rows of ``masks`` (an edge that contains another is redundant)."""
    n, words = masks.shape
    sizes = np.zeros(n, dtype=np.int64)
    for i in range(n):
        for w in range(words):
            sizes[i] += popcount64(masks[i, w])
    order = np.argsort(sizes, kind="mergesort")
    kept = np.empty(n, dtype=np.int64)
    n_kept = 0
    for i in order:
        redundant = False
        for j in range(n_kept):
            k = kept[j]
            subset = True
            for w in range(words):
                if masks[k, w] & ~masks[i, w] != 0:
                    subset = False
                    break
            if subset:
                redundant = True
                break
        if not redundant:
            kept[n_kept] = i
            n_kept += 1
    return masks[kept[:n_kept]].copy()


@njit(cache=True)
def _mmcs(
    edges: np.ndarray,
    incidence: np.ndarray,
    chosen: np.ndarray,
    depth: int,
    candidates: np.ndarray,
    crit: np.ndarray,
    uncovered: np.ndarray,
    out: np.ndarray,
    n_out: np.ndarray,
) -> None:
    edge_words = uncovered.shape[0]
    attr_words = edges.shape[1]
    any_uncovered = False
    for w in range(edge_words):
        if uncovered[w] != 0:
            any_uncovered = True
            break
    if not any_uncovered:
        if n_out[0] < out.shape[0]:  # past the buffer the sets are counted, for a second run with room
            for i in range(depth):
                out[n_out[0], chosen[i] >> 6] |= np.uint64(1) << np.uint64(chosen[i] & 63)
        n_out[0] += 1
        return
    best = -1
    best_size = 1 << 62
    for w in range(edge_words):
        x = uncovered[w]
        while x != 0:
            e = w * 64 + lowest_bit_index(x)
            x &= x - np.uint64(1)
            size = 0
            for k in range(attr_words):
                size += popcount64(edges[e, k] & candidates[k])
            if size < best_size:
                best_size = size
                best = e
        if best_size == 0:
            break
    branch = edges[best] & candidates
    candidates = candidates & ~branch
    saved = np.empty((depth, edge_words), dtype=np.uint64)
    for i in range(depth):
        saved[i] = crit[chosen[i]]
    next_uncovered = np.empty(edge_words, dtype=np.uint64)
    for k in range(attr_words):
        x = branch[k]
        while x != 0:
            v = k * 64 + lowest_bit_index(x)
            x &= x - np.uint64(1)
            minimal = True
            for i in range(depth):
                u = chosen[i]
                nonempty = False
                for w in range(edge_words):
                    crit[u, w] &= ~incidence[v, w]
                    if crit[u, w] != 0:
                        nonempty = True
                if not nonempty:
                    minimal = False
            if minimal:
                for w in range(edge_words):
                    crit[v, w] = uncovered[w] & incidence[v, w]
                    next_uncovered[w] = uncovered[w] & ~incidence[v, w]
                chosen[depth] = v
                _mmcs(
                    edges,
                    incidence,
                    chosen,
                    depth + 1,
                    candidates.copy(),
                    crit,
                    next_uncovered.copy(),
                    out,
                    n_out,
                )
            for i in range(depth):
                crit[chosen[i]] = saved[i]
            candidates[k] |= np.uint64(1) << np.uint64(v & 63)


@njit(cache=True)
def _incidence(edges: np.ndarray, n_vertices: int) -> np.ndarray:
    n_edges = edges.shape[0]
    incidence = np.zeros((n_vertices, (n_edges + 63) // 64), dtype=np.uint64)
    for e in range(n_edges):
        for k in range(edges.shape[1]):
            x = edges[e, k]
            while x != 0:
                v = k * 64 + lowest_bit_index(x)
                x &= x - np.uint64(1)
                incidence[v, e >> 6] |= np.uint64(1) << np.uint64(e & 63)
    return incidence


def minimal_hitting_sets(edges: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    """All minimal subsets of ``vertices`` that intersect every edge (rows of attribute masks).

    No edges: the empty set is the only minimal hitting set. An empty edge (after restriction to
    ``vertices``): there is none.
    """
    vertices = np.ascontiguousarray(vertices, dtype=np.uint64)
    edges = np.ascontiguousarray(edges, dtype=np.uint64).reshape(-1, len(vertices)) & vertices
    edges = minimal_sets(edges)
    n_vertices = len(vertices) * 64
    incidence = _incidence(edges, n_vertices)
    edge_flags = np.zeros(max(1, (len(edges) + 63) // 64) * 64, dtype=bool)
    edge_flags[: len(edges)] = True
    uncovered = np.packbits(edge_flags, bitorder="little").view("<u8").astype(np.uint64)
    # The sets go to a buffer of rows rather than a numba typed List, whose methods numba compiles anew in
    # every process, at a cost of seconds: a search that finds more sets than the buffer holds runs again
    # with room.
    capacity = _FIRST_CAPACITY
    while True:
        out = np.zeros((capacity, len(vertices)), dtype=np.uint64)
        n_out = np.zeros(1, dtype=np.int64)
        crit = np.zeros((n_vertices, len(uncovered)), dtype=np.uint64)
        chosen = np.zeros(n_vertices + 1, dtype=np.int64)
        _mmcs(edges, incidence, chosen, 0, vertices.copy(), crit, uncovered.copy(), out, n_out)
        if n_out[0] <= capacity:
            break
        capacity = int(n_out[0])
    result = out[: n_out[0]]
    return result[np.lexsort(result.T[::-1])] if len(result) else result
