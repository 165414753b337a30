"""Tuple-evidence vectors by zip-bit products and the batch deltas Δ+ / Δ- (DynASt §4.2, §5, Alg. 1-3).

Representation of a zip-bit product. The product of the attribute-value vectors of a contiguous run of
attributes (Def. 4.2) is a vector of n partial agree-set bitsets. It is materialised in a buffer as
``touch`` (a bitset over positions: where the partial bitset is non-zero) and ``pat`` (the partial bitsets,
``attr_words`` words per position, valid only at touched positions). A product costs one pass over the
words of the operands plus one step per touched position, so all work is word-level bitset scans; positions
where a tuple agrees with nobody are never visited. ``getMultiSet`` (Property 2) reads the touched
positions of the finished vector, drops the tuple's own position (``as(t, t)``) and positions that pair
must not count (below), and adds each remaining bitset to the delta multiset. All-zero bitsets are never
touched, so empty agree-sets are dropped for free (§3).

Order of products. ``factorize=True`` runs Algorithm 3: T_to_V is a linked list of vector handles per tuple,
P_to_T maps each adjacent ordered pair of handles to the tuples containing it, and the pair with the most
tuples (EdgeWithMaxCard) is multiplied next, ties broken by the pair first seen. Zip-bit products are not
commutative in Alg. 3's bookkeeping (a pair is ordered), although the bitwise OR that realises them is. A
product whose left (or right) operand is no longer needed by any tuple is computed in that operand's
buffer; a buffer is released as soon as no tuple holds its vector. ``factorize=False`` multiplies each
tuple's vectors left to right independently (the 12-versus-8 baseline of §5.3).
Both counts are reported: products performed, and (m_t - 1) summed over the tuples (the unfactorised count).

Batches (Alg. 1-2). Tuples are processed in chunks of ``chunk_size`` (Alg. 3 runs on one chunk at a time,
which bounds the memory of the live intermediate vectors). Insertion sets a chunk's bits before its
evidence vectors are computed (Alg. 1 l. 10 before l. 11); deletion clears them after (Alg. 2 l. 8 before
l. 10). Inside a chunk, tuple i pairs only with chunk tuples of smaller batch index; with every tuple of the
relation outside the chunk it pairs if that tuple's bits are set. That is exactly ``r^temp`` of Alg. 1
(previously inserted) and of Alg. 2 (not yet deleted), so every unordered pair counts once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, types
from numba.typed import Dict

from lakemeta.agreesets.bitmasks import lowest_bit_index
from lakemeta.agreesets.multiset import AgreeSetMultiset, add_count, hash_key, reserve, same_key
from lakemeta.agreesets.relation import ABSENT, CompressedRelation

INSERT = 1
DELETE = -1
DEFAULT_CHUNK_SIZE = 256
DENSE_ATTRIBUTES = 16
_NO = -1
_ID_BITS = 32
_ID_MASK = (1 << _ID_BITS) - 1


@dataclass(frozen=True)
class ZipBitProducts:
    """Number of zip-bit products performed, and the number without Algorithm 3's ordering."""

    performed: int
    unfactorised: int

    def __add__(self, other: ZipBitProducts) -> ZipBitProducts:
        return ZipBitProducts(self.performed + other.performed, self.unfactorised + other.unfactorised)


# -- products on buffers -----------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _or_leaf(
    pat: np.ndarray,
    touch: np.ndarray,
    dst: int,
    bits: np.ndarray,
    vector: int,
    attribute: int,
    attr_words: int,
) -> None:
    """dst := dst ⊙ EV(A, v) where EV is a leaf bitset of one attribute."""
    word_of_attr = attribute >> 6
    attr_bit = np.uint64(1) << np.uint64(attribute & 63)
    for w in range(bits.shape[1]):
        x = bits[vector, w]
        if x == 0:
            continue
        fresh = x & ~touch[dst, w]
        while fresh != 0:
            position = w * 64 + lowest_bit_index(fresh)
            fresh &= fresh - np.uint64(1)
            for k in range(attr_words):
                pat[dst, position * attr_words + k] = 0
        touch[dst, w] |= x
        while x != 0:
            position = w * 64 + lowest_bit_index(x)
            x &= x - np.uint64(1)
            pat[dst, position * attr_words + word_of_attr] |= attr_bit


