"""MATE search (search.py): exact top-k against brute force over every table and every column mapping;
MATE with XASH (three sizes), MATE with the Bloom key and SCR (``lakemeta.reference``) agree; the two table
rules and the counters."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.joinsearch.index import PostingIndex
from lakemeta.joinsearch.search import SearchResult, mate_search
from lakemeta.joinsearch.xash import N_CHAR_CLASSES, XashHasher
from lakemeta.reference.bloom_superkey import BloomHasher
from lakemeta.reference.scr_search import scr_search

from .corpus import Table, brute_force, build_index, columns_of, joinability, normalised_rows, top_k_scores

# Spellings that normalise to the same value sit together; None and "" are missing values.
SPELLINGS = [
    ["a", "A", " a "],
    ["3", "3.0", "+03", "003.00"],
    ["x y", "X  Y", "x\ty "],
    ["lee", "LEE"],
    ["us"],
    ["b"],
    ["7"],
    ["0.5", ".50"],
    ["über", "ÜBER"],
    [None, ""],
]
CELLS = [s for group in SPELLINGS for s in group]

FIGURE_1_T1 = [
    ["Helmut", "Newton", "Germany", "Photographer"],
    ["Muhammad", "Lee", "US", "Dancer"],
    ["Ansel", "Adams", "UK", "Dancer"],
    ["Ansel", "Adams", "US", "Photographer"],
    ["Muhammad", "Ali", "US", "Boxer"],
    ["Muhammad", "Lee", "Germany", "Birder"],
    ["Gretchen", "Lee", "Germany", "Artist"],
    ["Adam", "Sandler", "US", "Actor"],
]
FIGURE_1_D = [
    ["Muhammad", "Lee", "US", "60k"],
    ["Ansel", "Adams", "UK", "50k"],
    ["Ansel", "Adams", "US", "400k"],
    ["Muhammad", "Lee", "Germany", "90k"],
    ["Helmut", "Newton", "Germany", "300k"],
]


def xash_for(tables: dict[int, Table], hash_bits: int) -> XashHasher:
    distinct = {
        v
        for rows in tables.values()
        for row in normalised_rows(rows, len(rows[0]) if rows else 0)
        for v in row
        if v is not None
    }
    return XashHasher.from_corpus(pa.array(sorted(distinct), pa.string()), hash_bits)


def all_variants(tables: dict[int, Table], query: list[pa.Array], k: int) -> dict[str, SearchResult]:
    results = {
        "scr": scr_search(build_index(tables, XashHasher.eq5(128, 1, (0,) * N_CHAR_CLASSES)), query, k)
    }
    hashers = {f"xash{bits}": xash_for(tables, bits) for bits in (128, 256, 512)}
    hashers.update({f"xash_authors{bits}": XashHasher.authors(bits) for bits in (128, 256, 512)})
    hashers["xash128_alpha6"] = XashHasher.eq5(128, 6, tuple(range(N_CHAR_CLASSES)))
    hashers["bloom"] = BloomHasher.for_row_width(256, 4)
    for name, hasher in hashers.items():
        results[name] = mate_search(build_index(tables, hasher), query, k, hasher)
    return results


def test_figure_1_running_example() -> None:
    # §2: mapping F. Name -> Vorname, L. Name -> Nachname, Country -> Land gives J = 5
    tables = {1: FIGURE_1_T1, 2: [row[::-1] for row in FIGURE_1_T1[:3]]}
    query = columns_of(FIGURE_1_D, 4)[:3]
    for name, result in all_variants(tables, query, 2).items():
        assert [(t.table_id, t.joinability, t.column_mapping) for t in result.tables] == [
            (1, 5, (0, 1, 2)),
            (2, 3, (3, 2, 1)),
        ], name
    hasher = XashHasher.eq5(128, 6, (0,) * N_CHAR_CLASSES)
    counters = mate_search(build_index(tables, hasher), query, 2, hasher).counters
    # "Muhammad Ali US" is a candidate row of "Muhammad" that cannot hold (muhammad, lee, us) or
    # (muhammad, lee, germany): the super key drops it (Example 3). Items: 6 in T1, 3 in table 2.
    assert counters.items_checked == 9
    assert counters.items_joinable == counters.items_passed == 8


@st.composite
def corpora(draw: st.DrawFn) -> tuple[dict[int, Table], Table, int, int]:
    n_key = draw(st.integers(1, 3))
    cell = st.sampled_from(CELLS)
    query = draw(st.lists(st.lists(cell, min_size=n_key, max_size=n_key), min_size=1, max_size=6))
    tables = {}
    for table_id in draw(st.lists(st.integers(0, 50), min_size=1, max_size=6, unique=True)):
        width = draw(st.integers(1, 5))
        rows = draw(st.lists(st.lists(cell, min_size=width, max_size=width), max_size=8))
        if width >= n_key:  # plant query tuples, respelled, into a random injective set of columns
            columns = draw(st.permutations(range(width)))[:n_key]
            for q in draw(st.lists(st.sampled_from(query), max_size=6)):
                row = draw(st.lists(cell, min_size=width, max_size=width))
                for j, c in enumerate(columns):
                    group = next(g for g in SPELLINGS if q[j] in g)
                    row[c] = draw(st.sampled_from(group))
                rows.insert(draw(st.integers(0, len(rows))), row)
        if rows and draw(st.booleans()):
            rows.append(list(draw(st.sampled_from(rows))))  # a duplicate row
        tables[table_id] = rows
    return tables, query, n_key, draw(st.integers(1, 4))


@settings(max_examples=60, deadline=None)
@given(corpora())
def test_top_k_equals_brute_force_for_every_variant(corpus: tuple) -> None:
    tables, query_rows, n_key, k = corpus
    expected = brute_force(tables, query_rows, n_key)
    query = columns_of(query_rows, n_key)
    for name, result in all_variants(tables, query, k).items():
        assert [t.joinability for t in result.tables] == top_k_scores(expected, k), name
        for t in result.tables:
            j, best_mappings = expected[t.table_id]
            assert t.joinability == j and t.column_mapping in best_mappings, name


@settings(max_examples=30, deadline=None)
@given(corpora())
def test_counters_without_pruning(corpus: tuple) -> None:
    # with k larger than the number of tables no rule fires: every fetched item is checked, and MATE's
    # truly joinable items are exactly SCR's passed items (the filter has no false negatives)
    tables, query_rows, n_key, _ = corpus
    query = columns_of(query_rows, n_key)
    hasher = xash_for(tables, 128)
    mate = mate_search(build_index(tables, hasher), query, 100, hasher).counters
    scr = scr_search(build_index(tables, hasher), query, 100).counters
    for c in (mate, scr):
        assert c.tables_stopped_rule1 == c.tables_skipped_rule2 == 0
        assert c.items_checked == c.items_fetched
        assert c.tables_evaluated == c.tables_candidate
    assert scr.items_passed == scr.items_joinable == mate.items_joinable <= mate.items_passed
    assert mate.pairs_compared == scr.pairs_compared


def test_rule_1_stops_the_search() -> None:
    # k = 1: table 0 has 4 joinable rows (4 items of the initial column); table 1 has 3 items, 3 <= J_k = 4
    query_rows = [["a", "1"], ["b", "2"], ["c", "3"], ["d", "4"]]
    tables = {0: [list(r) for r in query_rows], 1: [["a", "1"], ["b", "2"], ["c", "3"]], 2: [["a", "1"]]}
    result = scr_search(
        build_index(tables, XashHasher.eq5(128, 3, (0,) * N_CHAR_CLASSES)), columns_of(query_rows, 2), 1
    )
    assert [(t.table_id, t.joinability) for t in result.tables] == [(0, 4)]
    assert result.counters.tables_stopped_rule1 == 2 and result.counters.tables_evaluated == 1


def test_rule_2_skips_a_table() -> None:
    # k = 1: table 0 (6 items of the initial column "k", visited first) has J = 3. Table 1 has 5 items, so
    # rule 1 (5 <= 3) does not fire, but its first rows carry other second values: after 2 failed items
    # 5 - 2 + 0 <= 3 and the table is abandoned (rule 2).
    query_rows = [["k", "1"], ["k", "2"], ["k", "3"]]
    tables = {
        0: [["k", "1"], ["k", "2"], ["k", "3"]] * 2,
        1: [["k", "7"], ["k", "8"], ["k", "9"], ["k", "1"], ["k", "2"]],
    }
    for hasher in (XashHasher.eq5(128, 4, (0,) * N_CHAR_CLASSES), None):
        index = build_index(tables, hasher or XashHasher.eq5(128, 4, (0,) * N_CHAR_CLASSES))
        query = columns_of(query_rows, 2)
        result = mate_search(index, query, 1, hasher) if hasher else scr_search(index, query, 1)
        assert [(t.table_id, t.joinability) for t in result.tables] == [(0, 3)]
        c = result.counters
        assert c.tables_skipped_rule2 == 1 and c.tables_evaluated == 1 and c.tables_stopped_rule1 == 0
        assert c.items_checked == 6 + 2 and c.items_fetched == 11
        assert c.items_joinable == c.items_passed == 6


def test_rules_keep_a_table_that_can_still_win() -> None:
    # Boundaries of both rules (strict enough to keep a table that can still beat J_k), k = 1.
    query = columns_of([["k", "1"], ["k", "2"], ["k", "3"], ["k", "4"]], 2)
    # the first table visited: 7 items, J = 3
    first = [["k", "1"], ["k", "2"], ["k", "3"], ["k", "7"], ["k", "8"], ["k", "9"], ["k", "6"]]
    # rule 1: 4 items > J_k = 3, all joinable
    # rule 2: after two failed items 6 - 2 + 0 = 4 > 3, and the last four items are joinable
    for second in (
        [["k", "1"], ["k", "2"], ["k", "3"], ["k", "4"]],
        [["k", "8"], ["k", "9"], ["k", "1"], ["k", "2"], ["k", "3"], ["k", "4"]],
    ):
        tables = {0: first, 1: second}
        hasher = XashHasher.eq5(128, 4, (0,) * N_CHAR_CLASSES)
        index = build_index(tables, hasher)
        for result in (mate_search(index, query, 1, hasher), scr_search(index, query, 1)):
            assert [(t.table_id, t.joinability) for t in result.tables] == [(1, 4)]
            assert result.counters.tables_evaluated == 2


def test_initial_column_has_the_smallest_cardinality() -> None:
    query_rows = [["a", "x", None], ["b", "x", "p"], ["c", "y", "p"], ["c", "y", "p"]]
    tables = {0: [["p", "y", "c"]]}
    result = scr_search(
        build_index(tables, XashHasher.eq5(128, 2, (0,) * N_CHAR_CLASSES)), columns_of(query_rows, 3), 3
    )
    # complete distinct tuples: (b, x, p), (c, y, p) -> cardinalities 2, 2, 1
    assert result.initial_column == 2
    assert [(t.table_id, t.joinability, t.column_mapping) for t in result.tables] == [(0, 1, (2, 1, 0))]


def test_repeated_value_in_a_key_needs_two_columns() -> None:
    # the tuple (a, a) joins a row only where "a" fills two different columns
    query = columns_of([["a", "A"]], 2)
    tables = {0: [["a", "b"]], 1: [["b", "a", "a"]]}
    result = scr_search(build_index(tables, XashHasher.eq5(256, 3, (0,) * N_CHAR_CLASSES)), query, 5)
    assert [(t.table_id, t.joinability, t.column_mapping) for t in result.tables] == [(1, 1, (1, 2))]
    assert joinability({("a", "a")}, [["b", "a", "a"]], (1, 2)) == 1


def test_degenerate_queries() -> None:
    hasher = XashHasher.eq5(128, 3, (0,) * N_CHAR_CLASSES)
    index = build_index({0: [["a", "b"]]}, hasher)
    assert mate_search(index, [pa.array([None, ""], pa.string())], 3, hasher).tables == []
    assert mate_search(index, [pa.array(["zzz"])], 3, hasher).tables == []
    assert mate_search(index, [pa.chunked_array([["B"]])], 3, hasher).tables[0].joinability == 1
    with pytest.raises(ValueError):
        mate_search(index, [pa.array(["a"])], 0, hasher)
    with pytest.raises(ValueError):
        mate_search(index, [pa.array(["a"])], 1, XashHasher.eq5(256, 3, (0,) * N_CHAR_CLASSES))
    empty = PostingIndex.from_arrays(pa.array([], pa.string()), [], [], [], np.zeros((0, 2), np.uint64))
    assert scr_search(empty, [pa.array(["a"])], 2).tables == []


def test_a_better_table_replaces_the_later_visited_of_equal_ones() -> None:
    # k = 2. Tables 1 and 2 (3 items of the initial column each, J = 1) fill the top-k; table 3 (2 items,
    # visited last, J = 2) replaces the one of J = 1 visited later (table 2): at the k-th place the table
    # Algorithm 1 visits first stays.
    query = columns_of([["a", "1"], ["b", "2"]], 2)
    equal = [["a", "1"], ["a", "7"], ["b", "8"]]
    tables = {1: equal, 2: [list(row) for row in equal], 3: [["a", "1"], ["b", "2"]]}
    hasher = XashHasher.authors(128)
    index = build_index(tables, hasher)
    for result in (mate_search(index, query, 2, hasher), scr_search(index, query, 2)):
        assert [(t.table_id, t.joinability) for t in result.tables] == [(3, 2), (1, 1)]
        assert result.counters.tables_evaluated == 3
