"""Top-k n-ary joinable-table search: MATE's Algorithm 1 (§6), also run as the SCR baseline (§7.1.1).

Given the key columns Q of a query table d and k, return the k tables of the index with the highest
joinability J (Eq. 2): the number of distinct query key tuples π_Q(d) that occur in the table under the
best injective mapping of the key columns to table columns (tuples with a null are never joinable;
duplicate query rows count once; one table row can match only one tuple under a fixed mapping).

The search follows Algorithm 1:

1. initialisation (§6.1): the initial column q' is the key column with the fewest distinct values (over the
   query rows whose key is complete; ties: the first in Q); the posting lists of its values are fetched and
   grouped by table; tables are visited in decreasing number of fetched items L_t (ties: smaller table id).
   Query super keys are the OR of the hashes of each distinct key tuple's values, looked up by q' value.
2. table filtering (§6.2), applied only once k joinable tables (J > 0) are in the top-k heap, with J_k the
   k-th best score: rule 1 (line 9) stops the search at the first table with L_t <= J_k — later tables have
   no more items; rule 2 (line 14) skips the current table as soon as L_t - r_checked + r_match <= J_k,
   r_checked being the items examined so far and r_match those that passed the row filter.
3. row filtering (§6.3, lines 16-20): an item passes with a query tuple of its value when the tuple's super
   key is a subset of the item's row super key (``query | row == row``; :func:`row_filter`, which the
   Delta search of ``discover`` applies to the items it fetches too). SCR does no super-key test: it
   checks each candidate row exactly against the tuple (§7.1.1, "validates them through exact value
   comparisons"); :func:`algorithm_1` without a hasher does that, so that SCR
   (``lakemeta.reference.scr_search``) runs the same table rules and only the row filter differs. Both
   bounds above stay valid because a truly joinable item always passes.
4. calculateJ (line 21): for each passing (item, tuple) pair, every injective mapping with q' -> the item's
   column and each other key column -> a column of the same row holding the tuple's value is enumerated;
   J is the largest number of distinct tuples one mapping collects (ties: the lexicographically smallest
   mapping of column ids). This is Eq. 2 exactly, since every joinable (row, tuple) pair has an item of its
   q' value and passes the filter.

Lines 1-6 run in numpy; lines 7-24, the loop over the candidate tables with both rules, the row filter,
calculateJ and the top-k heap, run in one numba kernel (``_visit_tables``). The heap orders by J and, among
equal J, evicts the table visited later, so at the k-th place the table visited first stays.

Values of the query are normalised with ``normalise.normalise_values``; the index must hold normalised
values (``index.table_postings`` does so) and super keys made with the same hasher.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.arrays import expand_ranges
from lakemeta.joinsearch.index import PostingIndex, as_numpy_strings
from lakemeta.joinsearch.normalise import normalise_values
from lakemeta.joinsearch.superkey import SuperKeyHasher


@dataclass
class SearchCounters:
    """What the search did; items are posting-list items of the initial column (candidate rows of Alg. 1).

    The row filter's precision is ``items_joinable / items_passed`` (1.0 for SCR).
    """

    tables_candidate: int = 0  # tables with at least one fetched item
    tables_evaluated: int = 0  # tables whose J was computed
    tables_skipped_rule2: int = 0  # tables abandoned by rule 2 (line 14)
    tables_stopped_rule1: int = 0  # tables never visited because rule 1 (line 9) ended the search
    items_fetched: int = 0  # posting-list items of the initial column's values
    items_checked: int = 0  # items examined by the row filter (r_checked summed over tables)
    items_passed: int = 0  # items passing the row filter with at least one query tuple
    items_joinable: int = 0  # passed items whose row truly holds a query key tuple
    pairs_compared: int = 0  # (item, query tuple) super-key comparisons (MATE) or exact checks (SCR)
    # Wall time of lines 1-5 (encoding the query, fetching and ordering the posting lists: the same work
    # for MATE and SCR) and of lines 6-24 (row filter, table rules, joinability: where they differ, the
    # part §7.2's Figure 4 compares, "the depicted runtime does not contain the fetching time").
    fetch_seconds: float = 0.0
    filter_and_join_seconds: float = 0.0


@dataclass(frozen=True)
class JoinableTable:
    """A result: table id, its joinability J and the table column id chosen for each query key column."""

    table_id: int
    joinability: int
    column_mapping: tuple[int, ...]


@dataclass(frozen=True)
class SearchResult:
    """Top-k tables, best first (J descending, then table id), the initial column q' and the counters."""

    tables: list[JoinableTable]
    initial_column: int
    counters: SearchCounters = field(default_factory=SearchCounters)


