import re

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.inds.bloom import BloomParams
from lakemeta.inds.config import ManyConfig
from lakemeta.inds.filters import TABLE_2_NULL_VALUES, ColumnStats, FilterConfig
from lakemeta.reference.many import discover
from lakemeta.reference.value_store import ValueStore

VOCAB = ["", "N/A", "-", "1", "2", "3", "01", "1.0", "a", "b", "c", "A", "ä", "a b", "x" * 33, "true"]

cell = st.one_of(st.none(), st.sampled_from(VOCAB))
column = st.one_of(
    st.lists(cell, max_size=8),
    st.just([]),  # empty column
    st.lists(st.none(), min_size=1, max_size=3),  # all missing
    st.lists(st.sampled_from(["", "N/A"]), min_size=1, max_size=3),  # only null representations
)
corpus = st.lists(column, min_size=1, max_size=10).flatmap(
    # duplicate some columns so equal value sets (INDs in both directions) occur
    lambda cols: st.lists(st.sampled_from(range(len(cols))), max_size=3).map(
        lambda dup: cols + [cols[i] for i in dup]
    )
)
params_st = st.integers(1, 200).flatmap(
    lambda m: st.builds(BloomParams, st.just(m), st.integers(1, min(m, 8)), st.integers(1, 3))
)


def value_sets(columns):
    return [{v for v in c if v is not None} for c in columns]


def brute_inds(columns):
    """All unary INDs by definition: distinct columns a != b with values(a) ⊆ values(b)."""
    sets = value_sets(columns)
    return {(a, b) for a in range(len(sets)) for b in range(len(sets)) if a != b and sets[a] <= sets[b]}


def arrow(columns):
    return [pa.array(c, pa.string()) for c in columns]


@settings(max_examples=40, deadline=None)
@given(corpus, params_st, st.sampled_from(["dep2refs", "ref2deps"]), st.booleans(), st.integers(1, 3))
def test_many_equals_brute_force_without_filters(columns, params, strategy, indexed, workers):
    store = ValueStore.from_strings(arrow(columns))
    config = ManyConfig(params=params, strategy=strategy, indexed=indexed, filters=FilterConfig.none())
    inds = discover(store, config, n_workers=workers)
    expected = brute_inds(columns)
    assert inds.pairs() == expected
    assert len(inds) == len(expected)
    assert all(d != r for d, r in inds.pairs())
    sets = value_sets(columns)
    assert inds.dep_distinct.tolist() == [len(sets[d]) for d in inds.deps.tolist()]
    assert inds.ref_distinct.tolist() == [len(sets[r]) for r in inds.refs.tolist()]
    assert inds.coverage.tolist() == [
        len(sets[d]) / len(sets[r]) if sets[r] else 1.0
        for d, r in zip(inds.deps.tolist(), inds.refs.tolist(), strict=True)
    ]
    assert list(zip(inds.deps.tolist(), inds.refs.tolist(), strict=True)) == sorted(expected)


@settings(max_examples=25, deadline=None)
@given(corpus, st.lists(params_st, min_size=2, max_size=4))
def test_all_parametrisations_and_strategies_agree(columns, params_list):
    store = ValueStore.from_strings(arrow(columns))
    configs = [
        ManyConfig(params=p, strategy=s, indexed=i, filters=FilterConfig.none())
        for p in params_list
        for s in ("dep2refs", "ref2deps")
        for i in (True, False)
    ]
    results = {frozenset(discover(store, config).pairs()) for config in configs}
    assert results == {frozenset(brute_inds(columns))}


def test_empty_and_missing_columns_are_included_everywhere_without_filters():
    columns = [[], [None, None], ["a"], ["N/A"], ["N/A", "a"]]
    inds = discover(ValueStore.from_strings(arrow(columns)), ManyConfig(filters=FilterConfig.none()))
    assert {(0, b) for b in (1, 2, 3, 4)} <= inds.pairs()
    assert {(1, b) for b in (0, 2, 3, 4)} <= inds.pairs()
    assert (3, 4) in inds.pairs() and (2, 4) in inds.pairs()  # null = null semantics for "N/A"
    assert (0, 0) not in inds.pairs()
    stats = ColumnStats.from_columns(arrow(columns))
    default = discover(ValueStore.from_strings(arrow(columns)), stats=stats)
    assert default.pairs() == {(2, 4)}  # the null filter (on by default) drops columns 0, 1 and 3


def test_keys_store_agrees_with_brute_force():
    rng = np.random.default_rng(11)
    columns = [rng.integers(0, 30, rng.integers(0, 12)).astype(np.uint64) for _ in range(40)]
    inds = discover(ValueStore.from_keys(columns), ManyConfig(filters=FilterConfig.none()))
    sets = [set(c.tolist()) for c in columns]
    assert inds.pairs() == {(a, b) for a in range(40) for b in range(40) if a != b and sets[a] <= sets[b]}


def valued(column, null_values=TABLE_2_NULL_VALUES):
    return [v for v in column if v is not None and v not in null_values]


def brute_filtered(columns, null_cols, int_cols, non_unique, low_cov, tau=0.2):
    """The four rules of §3.2 applied to the brute-force IND set, written plainly."""
    sets = value_sets(columns)
    out = set()
    for a, b in brute_inds(columns):
        dropped = set()
        for c in (a, b):
            vals = valued(columns[c])
            if null_cols and not vals:
                dropped.add(c)
            if int_cols and vals and all(re.fullmatch(r"[+-]?[0-9]+", v) for v in vals):
                dropped.add(c)
        if dropped:
            continue
        ref_vals = valued(columns[b])
        if non_unique and len(set(ref_vals)) < len(ref_vals):
            continue
        if low_cov and sets[b] and len(sets[a]) / len(sets[b]) < tau:
            continue
        out.add((a, b))
    return out


@settings(max_examples=30, deadline=None)
@given(
    corpus,
    st.sampled_from(["null", "integer", "non_unique", "coverage", "web"]),
    st.sampled_from(["dep2refs", "ref2deps"]),
    st.sampled_from([0.2, 0.5]),
)
def test_each_filter_removes_exactly_what_its_rule_says(columns, which, strategy, tau):
    flags = {
        "null": (True, False, False, False),
        "integer": (False, True, False, False),
        "non_unique": (False, False, True, False),
        "coverage": (False, False, False, True),
        "web": (True, True, True, True),
    }[which]
    filters = FilterConfig(*flags, tau=tau)
    store = ValueStore.from_strings(arrow(columns))
    stats = ColumnStats.from_columns(arrow(columns))
    config = ManyConfig(params=BloomParams(64, 2, 2), strategy=strategy, filters=filters)
    inds = discover(store, config, stats)
    assert inds.pairs() == brute_filtered(columns, *flags, tau=tau)
    if which == "coverage":
        assert (inds.coverage >= tau).all()
