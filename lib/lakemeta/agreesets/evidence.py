"""Tuple-evidence vectors by zip-bit products and the batch deltas Δ+ / Δ- (DynASt §4.2, §5, Alg. 1-3).

Representation of a zip-bit product. The product of the attribute-value vectors of a contiguous run of
attributes (Def. 4.2) is a vector of n partial agree-set bitsets. It is materialised in a buffer as
``touch`` (a bitset over positions: where the partial bitset is non-zero) and ``pat`` (the partial bitsets,
stored word-major: attribute word k of position p at ``k * positions + p``). A buffer also records the span
of attribute words its run covers, so a product only reads and writes those words. Multiplying a leaf
EV(A, v) into a buffer is one branch-free pass over the 64 positions of each non-zero word of EV(A, v);
multiplying two buffers ORs their spans over the blocks of 64 positions the right operand touches. Blocks
where the leaf (or the right operand) has no bit are skipped, so positions where a tuple agrees with nobody
cost nothing. ``getMultiSet`` (Property 2) reads the touched positions of the finished vector, drops the
tuple's own position (``as(t, t)``) and positions that pair must not count (below), and adds each remaining
bitset to the delta multiset. All-zero bitsets are never touched, so empty agree-sets are dropped for free
(§3).

Order of products. ``factorize=True`` runs Algorithm 3: T_to_V is a linked list of vector handles per tuple,
P_to_T maps each adjacent ordered pair of handles to the tuples containing it, and the pair with the most
tuples (EdgeWithMaxCard) is multiplied next, ties broken by the pair first seen. Zip-bit products are not
commutative in Alg. 3's bookkeeping (a pair is ordered), although the bitwise OR that realises them is. A
product whose left (or right) operand is no longer needed by any tuple is computed in that operand's
buffer; a buffer is released as soon as no tuple holds its vector. ``factorize=False`` multiplies each
tuple's vectors left to right independently (the 12-versus-8 baseline of §5.3).
Both counts are reported: products performed, and (m_t - 1) summed over the tuples (the unfactorised count).

Schedule, then slabs. Algorithm 3 decides the products of a chunk without looking at the bits, so it runs
once per chunk and writes a schedule: products (into which buffer, from which operands) and extractions
(which buffer holds which tuple's finished evidence vector). The schedule is then executed on one slab of
positions at a time. A zip-bit product is position-wise, so running every product on every slab computes
exactly the products of Alg. 3, while the live intermediate vectors (hundreds or thousands of them on wide
tables) only ever hold a slab each and stay in cache instead of spanning the whole relation. The number of
products performed is counted once per scheduled product. Pairs are then met slab by slab rather than tuple
by tuple; the delta's entries are put back in order of their first pair (tuple, then position) afterwards,
so the delta is laid out exactly as a tuple-by-tuple pass lays it out.

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
from numba import njit

from lakemeta.agreesets.bitmasks import lowest_bit_index
from lakemeta.agreesets.multiset import AgreeSetMultiset, add_count, hash_key, reserve, same_key
from lakemeta.agreesets.relation import ABSENT, CompressedRelation

INSERT = 1
DELETE = -1
DEFAULT_CHUNK_SIZE = 256
DENSE_ATTRIBUTES = 16
SLAB_BUDGET_WORDS = 1 << 17  # product-buffer words per slab (1 MiB): the live intermediates stay in cache
_NO = -1
_EMPTY_SPAN_LO = 1 << 30  # a buffer's attribute-word span before anything is multiplied into it
_EMPTY_SPAN_HI = -1
_ID_BITS = 32
_ID_MASK = (1 << _ID_BITS) - 1
_OP_PRODUCT = 0  # schedule row: kind, dst, a_is_leaf, a, b_is_leaf, b
_OP_EXTRACT = 1  # schedule row: kind, buffer, own order, event
_OP_EXTRACT_LEAF = 2  # schedule row: kind, leaf vector, own order, event
_NOT_SEEN = np.iinfo(np.int64).max


@dataclass(frozen=True)
class ZipBitProducts:
    """Number of zip-bit products performed, and the number without Algorithm 3's ordering."""

    performed: int
    unfactorised: int

    def __add__(self, other: ZipBitProducts) -> ZipBitProducts:
        return ZipBitProducts(self.performed + other.performed, self.unfactorised + other.unfactorised)


