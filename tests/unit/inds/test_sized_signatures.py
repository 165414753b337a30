"""Signatures sized to their column (``inds.sized_signatures``): the level rule, folding to the paper's
signature, and the finer check, which never rules out a true inclusion and equals the rule written plainly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.arrays import binary_rows, uint64_rows
from lakemeta.inds.bloom import BloomParams, signatures_from_hashes, sized_signatures, words_at
from lakemeta.inds.sized_signatures import fold_to_base, levels_for, levels_of, may_be_contained


def test_the_level_is_the_fewest_doublings_at_which_k_is_optimal() -> None:
    params = BloomParams()  # m = 650, k = 6: k·n / ln 2 <= 650 up to n = 75
    sizes = np.array([0, 1, 75, 76, 150, 151, 10_000])
    assert levels_for(sizes, params, 5).tolist() == [0, 0, 0, 1, 1, 2, 5]
    assert levels_for(sizes, params, 0).tolist() == [0] * 7
    assert levels_of(words_at(params, np.arange(6)), params).tolist() == list(range(6))
    with pytest.raises(ValueError, match="length of any level"):
        levels_of(np.array([22]), params)


def expected_bits(h: int, m: int, k: int, p: int) -> set[int]:
    h1, h2 = h & 0xFFFFFFFF, (h >> 32) | 1
    return {j * m + (h1 + (j * k + i) * h2) % m for j in range(p) for i in range(k)}


def bits_of(words: np.ndarray) -> set[int]:
    return {b for b in range(len(words) * 64) if (int(words[b >> 6]) >> (b & 63)) & 1}


params_st = st.integers(1, 40).flatmap(
    lambda m: st.builds(BloomParams, st.just(m), st.integers(1, min(m, 3)), st.integers(1, 3))
)
column_st = st.lists(st.integers(0, 2**64 - 1), max_size=12, unique=True)


@settings(max_examples=60, deadline=None)
@given(params_st, st.lists(st.tuples(column_st, st.integers(0, 4)), min_size=1, max_size=5))
def test_a_sized_signature_has_the_double_hash_bits_at_its_m_and_folds_to_the_papers(params, columns) -> None:
    hashes = np.array([h for values, _ in columns for h in values], np.uint64)
    bounds = np.cumsum([0, *(len(values) for values, _ in columns)])
    levels = np.array([level for _, level in columns], np.int64)
    offsets, words = sized_signatures(hashes, bounds, levels, params)
    for c, (values, level) in enumerate(columns):
        m = params.m << level
        expected = (
            set().union(*(expected_bits(h, m, params.k, params.p) for h in values)) if values else set()
        )
        assert bits_of(words[offsets[c] : offsets[c + 1]]) == expected
    assert np.array_equal(
        fold_to_base(offsets, words, levels, params), signatures_from_hashes(hashes, bounds, params)
    )


def test_signatures_all_at_the_papers_m_are_their_own_base_not_a_copy() -> None:
    params = BloomParams(m=100, k=3, p=2)
    hashes = np.random.default_rng(0).integers(0, 2**63, 40).astype(np.uint64)
    bounds = np.array([0, 5, 5, 40])  # one column without a value
    levels = np.zeros(3, np.int64)
    offsets, words = sized_signatures(hashes, bounds, levels, params)
    base = fold_to_base(offsets, words, levels, params)
    assert np.shares_memory(base, words)
    assert np.array_equal(base, signatures_from_hashes(hashes, bounds, params))


def plainly_may_be_contained(
    dep: list[int], ref: list[int], dep_level: int, ref_level: int, kept: bool, params
) -> bool:
    """The finer check written plainly: with the dependent's hashes, each one's bits at the referenced
    column's m; otherwise both columns' bits folded to the coarser level."""
    m, k, p = params.m, params.k, params.p
    ref_bits = set().union(*(expected_bits(h, m << ref_level, k, p) for h in ref)) if ref else set()
    if kept:
        return all(expected_bits(h, m << ref_level, k, p) <= ref_bits for h in dep)

    def folded(values: list[int], level: int, to: int) -> set[int]:
        bits = set().union(*(expected_bits(h, m << level, k, p) for h in values)) if values else set()
        return {(b // (m << level)) * (m << to) + (b % (m << level)) % (m << to) for b in bits}

    to = min(dep_level, ref_level)
    return folded(dep, dep_level, to) <= folded(ref, ref_level, to)


@settings(max_examples=80, deadline=None)
@given(
    params_st,
    st.lists(column_st, min_size=2, max_size=5),
    st.lists(st.integers(0, 4), min_size=5, max_size=5),
    st.lists(st.booleans(), min_size=5, max_size=5),
    st.data(),
)
def test_the_finer_check_equals_the_rule_and_keeps_every_inclusion(
    params, columns, levels, kept, data
) -> None:
    n = len(columns)
    # half of the columns are built as subsets of another, so that true inclusions are common
    columns = [
        sorted(
            data.draw(st.sets(st.sampled_from(columns[c - 1]))) if c and columns[c - 1] and c % 2 else values
        )
        for c, values in enumerate(columns)
    ]
    levels, kept = np.array(levels[:n], np.int64), np.array(kept[:n])
    hashes = np.array([h for values in columns for h in sorted(values)], np.uint64)
    bounds = np.cumsum([0, *(len(values) for values in columns)])
    offsets, words = sized_signatures(hashes, bounds, levels, params)
    value_hashes = binary_rows(hashes, bounds, kept)
    hash_offsets, kept_hashes, has_hashes = uint64_rows(value_hashes)
    pairs = np.array([(d, r) for d in range(n) for r in range(n) if d != r], np.int64)
    found = may_be_contained(
        pairs[:, 0], pairs[:, 1], offsets, words, levels, hash_offsets, kept_hashes, has_hashes, params
    )
    for (d, r), allowed in zip(pairs, found, strict=True):
        assert allowed == plainly_may_be_contained(
            columns[d], columns[r], levels[d], levels[r], bool(kept[d]), params
        )
        if set(columns[d]) <= set(columns[r]):
            assert allowed


def test_a_large_referenced_column_no_longer_admits_every_smaller_one() -> None:
    params = BloomParams()
    rng = np.random.default_rng(3)
    sizes = [2_000, 300, 3]  # levels 5, 2, 0
    hashes = np.concatenate([np.sort(rng.integers(0, 2**63, n, dtype=np.uint64)) for n in sizes])
    bounds = np.cumsum([0, *sizes])
    base = signatures_from_hashes(hashes, bounds, params)
    for smaller in (1, 2):  # the paper's signatures propose both as included in the large column
        assert not np.any(base[smaller] & ~base[0])
    levels = levels_for(np.diff(bounds), params, 5)
    assert levels.tolist() == [5, 2, 0]
    offsets, words = sized_signatures(hashes, bounds, levels, params)
    # the medium column by its signature folded to its level, the small one by its kept hashes
    hash_offsets, kept_hashes, has_hashes = uint64_rows(
        binary_rows(hashes, bounds, np.array([False, False, True]))
    )
    found = may_be_contained(
        np.array([1, 2]),
        np.array([0, 0]),
        offsets,
        words,
        levels,
        hash_offsets,
        kept_hashes,
        has_hashes,
        params,
    )
    assert not found.any()