@dataclass(frozen=True)
class EncodedQuery:
    """The query reduced to integer codes of its distinct normalised key values."""

    tuples: np.ndarray  # (n_tuples, m) int64 codes of the distinct complete key tuples
    distinct_values: pa.Array  # large_string, code -> value
    initial_column: int


def encode_query(key_columns: Sequence[pa.Array | pa.ChunkedArray]) -> EncodedQuery:
    if not key_columns:
        raise ValueError("the query needs at least one key column")
    normalised = [normalise_values(column).cast(pa.large_string()) for column in key_columns]
    distinct = pc.unique(pc.drop_null(pa.chunked_array(normalised, type=pa.large_string())).combine_chunks())
    codes = np.column_stack(
        [
            pc.fill_null(pc.index_in(column, value_set=distinct), -1)
            .to_numpy(zero_copy_only=False)
            .astype(np.int64)
            for column in normalised
        ]
    )
    complete = codes[(codes >= 0).all(axis=1)]
    tuples = np.unique(complete, axis=0) if len(complete) else complete.reshape(0, len(normalised))
    cardinalities = [len(np.unique(tuples[:, j])) for j in range(tuples.shape[1])]
    return EncodedQuery(tuples, distinct, int(np.argmin(cardinalities)))


@dataclass(frozen=True)
class TupleSuperKeys:
    """Alg. 1 line 6: the super key of each distinct key tuple (its values' hashes OR-ed), and the tuples
    of each initial-column value: those of value code v are ``order[start[v]:start[v + 1]]``."""

    keys: np.ndarray  # uint64, (n_tuples, n_words); one zero word each without a hasher (SCR)
    order: np.ndarray  # int64 tuple numbers, sorted by their initial-column value code
    start: np.ndarray  # int64, n_distinct_values + 1


def tuple_super_keys(query: EncodedQuery, hasher: SuperKeyHasher | None) -> TupleSuperKeys:
    """The query's tuple super keys made with ``hasher`` (the one the items' super keys were made with)."""
    tuples, initial, n_values = query.tuples, query.initial_column, len(query.distinct_values)
    if hasher is None:
        keys = np.zeros((len(tuples), 1), np.uint64)
    else:
        keys = np.bitwise_or.reduce(hasher.hash_values(query.distinct_values)[tuples], axis=1)
    start = np.zeros(n_values + 1, np.int64)
    np.cumsum(np.bincount(tuples[:, initial], minlength=n_values), out=start[1:])
    return TupleSuperKeys(keys, np.argsort(tuples[:, initial], kind="stable"), start)


@numba.njit(cache=True, inline="always")
def _covered(tuple_keys: np.ndarray, t: int, item_keys: np.ndarray, item: int) -> bool:
    """Alg. 1 line 18: is tuple ``t``'s super key a subset of item ``item``'s row super key
    (``query | row == row``, word by word)?"""
    for w in range(item_keys.shape[1]):  # noqa: SIM110 - an explicit loop compiles to a tight numba loop
        if (tuple_keys[t, w] | item_keys[item, w]) != item_keys[item, w]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _passing_items(
    codes: np.ndarray,
    item_keys: np.ndarray,
    tuple_start: np.ndarray,
    tuple_order: np.ndarray,
    tuple_keys: np.ndarray,
) -> np.ndarray:
    passing = np.zeros(codes.shape[0], np.bool_)
    for i in range(codes.shape[0]):
        for p in range(tuple_start[codes[i]], tuple_start[codes[i] + 1]):
            if _covered(tuple_keys, tuple_order[p], item_keys, i):
                passing[i] = True
                break
    return passing