# -- products on buffers, one slab of positions -------------------------------------------------------------
# A slab is words w0 .. w0 + n_local - 1 of the evidence vectors. A pat row holds attr_words * stride words
# (word-major, stride = 64 * slab words), a touch row one word per block of 64 positions of the slab.
@njit(cache=True, inline="always")
def _clear_block(pat: np.ndarray, dst: int, first: int, last: int, stride: int, lw: int) -> None:
    """Zero attribute words first..last of dst's 64 positions in local block lw."""
    for k in range(first, last + 1):
        base = k * stride + lw * 64
        for j in range(64):
            pat[dst, base + j] = 0


@njit(cache=True)
def _cover(
    pat: np.ndarray, touch: np.ndarray, span: np.ndarray, dst: int, lo: int, hi: int, n_local: int
) -> None:
    """Widen dst's attribute-word span to include lo..hi; the added words are zeroed in its touched blocks."""
    stride = touch.shape[1] * 64
    old_lo, old_hi = span[dst, 0], span[dst, 1]
    if old_lo <= lo and hi <= old_hi:
        return
    new_lo, new_hi = min(lo, old_lo), max(hi, old_hi)
    if old_lo <= old_hi:  # spans are contiguous: only words below old_lo or above old_hi are new
        for lw in range(n_local):
            if touch[dst, lw] != 0:
                _clear_block(pat, dst, new_lo, old_lo - 1, stride, lw)
                _clear_block(pat, dst, old_hi + 1, new_hi, stride, lw)
    span[dst, 0], span[dst, 1] = new_lo, new_hi


@njit(cache=True, inline="always")
def _or_leaf(
    pat: np.ndarray,
    touch: np.ndarray,
    span: np.ndarray,
    dst: int,
    bits: np.ndarray,
    w0: int,
    n_local: int,
    vector: int,
    attribute: int,
) -> None:
    """dst := dst ⊙ EV(A, v) where EV is a leaf bitset of one attribute: one branch-free pass per word."""
    stride = touch.shape[1] * 64
    word = attribute >> 6
    bit = np.uint64(attribute & 63)
    _cover(pat, touch, span, dst, word, word, n_local)
    lo, hi = span[dst, 0], span[dst, 1]
    for lw in range(n_local):
        x = bits[vector, w0 + lw]
        if x == 0:
            continue
        base = word * stride + lw * 64
        if touch[dst, lw] == 0:
            _clear_block(pat, dst, lo, hi, stride, lw)
        for j in range(64):
            pat[dst, base + j] |= ((x >> np.uint64(j)) & np.uint64(1)) << bit
        touch[dst, lw] |= x


@njit(cache=True, inline="always")
def _or_buffer(
    pat: np.ndarray, touch: np.ndarray, span: np.ndarray, dst: int, src: int, n_local: int
) -> None:
    """dst := dst ⊙ src for two materialised products over disjoint attribute runs."""
    stride = touch.shape[1] * 64
    src_lo, src_hi = span[src, 0], span[src, 1]
    _cover(pat, touch, span, dst, src_lo, src_hi, n_local)
    lo, hi = span[dst, 0], span[dst, 1]
    for lw in range(n_local):
        t = touch[src, lw]
        if t == 0:
            continue
        if touch[dst, lw] == 0:
            _clear_block(pat, dst, lo, src_lo - 1, stride, lw)
            _clear_block(pat, dst, src_hi + 1, hi, stride, lw)
            for k in range(src_lo, src_hi + 1):
                base = k * stride + lw * 64
                for j in range(64):
                    pat[dst, base + j] = pat[src, base + j]
        else:
            for k in range(src_lo, src_hi + 1):
                base = k * stride + lw * 64
                for j in range(64):
                    pat[dst, base + j] |= pat[src, base + j]
        touch[dst, lw] |= t