@njit(cache=True, inline="always")
def _or_buffer(pat: np.ndarray, touch: np.ndarray, dst: int, src: int, attr_words: int) -> None:
    """dst := dst ⊙ src for two materialised products over disjoint attribute runs."""
    for w in range(touch.shape[1]):
        t = touch[src, w]
        if t == 0:
            continue
        present = touch[dst, w]
        fresh = t & ~present
        while fresh != 0:
            base = (w * 64 + lowest_bit_index(fresh)) * attr_words
            fresh &= fresh - np.uint64(1)
            for k in range(attr_words):
                pat[dst, base + k] = pat[src, base + k]
        both = t & present
        while both != 0:
            base = (w * 64 + lowest_bit_index(both)) * attr_words
            both &= both - np.uint64(1)
            for k in range(attr_words):
                pat[dst, base + k] |= pat[src, base + k]
        touch[dst, w] = present | t


@njit(cache=True)
def _product(
    pat: np.ndarray,
    touch: np.ndarray,
    bits: np.ndarray,
    vector_attribute: np.ndarray,
    dst: int,
    a_is_leaf: bool,
    a: int,
    b_is_leaf: bool,
    b: int,
    attr_words: int,
) -> None:
    """dst := a ⊙ b; ``a``/``b`` are leaf vector ids or buffer ids, dst may be the buffer of a or b."""
    if (not a_is_leaf) and a == dst:
        other_is_leaf, other = b_is_leaf, b
    elif (not b_is_leaf) and b == dst:
        other_is_leaf, other = a_is_leaf, a
    else:
        if a_is_leaf:
            touch[dst, :] = 0
            _or_leaf(pat, touch, dst, bits, a, vector_attribute[a], attr_words)
        else:
            for w in range(touch.shape[1]):
                t = touch[a, w]
                touch[dst, w] = t
                while t != 0:
                    base = (w * 64 + lowest_bit_index(t)) * attr_words
                    t &= t - np.uint64(1)
                    for k in range(attr_words):
                        pat[dst, base + k] = pat[a, base + k]
        other_is_leaf, other = b_is_leaf, b
    if other_is_leaf:
        _or_leaf(pat, touch, dst, bits, other, vector_attribute[other], attr_words)
    else:
        _or_buffer(pat, touch, dst, other, attr_words)


# -- getMultiSet (Property 2) --------------------------------------------------------------------------------
@njit(cache=True)
def _extract_buffer(
    pat: np.ndarray,
    touch: np.ndarray,
    buffer: int,
    own_order: int,
    chunk_stop: int,
    order_of_pos: np.ndarray,
    attr_words: int,
    dense: np.ndarray,
    keys: np.ndarray,
    counts: np.ndarray,
    slots: np.ndarray,
    size: np.ndarray,
) -> None:
    """Count the finished evidence vector's bitsets of the pairs this tuple owns.

    With at most ``DENSE_ATTRIBUTES`` attributes a bitset is its own index into the ``dense`` histogram
    (flushed into the multiset by ``_flush_dense``); otherwise the hash probe is written out here rather
    than calling ``add_count``: this is the one per-pair loop, and a numba call with array arguments in it
    costs several times the probe itself.
    """
    patterns = pat[buffer]
    use_dense = dense.shape[0] > 0
    slot_mask = np.uint64(slots.shape[0] - 1)
    for w in range(touch.shape[1]):
        t = touch[buffer, w]
        while t != 0:
            position = w * 64 + lowest_bit_index(t)
            t &= t - np.uint64(1)
            if own_order <= order_of_pos[position] < chunk_stop:
                continue  # itself, or a chunk tuple that pairs with it when its own vector is read
            offset = position * attr_words
            if use_dense:
                dense[patterns[offset]] += 1
                continue
            i = hash_key(patterns, offset, attr_words) & slot_mask
            while True:
                entry = slots[i]
                if entry == -1:
                    entry = size[0]
                    size[0] += 1
                    for k in range(attr_words):
                        keys[entry * attr_words + k] = patterns[offset + k]
                    counts[entry] = 1
                    slots[i] = entry
                    break
                if same_key(keys, entry, patterns, offset, attr_words):
                    counts[entry] += 1
                    break
                i = (i + np.uint64(1)) & slot_mask


