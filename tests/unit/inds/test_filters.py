import re

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.inds.filters import (
    TABLE_2_NULL_VALUES,
    ColumnStats,
    FilterConfig,
    column_filters,
    coverage,
    integer_columns,
    low_coverage,
    non_unique_columns,
    null_columns,
)

VOCAB = ["", "N/A", "n/a", "?", "Unknown", "\u2014", "1", "2", "-3", "+4", "007", "1.5", "1e3", "a", "b", "ä"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), st.sampled_from(VOCAB)), max_size=8), min_size=1, max_size=8))
def test_stats_and_column_filters_follow_their_rules(columns):
    stats = ColumnStats.from_columns([pa.array(c, pa.string()) for c in columns])
    valued = [[v for v in c if v is not None and v not in TABLE_2_NULL_VALUES] for c in columns]
    assert stats.n_values.tolist() == [len(v) for v in valued]
    assert stats.n_distinct.tolist() == [len(set(v)) for v in valued]
    is_int = [bool(v) and all(re.fullmatch(r"[+-]?[0-9]+", x) for x in v) for v in valued]
    assert stats.all_integer.tolist() == is_int
    assert null_columns(stats).tolist() == [not v for v in valued]
    assert integer_columns(stats).tolist() == is_int
    assert non_unique_columns(stats).tolist() == [len(set(v)) < len(v) for v in valued]

    n = len(columns)
    cols, refs = column_filters(stats, FilterConfig.web(), n)
    assert cols.tolist() == [(not v) or i for v, i in zip(valued, is_int, strict=True)]
    assert refs.tolist() == [len(set(v)) < len(v) for v in valued]
    cols, refs = column_filters(stats, FilterConfig(), n)
    assert cols.tolist() == [not v for v in valued] and not refs.any()
    cols, refs = column_filters(None, FilterConfig.none(), n)
    assert not cols.any() and not refs.any()


def test_configs_and_custom_null_values():
    assert FilterConfig() == FilterConfig(True, False, False, False, 0.2)
    web = FilterConfig.web()
    assert (web.null_columns, web.integer_columns, web.non_unique_refs, web.low_coverage, web.tau) == (
        True,
        True,
        True,
        True,
        0.2,
    )
    stats = ColumnStats.from_columns([pa.array(["NULL", "NULL"]), pa.array([None])], null_values=("NULL",))
    assert null_columns(stats).tolist() == [True, True]
    assert not FilterConfig.none().needs_stats
    with pytest.raises(ValueError):
        column_filters(None, FilterConfig(), 2)


def test_coverage_rule():
    dep, ref = np.array([1, 1, 2, 0, 0]), np.array([5, 6, 10, 3, 0])
    assert coverage(dep, ref).tolist() == [0.2, 1 / 6, 0.2, 0.0, 1.0]
    assert low_coverage(dep, ref, 0.2).tolist() == [False, True, False, True, False]