@njit(cache=True)
def _product(
    pat: np.ndarray,
    touch: np.ndarray,
    span: np.ndarray,
    bits: np.ndarray,
    vector_attribute: np.ndarray,
    w0: int,
    n_local: int,
    dst: int,
    a_is_leaf: bool,
    a: int,
    b_is_leaf: bool,
    b: int,
) -> None:
    """dst := a ⊙ b; ``a``/``b`` are leaf vector ids or buffer ids, dst may be the buffer of a or b."""
    if (not a_is_leaf) and a == dst:
        other_is_leaf, other = b_is_leaf, b
    elif (not b_is_leaf) and b == dst:
        other_is_leaf, other = a_is_leaf, a
    else:
        touch[dst, :n_local] = 0
        span[dst, 0], span[dst, 1] = _EMPTY_SPAN_LO, _EMPTY_SPAN_HI
        if a_is_leaf:
            _or_leaf(pat, touch, span, dst, bits, w0, n_local, a, vector_attribute[a])
        else:
            _or_buffer(pat, touch, span, dst, a, n_local)
        other_is_leaf, other = b_is_leaf, b
    if other_is_leaf:
        _or_leaf(pat, touch, span, dst, bits, w0, n_local, other, vector_attribute[other])
    else:
        _or_buffer(pat, touch, span, dst, other, n_local)


# -- getMultiSet (Property 2) --------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _pair_owned(order_of_pos: np.ndarray, position: int, own_order: int, chunk_stop: int) -> bool:
    """False for the tuple itself and for chunk tuples that count the pair when their own vector is read."""
    return not own_order <= order_of_pos[position] < chunk_stop


@njit(cache=True)
def _extract_buffer(
    pat: np.ndarray,
    touch: np.ndarray,
    span: np.ndarray,
    buffer: int,
    w0: int,
    n_local: int,
    own_order: int,
    chunk_stop: int,
    order_of_pos: np.ndarray,
    seen_base: int,
    key: np.ndarray,
    dense: np.ndarray,
    keys: np.ndarray,
    counts: np.ndarray,
    slots: np.ndarray,
    size: np.ndarray,
    first_seen: np.ndarray,
) -> None:
    """Count the finished evidence vector's bitsets of the pairs this tuple owns, on one slab.

    With at most ``DENSE_ATTRIBUTES`` attributes a bitset is its own index into the ``dense`` histogram
    (flushed into the multiset by ``_flush_dense``); otherwise the hash probe is written out here rather
    than calling ``add_count``: this is the one per-pair loop, and a numba call with array arguments in it
    costs several times the probe itself. ``first_seen[entry]`` keeps the smallest ``seen_base + position``
    of the entry's pairs (the tuple-by-tuple order of first pairs, restored by ``_restore_first_pair_order``).
    """
    stride = touch.shape[1] * 64
    attr_words = key.shape[0]
    lo, hi = span[buffer, 0], span[buffer, 1]
    patterns = pat[buffer]
    use_dense = dense.shape[0] > 0
    slot_mask = np.uint64(slots.shape[0] - 1)
    key[:] = 0
    for lw in range(n_local):
        t = touch[buffer, lw]
        while t != 0:
            j = lowest_bit_index(t)
            t &= t - np.uint64(1)
            local = lw * 64 + j
            position = w0 * 64 + local
            if not _pair_owned(order_of_pos, position, own_order, chunk_stop):
                continue
            if use_dense:
                dense[patterns[local]] += 1
                continue
            for k in range(lo, hi + 1):
                key[k] = patterns[k * stride + local]
            seen = seen_base + position
            i = hash_key(key, 0, attr_words) & slot_mask
            while True:
                entry = slots[i]
                if entry == -1:
                    entry = size[0]
                    size[0] += 1
                    for k in range(attr_words):
                        keys[entry * attr_words + k] = key[k]
                    counts[entry] = 1
                    slots[i] = entry
                    first_seen[entry] = seen
                    break
                if same_key(keys, entry, key, 0, attr_words):
                    counts[entry] += 1
                    if seen < first_seen[entry]:
                        first_seen[entry] = seen
                    break
                i = (i + np.uint64(1)) & slot_mask


