"""The signals of a foreign-key candidate beside its EMD (``signals``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.fks.signals import (
    both_ways,
    common_divisor,
    counts_from_first_values,
    integer_key,
    span,
    step,
)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["3", "1", "2"], (True, True)),
        (["-1", "0", "1"], (True, True)),
        (["1", "2", "4"], (True, False)),  # a gap
        (["1", "2", "x"], (False, False)),
        (["1.5", "2.5"], (False, False)),
        ([], (False, False)),
        (["99999999999999999999999", "99999999999999999999998"], (True, False)),  # beyond 64 bits
    ],
)
def test_integer_keys_and_ranges_holding_every_integer_between_their_ends(
    values: list[str], expected: tuple[bool, bool]
) -> None:
    assert integer_key(pa.array(values, pa.string())) == expected


def test_the_step_is_the_dependents_common_divisor_beyond_the_keys() -> None:
    strings = lambda values: pa.array([str(v) for v in values], pa.string())  # noqa: E731
    assert common_divisor(strings([500, 1000, 10000])) == 500
    assert common_divisor(strings([0, -6, 9])) == 3
    assert common_divisor(strings(["a", 2])) is None
    assert common_divisor(strings([])) is None
    assert (
        step(common_divisor(strings(range(500, 10001, 500))), common_divisor(strings(range(1, 10001)))) == 500
    )
    assert (
        step(common_divisor(strings([20, 70, 130])), common_divisor(strings(range(10, 1001, 10)))) == 1
    )  # numbered in tens
    assert step(common_divisor(strings([20, 40, 60])), common_divisor(strings(range(10, 1001, 10)))) == 2
    assert step(common_divisor(strings(["x1"])), 1) is None
    assert step(common_divisor(strings([4, 8])), None) is None


def test_span_is_the_first_and_last_cell_over_the_cells() -> None:
    assert span(np.array([3, 0, 7]), 8) == (0.0, 1.0)
    assert span(np.array([2, 3]), 10) == (0.2, 0.4)


@pytest.mark.parametrize(
    ("span_start", "span_end", "coverage", "integer", "expected"),
    [
        (0.0, 0.3, 0.05, True, True),  # a line number in the first part of an id range
        (0.0, 0.668, 0.666, True, True),  # every value 1..9,999 of 1..15,000: a counter
        (0.0, 0.867, 0.58, True, False),  # a sample of the first 87% (TPC-DS catalog pages): gaps
        (0.0, 1.0, 1.0, True, False),  # the whole key
        (0.49, 0.52, 0.02, True, False),  # a window of a calendar
        (0.0, 0.3, 0.3, False, False),  # not a key of integers
    ],
)
def test_counting_columns_start_at_the_keys_first_values(
    span_start: float, span_end: float, coverage: float, integer: bool, expected: bool
) -> None:
    candidate = {
        "span_start": span_start,
        "span_end": span_end,
        "coverage": coverage,
        "pk_is_integer": integer,
    }
    assert counts_from_first_values(pa.Table.from_pylist([candidate]), 0.5).tolist() == [expected]


def test_both_ways_finds_keys_included_in_one_another_within_a_table_too() -> None:
    def c(f: str, p: str) -> dict:
        return {"fk_table": f.split(".")[0], "fk_columns": [f.split(".")[1]], "pk_table": p.split(".")[0],
                "pk_columns": [p.split(".")[1]]}  # fmt: skip

    rows = [c("t.a", "t.b"), c("t.b", "t.a"), c("u.x", "v.y"), c("v.y", "u.x"), c("u.z", "v.y")]
    assert both_ways(pa.Table.from_pylist(rows)).tolist() == [True, True, True, True, False]