@njit(cache=True)
def _flush_dense(
    dense: np.ndarray, keys: np.ndarray, counts: np.ndarray, slots: np.ndarray, size: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_keys = 0
    for pattern in range(dense.shape[0]):
        if dense[pattern] > 0:
            n_keys += 1
    keys, counts, slots = reserve(keys, counts, slots, size, n_keys, 1)
    key = np.zeros(1, dtype=np.uint64)
    for pattern in range(dense.shape[0]):
        if dense[pattern] > 0:
            key[0] = pattern
            add_count(keys, counts, slots, size, key, 0, 1, dense[pattern])
    return keys, counts, slots


@njit(cache=True)
def _extract_leaf(
    bits: np.ndarray,
    vector: int,
    attribute: int,
    own_order: int,
    chunk_stop: int,
    order_of_pos: np.ndarray,
    key: np.ndarray,
    keys: np.ndarray,
    counts: np.ndarray,
    slots: np.ndarray,
    size: np.ndarray,
) -> None:
    """A tuple with a single non-null attribute: its evidence vector is the leaf itself."""
    pairs = 0
    for w in range(bits.shape[1]):
        x = bits[vector, w]
        while x != 0:
            position = w * 64 + lowest_bit_index(x)
            x &= x - np.uint64(1)
            if not own_order <= order_of_pos[position] < chunk_stop:
                pairs += 1
    if pairs > 0:
        key[:] = 0
        key[attribute >> 6] = np.uint64(1) << np.uint64(attribute & 63)
        add_count(keys, counts, slots, size, key, 0, key.shape[0], pairs)


# -- Algorithm 3 bookkeeping ---------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _heap_push(heap: np.ndarray, n: int, value: int) -> int:
    i = n
    heap[i] = value
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent] >= heap[i]:
            break
        heap[parent], heap[i] = heap[i], heap[parent]
        i = parent
    return n + 1


@njit(cache=True, inline="always")
def _heap_pop(heap: np.ndarray, n: int) -> int:
    """Removes the maximum (now at heap[n-1] on return); returns the new size."""
    n -= 1
    heap[0], heap[n] = heap[n], heap[0]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= n:
            break
        child = left
        if left + 1 < n and heap[left + 1] > heap[left]:
            child = left + 1
        if heap[i] >= heap[child]:
            break
        heap[i], heap[child] = heap[child], heap[i]
        i = child
    return n


@njit(cache=True, inline="always")
def _heap_key(count: int, pair: int) -> int:
    return (count << _ID_BITS) | (_ID_MASK - pair)


@njit(cache=True)
def _add_pair_occurrence(
    pair_index: Dict, p_to_t: tuple, a: int, b: int, row: int, slot: int, n_occ: int
) -> int:
    """Records in P_to_T (Alg. 3) that tuple ``row`` holds the ordered pair (a, b) at ``slot``, as occurrence
    ``n_occ``; a pair seen for the first time gets the next pair index. Returns the pair's index.

    ``p_to_t`` = (pair_a, pair_b, pair_count, pair_head, occ_row, occ_slot, occ_next): per pair its operands,
    live count and first occurrence; per occurrence its tuple, slot and the pair's next occurrence."""
    pair_a, pair_b, pair_count, pair_head, occ_row, occ_slot, occ_next = p_to_t
    pair_key = (a << _ID_BITS) | b
    if pair_key in pair_index:
        p = pair_index[pair_key]
    else:
        p = len(pair_index)
        pair_index[pair_key] = p
        pair_a[p] = a
        pair_b[p] = b
        pair_count[p] = 0
        pair_head[p] = _NO
    occ_row[n_occ] = row
    occ_slot[n_occ] = slot
    occ_next[n_occ] = pair_head[p]
    pair_head[p] = n_occ
    pair_count[p] += 1
    return p


@njit(cache=True)
def _acquire(pat: np.ndarray, touch: np.ndarray, free: np.ndarray, n_free: int) -> tuple:
    """Take a free product buffer, doubling the pool when every buffer holds a live vector."""
    if n_free == 0:
        n = pat.shape[0]
        new_pat = np.empty((2 * n, pat.shape[1]), dtype=np.uint64)
        new_pat[:n] = pat
        new_touch = np.empty((2 * n, touch.shape[1]), dtype=np.uint64)
        new_touch[:n] = touch
        pat, touch = new_pat, new_touch
        free = np.empty(2 * n, dtype=np.int64)
        for i in range(n):
            free[i] = 2 * n - 1 - i
        n_free = n
    n_free -= 1
    return pat, touch, free, n_free, free[n_free]