@njit(cache=True)
def _extract_leaf(
    bits: np.ndarray,
    w0: int,
    n_local: int,
    vector: int,
    attribute: int,
    own_order: int,
    chunk_stop: int,
    order_of_pos: np.ndarray,
    seen_base: int,
    key: np.ndarray,
    keys: np.ndarray,
    counts: np.ndarray,
    slots: np.ndarray,
    size: np.ndarray,
    first_seen: np.ndarray,
) -> None:
    """A tuple with a single non-null attribute: its evidence vector is the leaf itself."""
    pairs = 0
    seen = _NOT_SEEN
    for lw in range(n_local):
        x = bits[vector, w0 + lw]
        while x != 0:
            position = (w0 + lw) * 64 + lowest_bit_index(x)
            x &= x - np.uint64(1)
            if _pair_owned(order_of_pos, position, own_order, chunk_stop):
                pairs += 1
                seen = min(seen, seen_base + position)
    if pairs > 0:
        key[:] = 0
        key[attribute >> 6] = np.uint64(1) << np.uint64(attribute & 63)
        entry = add_count(keys, counts, slots, size, key, 0, key.shape[0], pairs)
        first_seen[entry] = min(first_seen[entry], seen)


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
def _restore_first_pair_order(
    keys: np.ndarray,
    counts: np.ndarray,
    slots: np.ndarray,
    size: np.ndarray,
    first_seen: np.ndarray,
    first_new: int,
    n_words: int,
) -> None:
    """Renumber the entries added by the kernel in the order of their first pair and rebuild the index."""
    n_new = size[0] - first_new
    if n_new <= 1:
        return
    order = np.argsort(first_seen[first_new : size[0]], kind="mergesort") + first_new
    new_keys = keys[first_new * n_words : size[0] * n_words].copy()
    new_counts = counts[first_new : size[0]].copy()
    for i in range(n_new):
        e = order[i]
        new_counts[i] = counts[e]
        for k in range(n_words):
            new_keys[i * n_words + k] = keys[e * n_words + k]
    keys[first_new * n_words : size[0] * n_words] = new_keys
    counts[first_new : size[0]] = new_counts
    slots[:] = -1
    slot_mask = np.uint64(slots.shape[0] - 1)
    for entry in range(size[0]):
        i = hash_key(keys, entry * n_words, n_words) & slot_mask
        while slots[i] != -1:
            i = (i + np.uint64(1)) & slot_mask
        slots[i] = entry


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