def row_filter(codes: np.ndarray, item_keys: np.ndarray, tuples: TupleSuperKeys) -> np.ndarray:
    """Alg. 1 lines 16-18 per item: does some query tuple of the item's value (its code in the query's
    distinct values, an initial-column value) have a super key covered by the item's row super key
    (``item_keys``, uint64 of shape (n, n_words))? Stops at the first tuple that passes."""
    return _passing_items(codes, item_keys, tuples.start, tuples.order, tuples.keys)


@numba.njit(cache=True, nogil=True)
def _code_items(starts: np.ndarray, stops: np.ndarray, n_items: int) -> np.ndarray:
    """Query-value code of every index item (-1 when its value is no query key value)."""
    item_code = np.full(n_items, -1, np.int64)
    for code in range(starts.shape[0]):
        item_code[starts[code] : stops[code]] = code
    return item_code


@numba.njit(cache=True, inline="always")
def _pair_mappings(
    item: int,
    tuple_codes: np.ndarray,
    initial: int,
    column_ids: np.ndarray,
    item_code: np.ndarray,
    row_of_item: np.ndarray,
    row_offsets: np.ndarray,
    row_items: np.ndarray,
    candidates: np.ndarray,
    n_candidates: np.ndarray,
    choice: np.ndarray,
    limit: int,
    out: np.ndarray,
    out_start: int,
    write: bool,
) -> int:
    """Injective mappings of the key columns onto the columns of ``item``'s row that spell the tuple, with
    the initial column on the item's own column. Stops after ``limit``; writes them to ``out`` if asked."""
    m = tuple_codes.shape[0]
    row = row_of_item[item]
    for j in range(m):
        n_candidates[j] = 0
        if j == initial:
            candidates[j, 0] = column_ids[item]
            n_candidates[j] = 1
            continue
        for p in range(row_offsets[row], row_offsets[row + 1]):
            cell = row_items[p]
            if item_code[cell] == tuple_codes[j]:
                candidates[j, n_candidates[j]] = column_ids[cell]
                n_candidates[j] += 1
        if n_candidates[j] == 0:
            return 0
    choice[:] = 0
    found = 0
    while True:
        injective = True
        for a in range(m):
            for b in range(a + 1, m):
                if candidates[a, choice[a]] == candidates[b, choice[b]]:
                    injective = False
        if injective:
            if write:
                for j in range(m):
                    out[out_start + found, j] = candidates[j, choice[j]]
            found += 1
            if found == limit:
                return found
        j = m - 1  # odometer step over the candidate columns of each key column
        while j >= 0:
            choice[j] += 1
            if choice[j] < n_candidates[j]:
                break
            choice[j] = 0
            j -= 1
        if j < 0:
            return found