@njit(cache=True)
def _write_chunk(
    bits: np.ndarray, cells: np.ndarray, positions: np.ndarray, start: int, stop: int, set_bits: bool
) -> None:
    for i in range(start, stop):
        word = positions[i] >> 6
        bit = np.uint64(1) << np.uint64(positions[i] & 63)
        for a in range(cells.shape[1]):
            vector = cells[i, a]
            if vector >= 0:
                if set_bits:
                    bits[vector, word] |= bit
                else:
                    bits[vector, word] &= ~bit


@njit(cache=True)
def evidence_kernel(
    bits: np.ndarray,
    vector_attribute: np.ndarray,
    cells: np.ndarray,
    rows: np.ndarray,
    positions: np.ndarray,
    order_of_pos: np.ndarray,
    attr_words: int,
    mode: int,
    factorize: bool,
    chunk_size: int,
    keys: np.ndarray,
    counts: np.ndarray,
    slots: np.ndarray,
    size: np.ndarray,
) -> tuple:
    """Adds to the multiset (keys, counts, slots, size) the agree-sets of the batch tuples' pairs.

    ``cells``: the batch tuples' vector ids (bits to set or clear, per ``mode``); ``rows``: the vectors of
    each tuple's zip-bit product (ABSENT = left out); ``order_of_pos[p]``: batch index of the tuple at
    position p, -1 for tuples outside the batch. Returns (keys, counts, slots, performed, unfactorised).
    """
    n_tuples, n_attributes = rows.shape
    n_leaves = bits.shape[0]
    n_positions = bits.shape[1] * 64
    pat = np.empty((4, n_positions * attr_words), dtype=np.uint64)
    touch = np.empty((4, bits.shape[1]), dtype=np.uint64)
    free = np.arange(3, -1, -1).astype(np.int64)
    n_free = 4
    key = np.zeros(attr_words, dtype=np.uint64)
    dense = np.zeros(1 << n_attributes if n_attributes <= DENSE_ATTRIBUTES else 0, dtype=np.int64)
    row_reserve = 0 if dense.shape[0] > 0 else n_positions  # new keys one evidence vector can add
    performed = 0
    unfactorised = 0
    width = max(n_attributes, 1)
    chunk = max(1, min(chunk_size, n_tuples))
    seq = np.empty((chunk, width), dtype=np.int64)
    nxt = np.empty((chunk, width), dtype=np.int64)
    prv = np.empty((chunk, width), dtype=np.int64)
    row_len = np.empty(chunk, dtype=np.int64)
    max_occ = chunk * width * 3 + 1
    occ_row = np.empty(max_occ, dtype=np.int64)
    occ_slot = np.empty(max_occ, dtype=np.int64)
    occ_next = np.empty(max_occ, dtype=np.int64)
    pair_a = np.empty(max_occ, dtype=np.int64)
    pair_b = np.empty(max_occ, dtype=np.int64)
    pair_count = np.empty(max_occ, dtype=np.int64)
    pair_head = np.empty(max_occ, dtype=np.int64)
    p_to_t = (pair_a, pair_b, pair_count, pair_head, occ_row, occ_slot, occ_next)
    heap = np.empty(2 * max_occ, dtype=np.int64)
    inter_buf = np.empty(chunk * width + 1, dtype=np.int64)
    inter_ref = np.empty(chunk * width + 1, dtype=np.int64)

    for start in range(0, n_tuples, chunk):
        stop = min(n_tuples, start + chunk)
        if mode == INSERT:
            _write_chunk(bits, cells, positions, start, stop, True)
        # T_to_V: each tuple's non-absent vectors as a linked list (a merged vector keeps its left slot).
        for r in range(stop - start):
            length = 0
            for a in range(n_attributes):
                if rows[start + r, a] != ABSENT:
                    seq[r, length] = rows[start + r, a]
                    length += 1
            row_len[r] = length
            for s in range(length):
                nxt[r, s] = s + 1 if s + 1 < length else _NO
                prv[r, s] = s - 1
            if length >= 2:
                unfactorised += length - 1
        for r in range(stop - start):
            own = order_of_pos[positions[start + r]]
            if row_len[r] == 1:
                keys, counts, slots = reserve(keys, counts, slots, size, 1, attr_words)
                leaf = seq[r, 0]
                _extract_leaf(
                    bits,
                    leaf,
                    vector_attribute[leaf],
                    own,
                    stop,
                    order_of_pos,
                    key,
                    keys,
                    counts,
                    slots,
                    size,
                )
            elif row_len[r] >= 2 and not factorize:
                pat, touch, free, n_free, buffer = _acquire(pat, touch, free, n_free)
                _product(
                    pat, touch, bits, vector_attribute, buffer, True, seq[r, 0], True, seq[r, 1], attr_words
                )
                for s in range(2, row_len[r]):
                    _product(
                        pat, touch, bits, vector_attribute, buffer, False, buffer, True, seq[r, s], attr_words
                    )
                performed += row_len[r] - 1
                keys, counts, slots = reserve(keys, counts, slots, size, row_reserve, attr_words)
                _extract_buffer(
                    pat, touch, buffer, own, stop, order_of_pos, attr_words, dense, keys, counts, slots, size
                )
                free[n_free] = buffer
                n_free += 1
        if factorize:
            # P_to_T: ordered pair of handles -> linked list of (tuple, slot) occurrences, with a live count.
            pair_index = Dict.empty(key_type=types.int64, value_type=types.int64)
            n_occ = 0
            heap_n = 0
            n_inter = 0
            for r in range(stop - start):
                for s in range(row_len[r] - 1):
                    _add_pair_occurrence(pair_index, p_to_t, seq[r, s], seq[r, s + 1], r, s, n_occ)
                    n_occ += 1
            for p in range(len(pair_index)):
                heap_n = _heap_push(heap, heap_n, _heap_key(pair_count[p], p))
            while heap_n > 0:
                heap_n = _heap_pop(heap, heap_n)
                top = heap[heap_n]
                p = _ID_MASK - (top & _ID_MASK)
                c = top >> _ID_BITS
                if c == 0 or pair_count[p] != c:
                    continue  # stale entry: the pair's count changed after this entry was pushed
                a = pair_a[p]
                b = pair_b[p]
                a_is_leaf = a < n_leaves
                b_is_leaf = b < n_leaves
                if (not a_is_leaf) and inter_ref[a - n_leaves] == c:
                    dst = inter_buf[a - n_leaves]
                elif (not b_is_leaf) and inter_ref[b - n_leaves] == c:
                    dst = inter_buf[b - n_leaves]
                else:
                    pat, touch, free, n_free, dst = _acquire(pat, touch, free, n_free)
                a_operand = a if a_is_leaf else inter_buf[a - n_leaves]
                b_operand = b if b_is_leaf else inter_buf[b - n_leaves]
                _product(
                    pat,
                    touch,
                    bits,
                    vector_attribute,
                    dst,
                    a_is_leaf,
                    a_operand,
                    b_is_leaf,
                    b_operand,
                    attr_words,
                )
                performed += 1
                new = n_leaves + n_inter
                inter_buf[n_inter] = dst
                inter_ref[n_inter] = 0
                n_inter += 1
                o = pair_head[p]
                while o != _NO:
                    r = occ_row[o]
                    s = occ_slot[o]
                    o = occ_next[o]
                    s2 = nxt[r, s]
                    if seq[r, s] != a or s2 == _NO or seq[r, s2] != b:
                        continue
                    s3 = nxt[r, s2]
                    seq[r, s] = new
                    seq[r, s2] = _NO  # the right operand's slot is gone: its stale occurrences must not match
                    nxt[r, s] = s3
                    if s3 != _NO:
                        prv[r, s3] = s
                    row_len[r] -= 1
                    if not a_is_leaf:
                        inter_ref[a - n_leaves] -= 1
                    if not b_is_leaf:
                        inter_ref[b - n_leaves] -= 1
                    inter_ref[new - n_leaves] += 1
                    for side in range(2):
                        if side == 0:
                            s_left = prv[r, s]
                            if s_left == _NO:
                                continue
                            old_key = (seq[r, s_left] << _ID_BITS) | a
                            new_a, new_b, at = seq[r, s_left], new, s_left
                        else:
                            if s3 == _NO:
                                continue
                            old_key = (b << _ID_BITS) | seq[r, s3]
                            new_a, new_b, at = new, seq[r, s3], s
                        q = pair_index[old_key]
                        pair_count[q] -= 1
                        heap_n = _heap_push(heap, heap_n, _heap_key(pair_count[q], q))
                        q = _add_pair_occurrence(pair_index, p_to_t, new_a, new_b, r, at, n_occ)
                        n_occ += 1
                        heap_n = _heap_push(heap, heap_n, _heap_key(pair_count[q], q))
                    if row_len[r] == 1:
                        keys, counts, slots = reserve(keys, counts, slots, size, row_reserve, attr_words)
                        _extract_buffer(
                            pat,
                            touch,
                            dst,
                            order_of_pos[positions[start + r]],
                            stop,
                            order_of_pos,
                            attr_words,
                            dense,
                            keys,
                            counts,
                            slots,
                            size,
                        )
                        inter_ref[new - n_leaves] -= 1
                pair_count[p] = 0
                if (not a_is_leaf) and inter_ref[a - n_leaves] == 0 and a_operand != dst:
                    free[n_free] = a_operand
                    n_free += 1
                if (not b_is_leaf) and inter_ref[b - n_leaves] == 0 and b_operand != dst:
                    free[n_free] = b_operand
                    n_free += 1
                if inter_ref[new - n_leaves] == 0:
                    free[n_free] = dst
                    n_free += 1
        if mode == DELETE:
            _write_chunk(bits, cells, positions, start, stop, False)
    if dense.shape[0] > 0:
        keys, counts, slots = _flush_dense(dense, keys, counts, slots, size)
    return keys, counts, slots, performed, unfactorised