@njit(cache=True, inline="always")
def _pair_slot(pair_slots: np.ndarray, pair_a: np.ndarray, pair_b: np.ndarray, a: int, b: int) -> int:
    """Slot of the ordered pair (a, b) in P_to_T's open-addressing index: its own, or a free one."""
    mask = pair_slots.shape[0] - 1
    i = np.int64((np.uint64((a << _ID_BITS) | b) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(32)) & mask
    while True:
        p = pair_slots[i]
        if p == _NO or (pair_a[p] == a and pair_b[p] == b):
            return i
        i = (i + 1) & mask


@njit(cache=True)
def _add_pair_occurrence(
    pair_slots: np.ndarray,
    n_pairs: np.ndarray,
    p_to_t: tuple,
    a: int,
    b: int,
    row: int,
    slot: int,
    n_occ: int,
) -> int:
    """Records in P_to_T (Alg. 3) that tuple ``row`` holds the ordered pair (a, b) at ``slot``, as occurrence
    ``n_occ``; a pair seen for the first time gets the next pair index (``n_pairs[0]``). Returns its index.

    ``p_to_t`` = (pair_a, pair_b, pair_count, pair_head, occ_row, occ_slot, occ_next): per pair its operands,
    live count and first occurrence; per occurrence its tuple, slot and the pair's next occurrence."""
    pair_a, pair_b, pair_count, pair_head, occ_row, occ_slot, occ_next = p_to_t
    i = _pair_slot(pair_slots, pair_a, pair_b, a, b)
    p = pair_slots[i]
    if p == _NO:
        p = n_pairs[0]
        n_pairs[0] += 1
        pair_slots[i] = p
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
    position p, -1 for tuples outside the batch; its length (a multiple of 64) bounds the positions scanned.
    Returns (keys, counts, slots, performed, unfactorised).
    """
    n_tuples, n_attributes = rows.shape
    n_leaves = bits.shape[0]
    n_words = min(bits.shape[1], order_of_pos.shape[0] // 64)
    n_positions = n_words * 64
    key = np.zeros(attr_words, dtype=np.uint64)
    dense = np.zeros(1 << n_attributes if n_attributes <= DENSE_ATTRIBUTES else 0, dtype=np.int64)
    first_new = size[0]
    first_seen = np.full(max(counts.shape[0], 1), _NOT_SEEN, dtype=np.int64)
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
    n_pair_slots = 1
    while n_pair_slots < 2 * max_occ:
        n_pair_slots *= 2
    pair_slots = np.empty(n_pair_slots, dtype=np.int64)
    n_pairs = np.zeros(1, dtype=np.int64)
    inter_buf = np.empty(chunk * width + 1, dtype=np.int64)
    inter_ref = np.empty(chunk * width + 1, dtype=np.int64)
    schedule = np.empty((chunk * (width + 1) + 1, 6), dtype=np.int64)
    free = np.empty(chunk * width + 1, dtype=np.int64)
    pool = np.empty(0, dtype=np.uint64)
    word_used = np.zeros(n_words, dtype=np.bool_)
    leaf_seen_in_chunk = np.full(n_leaves, -1, dtype=np.int64)
    event = 0

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
        # The schedule of the chunk: buffers are numbered as they are first needed and reused once free.
        n_ops = 0
        n_buffers = 0
        n_free = 0
        for r in range(stop - start):
            own = order_of_pos[positions[start + r]]
            if row_len[r] == 1:
                schedule[n_ops, 0], schedule[n_ops, 1] = _OP_EXTRACT_LEAF, seq[r, 0]
                schedule[n_ops, 2], schedule[n_ops, 3] = own, event
                n_ops += 1
                event += 1
            elif row_len[r] >= 2 and not factorize:
                if n_free == 0:
                    free[0] = n_buffers
                    n_buffers += 1
                    n_free = 1
                n_free -= 1
                buffer = free[n_free]
                for s in range(1, row_len[r]):
                    schedule[n_ops, 0], schedule[n_ops, 1] = _OP_PRODUCT, buffer
                    schedule[n_ops, 2], schedule[n_ops, 3] = s == 1, seq[r, 0] if s == 1 else buffer
                    schedule[n_ops, 4], schedule[n_ops, 5] = True, seq[r, s]
                    n_ops += 1
                performed += row_len[r] - 1
                schedule[n_ops, 0], schedule[n_ops, 1] = _OP_EXTRACT, buffer
                schedule[n_ops, 2], schedule[n_ops, 3] = own, event
                n_ops += 1
                event += 1
                free[n_free] = buffer
                n_free += 1
        if factorize:
            # P_to_T: ordered pair of handles -> linked list of (tuple, slot) occurrences, with a live count.
            pair_slots[:] = _NO
            n_pairs[0] = 0
            n_occ = 0
            heap_n = 0
            n_inter = 0
            for r in range(stop - start):
                for s in range(row_len[r] - 1):
                    _add_pair_occurrence(pair_slots, n_pairs, p_to_t, seq[r, s], seq[r, s + 1], r, s, n_occ)
                    n_occ += 1
            for p in range(n_pairs[0]):
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
                    if n_free == 0:
                        free[0] = n_buffers
                        n_buffers += 1
                        n_free = 1
                    n_free -= 1
                    dst = free[n_free]
                a_operand = a if a_is_leaf else inter_buf[a - n_leaves]
                b_operand = b if b_is_leaf else inter_buf[b - n_leaves]
                schedule[n_ops, 0], schedule[n_ops, 1] = _OP_PRODUCT, dst
                schedule[n_ops, 2], schedule[n_ops, 3] = a_is_leaf, a_operand
                schedule[n_ops, 4], schedule[n_ops, 5] = b_is_leaf, b_operand
                n_ops += 1
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
                            old_a, old_b = seq[r, s_left], a
                            new_a, new_b, at = seq[r, s_left], new, s_left
                        else:
                            if s3 == _NO:
                                continue
                            old_a, old_b = b, seq[r, s3]
                            new_a, new_b, at = new, seq[r, s3], s
                        q = pair_slots[_pair_slot(pair_slots, pair_a, pair_b, old_a, old_b)]
                        pair_count[q] -= 1
                        heap_n = _heap_push(heap, heap_n, _heap_key(pair_count[q], q))
                        q = _add_pair_occurrence(pair_slots, n_pairs, p_to_t, new_a, new_b, r, at, n_occ)
                        n_occ += 1
                        heap_n = _heap_push(heap, heap_n, _heap_key(pair_count[q], q))
                    if row_len[r] == 1:
                        schedule[n_ops, 0], schedule[n_ops, 1] = _OP_EXTRACT, dst
                        schedule[n_ops, 2], schedule[n_ops, 3] = order_of_pos[positions[start + r]], event
                        n_ops += 1
                        event += 1
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
        # Words where some vector of the chunk has a bit: products are zero elsewhere, and so are the slabs
        # without such a word (in a bulk load, the positions not inserted yet).
        word_used[:] = False
        for r in range(stop - start):
            for a in range(n_attributes):
                leaf = rows[start + r, a]
                if leaf != ABSENT and leaf_seen_in_chunk[leaf] != start:
                    leaf_seen_in_chunk[leaf] = start
                    for w in range(n_words):
                        if bits[leaf, w] != 0:
                            word_used[w] = True
        # Run the schedule slab by slab (each slab: every product, then every extraction, in schedule order).
        n_buf = max(n_buffers, 1)
        slab_words = max(1, min(n_words, SLAB_BUDGET_WORDS // (n_buf * attr_words * 64)))
        stride = slab_words * 64
        if pool.shape[0] < n_buf * attr_words * stride:
            pool = np.empty(n_buf * attr_words * stride, dtype=np.uint64)
        pat = pool[: n_buf * attr_words * stride].reshape(n_buf, attr_words * stride)
        touch = np.empty((n_buf, slab_words), dtype=np.uint64)
        span = np.empty((n_buf, 2), dtype=np.int64)
        for w0 in range(0, n_words, slab_words):
            n_local = min(slab_words, n_words - w0)
            if not word_used[w0 : w0 + n_local].any():
                continue
            for i in range(n_ops):
                kind = schedule[i, 0]
                if kind == _OP_PRODUCT:
                    _product(
                        pat,
                        touch,
                        span,
                        bits,
                        vector_attribute,
                        w0,
                        n_local,
                        schedule[i, 1],
                        schedule[i, 2] != 0,
                        schedule[i, 3],
                        schedule[i, 4] != 0,
                        schedule[i, 5],
                    )
                    continue
                if dense.shape[0] == 0 or kind == _OP_EXTRACT_LEAF:
                    keys, counts, slots = reserve(keys, counts, slots, size, n_local * 64, attr_words)
                    if first_seen.shape[0] < counts.shape[0]:
                        grown = np.full(counts.shape[0], _NOT_SEEN, dtype=np.int64)
                        grown[: first_seen.shape[0]] = first_seen
                        first_seen = grown
                seen_base = schedule[i, 3] * n_positions
                if kind == _OP_EXTRACT:
                    _extract_buffer(
                        pat,
                        touch,
                        span,
                        schedule[i, 1],
                        w0,
                        n_local,
                        schedule[i, 2],
                        stop,
                        order_of_pos,
                        seen_base,
                        key,
                        dense,
                        keys,
                        counts,
                        slots,
                        size,
                        first_seen,
                    )
                else:
                    leaf = schedule[i, 1]
                    _extract_leaf(
                        bits,
                        w0,
                        n_local,
                        leaf,
                        vector_attribute[leaf],
                        schedule[i, 2],
                        stop,
                        order_of_pos,
                        seen_base,
                        key,
                        keys,
                        counts,
                        slots,
                        size,
                        first_seen,
                    )
        if mode == DELETE:
            _write_chunk(bits, cells, positions, start, stop, False)
    _restore_first_pair_order(keys, counts, slots, size, first_seen, first_new, attr_words)
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
    order_of_pos = np.full(relation.used_words * 64, -1, dtype=np.int64)
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
    bits = np.zeros((relation.n_vectors, relation.used_words), dtype=np.uint64)
    return _run(relation, bits, relation.live_positions(), INSERT, factorize, chunk_size)