@numba.njit(cache=True, inline="always")
def _pair_mappings_workspace(m: int, max_width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Work arrays of ``_pair_mappings`` for m key columns: candidates, their counts, the odometer's
    choice, and a one-row ``out`` for calls that only count (``write=False``)."""
    candidates = np.empty((m, max_width), np.int64)
    n_candidates = np.empty(m, np.int64)
    choice = np.empty(m, np.int64)
    scratch = np.empty((1, m), np.int64)
    return candidates, n_candidates, choice, scratch


@numba.njit(cache=True, nogil=True)
def _scan_table(
    items: np.ndarray,
    item_code: np.ndarray,
    item_keys: np.ndarray,
    tuple_start: np.ndarray,
    tuple_order: np.ndarray,
    tuple_keys: np.ndarray,
    tuples: np.ndarray,
    initial: int,
    use_super_key: bool,
    apply_rule2: bool,
    bound: int,
    column_ids: np.ndarray,
    row_of_item: np.ndarray,
    row_offsets: np.ndarray,
    row_items: np.ndarray,
    max_width: int,
    pair_items: np.ndarray,
    pair_tuples: np.ndarray,
) -> tuple[int, int, int, int, bool]:
    """Alg. 1 lines 13-20 over one table's items with rule 2 (line 14) checked before each item.

    Returns (items checked, passing pairs written, items passed, pairs compared, skipped by rule 2)."""
    candidates, n_candidates, choice, scratch = _pair_mappings_workspace(tuples.shape[1], max_width)
    n_items = items.shape[0]
    n_pairs = 0
    passed_items = 0
    compared = 0
    for i in range(n_items):
        if apply_rule2 and n_items - i + passed_items <= bound:
            return i, n_pairs, passed_items, compared, True
        item = items[i]
        code = item_code[item]
        passed = False
        for p in range(tuple_start[code], tuple_start[code + 1]):
            t = tuple_order[p]
            compared += 1
            if use_super_key:
                ok = _covered(tuple_keys, t, item_keys, item)
            else:
                ok = (
                    _pair_mappings(
                        item,
                        tuples[t],
                        initial,
                        column_ids,
                        item_code,
                        row_of_item,
                        row_offsets,
                        row_items,
                        candidates,
                        n_candidates,
                        choice,
                        1,
                        scratch,
                        0,
                        False,
                    )
                    > 0
                )
            if ok:
                pair_items[n_pairs] = item
                pair_tuples[n_pairs] = t
                n_pairs += 1
                passed = True
        if passed:
            passed_items += 1
    return n_items, n_pairs, passed_items, compared, False


@numba.njit(cache=True, nogil=True)
def _mappings_of_pairs(
    pair_items: np.ndarray,
    pair_tuples: np.ndarray,
    tuples: np.ndarray,
    initial: int,
    column_ids: np.ndarray,
    item_code: np.ndarray,
    row_of_item: np.ndarray,
    row_offsets: np.ndarray,
    row_items: np.ndarray,
    max_width: int,
    limit: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (mapping, tuple) the pairs realise (at most ``limit`` per pair), and the count per pair."""
    m = tuples.shape[1]
    candidates, n_candidates, choice, scratch = _pair_mappings_workspace(m, max_width)
    n_pairs = pair_items.shape[0]
    counts = np.empty(n_pairs, np.int64)
    for p in range(n_pairs):
        counts[p] = _pair_mappings(
            pair_items[p],
            tuples[pair_tuples[p]],
            initial,
            column_ids,
            item_code,
            row_of_item,
            row_offsets,
            row_items,
            candidates,
            n_candidates,
            choice,
            limit,
            scratch,
            0,
            False,
        )
    mappings = np.empty((counts.sum(), m), np.int64)
    mapping_tuples = np.empty(counts.sum(), np.int64)
    start = 0
    for p in range(n_pairs):
        _pair_mappings(
            pair_items[p],
            tuples[pair_tuples[p]],
            initial,
            column_ids,
            item_code,
            row_of_item,
            row_offsets,
            row_items,
            candidates,
            n_candidates,
            choice,
            limit,
            mappings,
            start,
            True,
        )
        mapping_tuples[start : start + counts[p]] = pair_tuples[p]
        start += counts[p]
    return mappings, mapping_tuples, counts


@numba.njit(cache=True, nogil=True)
def _best_mapping(mappings: np.ndarray, mapping_tuples: np.ndarray, best: np.ndarray) -> int:
    """Eq. 2: the mapping that collects the most distinct tuples (ties: the lexicographically smallest),
    written to ``best``; returns that number. The (mapping, tuple) rows are put in lexicographic order by
    stable sorts from the last key to the first, then each mapping's run counts its distinct tuples."""
    n, m = mappings.shape
    order = np.argsort(mapping_tuples, kind="mergesort")
    for j in range(m - 1, -1, -1):
        order = order[np.argsort(mappings[order, j], kind="mergesort")]
    best_count = 0
    run_count = 0
    for r in range(n):
        row = order[r]
        if r == 0:
            new_mapping = True
        else:
            previous = order[r - 1]
            new_mapping = False
            for j in range(m):
                if mappings[row, j] != mappings[previous, j]:
                    new_mapping = True
                    break
        if new_mapping:
            run_count = 1
        elif mapping_tuples[row] != mapping_tuples[previous]:
            run_count += 1
        if run_count > best_count:  # strictly more: the first (smallest) mapping keeps a tie
            best_count = run_count
            best[:] = mappings[row]
    return best_count


@numba.njit(cache=True, inline="always")
def _ranks_below(j: np.ndarray, position: np.ndarray, a: int, b: int) -> bool:
    """Heap order of Alg. 1's top-k (line 22): by J, and among equal J the table visited later first, so
    that it is the one a better table replaces (the earlier-visited keeps its place at the k-th rank)."""
    return j[a] < j[b] or (j[a] == j[b] and position[a] > position[b])


@numba.njit(cache=True, inline="always")
def _sift_down(heap: np.ndarray, size: int, j: np.ndarray, position: np.ndarray, at: int) -> None:
    while True:
        smallest = at
        for child in (2 * at + 1, 2 * at + 2):
            if child < size and _ranks_below(j, position, heap[child], heap[smallest]):
                smallest = child
        if smallest == at:
            return
        heap[at], heap[smallest] = heap[smallest], heap[at]
        at = smallest


@numba.njit(cache=True, inline="always")
def _sift_up(heap: np.ndarray, j: np.ndarray, position: np.ndarray, at: int) -> None:
    while at > 0:
        parent = (at - 1) // 2
        if not _ranks_below(j, position, heap[at], heap[parent]):
            return
        heap[at], heap[parent] = heap[parent], heap[at]
        at = parent


@numba.njit(cache=True, nogil=True)
def _visit_tables(
    visit: np.ndarray,
    table_starts: np.ndarray,
    hits: np.ndarray,
    fetched: np.ndarray,
    pairs_per_item: np.ndarray,
    item_code: np.ndarray,
    item_keys: np.ndarray,
    tuple_start: np.ndarray,
    tuple_order: np.ndarray,
    tuple_keys: np.ndarray,
    tuples: np.ndarray,
    initial: int,
    use_super_key: bool,
    k: int,
    column_ids: np.ndarray,
    row_of_item: np.ndarray,
    row_offsets: np.ndarray,
    row_items: np.ndarray,
    max_width: int,
    counters: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Alg. 1 lines 7-24 over the tables in visiting order, with the top-k heap.

    Returns, for the (at most k) tables kept: their index into ``table_starts``, J and mapping, in heap
    order. ``counters`` receives rule-1 stops, items checked, passed, pairs compared,
    items joinable, rule-2 skips and tables evaluated."""
    m = tuples.shape[1]
    slot_table = np.empty(k, np.int64)  # entry s of the top-k: table, J, visiting position, mapping
    slot_j = np.empty(k, np.int64)
    slot_position = np.empty(k, np.int64)
    slot_mapping = np.empty((k, m), np.int64)
    heap = np.arange(k)  # entries by heap order; slots are filled in order and then reused by replacement
    size = 0
    capacity = 0
    for t in visit:
        capacity = max(capacity, pairs_per_item[table_starts[t] : table_starts[t] + hits[t]].sum())
    pair_items = np.empty(capacity, np.int64)
    pair_tuples = np.empty(capacity, np.int64)
    best = np.empty(m, np.int64)
    for position in range(visit.shape[0]):
        t = visit[position]
        full = size == k
        kth = slot_j[heap[0]] if full else 0
        if full and hits[t] <= kth:  # rule 1, line 9
            counters[0] = visit.shape[0] - position
            break
        items = fetched[table_starts[t] : table_starts[t] + hits[t]]
        checked, n_pairs, passed, compared, skipped = _scan_table(
            items,
            item_code,
            item_keys,
            tuple_start,
            tuple_order,
            tuple_keys,
            tuples,
            initial,
            use_super_key,
            full,
            kth,
            column_ids,
            row_of_item,
            row_offsets,
            row_items,
            max_width,
            pair_items,
            pair_tuples,
        )
        counters[1] += checked
        counters[2] += passed
        counters[3] += compared
        # Line 21; a table skipped by rule 2 only has its passed pairs verified, for the counters.
        mappings, mapping_tuples, per_pair = _mappings_of_pairs(
            pair_items[:n_pairs],
            pair_tuples[:n_pairs],
            tuples,
            initial,
            column_ids,
            item_code,
            row_of_item,
            row_offsets,
            row_items,
            max_width,
            1 if skipped else np.iinfo(np.int64).max,
        )
        last_joinable = -1  # the pairs of one item are consecutive
        for p in range(n_pairs):
            if per_pair[p] > 0 and pair_items[p] != last_joinable:
                counters[4] += 1
                last_joinable = pair_items[p]
        if skipped:
            counters[5] += 1
            continue
        counters[6] += 1
        if mappings.shape[0] == 0:
            continue
        joinability = _best_mapping(mappings, mapping_tuples, best)
        if not full:  # line 22
            slot = size
            size += 1
        elif joinability > kth:
            slot = heap[0]
        else:
            continue
        slot_table[slot], slot_j[slot], slot_position[slot] = t, joinability, position
        slot_mapping[slot] = best
        if full:
            _sift_down(heap, size, slot_j, slot_position, 0)
        else:
            heap[size - 1] = slot
            _sift_up(heap, slot_j, slot_position, size - 1)
    kept = heap[:size]
    return slot_table[kept], slot_j[kept], slot_mapping[kept]


def algorithm_1(
    index: PostingIndex,
    key_columns: Sequence[pa.Array | pa.ChunkedArray],
    k: int,
    hasher: SuperKeyHasher | None,
) -> SearchResult:
    """Alg. 1 with both table rules (module docstring). Candidate rows pass the row filter of super keys
    made with ``hasher`` (MATE) or, with None, an exact check against the tuple (SCR, §7.1.1)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    if hasher is not None and hasher.n_words != index.n_words:
        raise ValueError("the hasher and the index super keys differ in size")
    started = time.perf_counter()
    query = encode_query(key_columns)
    counters = SearchCounters()
    initial = query.initial_column
    tuples = query.tuples
    if len(tuples) == 0:
        return SearchResult([], initial, counters)
    # Lines 3-5: fetch the posting lists of the initial column's values; order tables by their hits.
    starts, stops = index.value_ranges(as_numpy_strings(query.distinct_values))
    item_code = _code_items(starts, stops, index.n_items)
    initial_codes = np.unique(tuples[:, initial])
    fetched = expand_ranges(starts[initial_codes], stops[initial_codes])
    fetched = fetched[
        np.lexsort((index.column_ids[fetched], index.row_ids[fetched], index.table_ids[fetched]))
    ]
    tables, table_starts, hits = np.unique(index.table_ids[fetched], return_index=True, return_counts=True)
    visit = np.lexsort((tables, -hits))
    counters.tables_candidate = len(tables)
    counters.items_fetched = len(fetched)
    fetched_at = time.perf_counter()
    counters.fetch_seconds = fetched_at - started

    query_keys = tuple_super_keys(query, hasher)  # line 6
    tuple_start = query_keys.start
    counts = np.zeros(7, np.int64)
    kept, joinability, mappings = _visit_tables(
        visit,
        table_starts,
        hits,
        fetched,
        tuple_start[item_code[fetched] + 1] - tuple_start[item_code[fetched]],
        item_code,
        index.super_keys,
        tuple_start,
        query_keys.order,
        query_keys.keys,
        tuples,
        initial,
        hasher is not None,
        k,
        index.column_ids,
        index.row_of_item,
        index.row_offsets,
        index.row_items,
        index.max_row_width(),
        counts,
    )
    (
        counters.tables_stopped_rule1,
        counters.items_checked,
        counters.items_passed,
        counters.pairs_compared,
        counters.items_joinable,
        counters.tables_skipped_rule2,
        counters.tables_evaluated,
    ) = (int(c) for c in counts)
    table_ids = tables[kept]
    ranked = np.lexsort((table_ids, -joinability))
    counters.filter_and_join_seconds = time.perf_counter() - fetched_at
    return SearchResult(
        [
            JoinableTable(int(table_ids[r]), int(joinability[r]), tuple(int(c) for c in mappings[r]))
            for r in ranked
        ],
        initial,
        counters,
    )


def mate_search(
    index: PostingIndex, key_columns: Sequence[pa.Array | pa.ChunkedArray], k: int, hasher: SuperKeyHasher
) -> SearchResult:
    """MATE (Alg. 1): top-k joinable tables for the query key columns, rows filtered by super keys.

    ``hasher`` must be the one the index's super keys were made with (XASH, or a Bloom hasher for the BF
    variant of §7.1.2, ``lakemeta.reference.bloom_superkey``).
    """
    return algorithm_1(index, key_columns, k, hasher)