def _run(
    relation: CompressedRelation,
    bits: np.ndarray,
    positions: np.ndarray,
    mode: int,
    factorize: bool,
    chunk_size: int,
) -> tuple[AgreeSetMultiset, ZipBitProducts]:
    order_of_pos = np.full(bits.shape[1] * 64, -1, dtype=np.int64)
    order_of_pos[positions] = np.arange(len(positions), dtype=np.int64)
    delta = AgreeSetMultiset(relation.n_columns)
    delta.keys, delta.counts, delta.slots, performed, unfactorised = evidence_kernel(
        bits,
        relation.vector_attribute,
        relation.cells[positions],
        relation.evidence_rows(positions),
        positions,
        order_of_pos,
        relation.attr_words,
        mode,
        factorize,
        chunk_size,
        delta.keys,
        delta.counts,
        delta.slots,
        delta.size,
    )
    return delta, ZipBitProducts(int(performed), int(unfactorised))


def delta_minus(
    relation: CompressedRelation,
    positions: np.ndarray,
    *,
    factorize: bool = True,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> tuple[AgreeSetMultiset, ZipBitProducts]:
    """Algorithm 2: Δ- = {{as(t_i, t_j) | {t_i, t_j} ∈ r^curr ⊗ b_del}}; deletes the tuples from r."""
    positions = relation.check_live(positions)
    delta, products = _run(relation, relation.bits, positions, DELETE, factorize, chunk_size)
    relation.release(positions)
    return delta, products


def delta_plus(
    relation: CompressedRelation,
    batch: object,
    *,
    factorize: bool = True,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> tuple[np.ndarray, AgreeSetMultiset, ZipBitProducts]:
    """Algorithm 1: inserts the batch into the relation; returns its positions and Δ+ (r^next ⊗ b_ins)."""
    positions = relation.allocate(relation.encode(batch))
    delta, products = _run(relation, relation.bits, positions, INSERT, factorize, chunk_size)
    return positions, delta, products


def from_scratch(
    relation: CompressedRelation, *, factorize: bool = True, chunk_size: int = DEFAULT_CHUNK_SIZE
) -> tuple[AgreeSetMultiset, ZipBitProducts]:
    """The recomputation baseline: ES^m(r) of the relation's live tuples, inserted into empty vectors.

    The relation is not modified (the kernel works on a zeroed copy of its vectors).
    """
    bits = np.zeros_like(relation.bits)
    return _run(relation, bits, relation.live_positions(), INSERT, factorize, chunk_size)
