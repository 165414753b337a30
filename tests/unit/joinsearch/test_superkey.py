"""Super keys (superkey.py): the row filter never drops a joinable row (§6.3 Lemma), for XASH of every
size and for the Bloom key; aggregation in wide and long form; the binary state format."""

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.joinsearch.superkey import (
    covers,
    group_super_keys,
    row_super_keys,
    super_keys_from_binary,
    super_keys_to_binary,
)
from lakemeta.joinsearch.xash import N_CHAR_CLASSES, XashHasher
from lakemeta.reference.bloom_superkey import BloomHasher

_cell = st.one_of(st.none(), st.text(max_size=10), st.sampled_from(["a", "ab", "ba", "lee", "us", "3", ""]))


@st.composite
def rows_and_keys(draw: st.DrawFn) -> tuple[list[list[str | None]], list[list[str]]]:
    """Random rows, and for each row a key made of some of its non-null values (any order)."""
    width = draw(st.integers(1, 6))
    rows = draw(st.lists(st.lists(_cell, min_size=width, max_size=width), min_size=1, max_size=12))
    keys = []
    for row in rows:
        present = [v for v in row if v is not None]
        keys.append(draw(st.permutations(present))[: draw(st.integers(0, len(present)))] if present else [])
    return rows, keys


def _hashers(alpha: int, frequencies: list[int]) -> list:
    return (
        [XashHasher.eq5(bits, alpha, tuple(frequencies)) for bits in (128, 256, 512)]
        + [XashHasher.authors(bits, alpha) for bits in (128, 256, 512)]
        + [
            BloomHasher(128, 3),
            BloomHasher(512, 9),
        ]
    )


@settings(max_examples=60, deadline=None)
@given(
    rows_and_keys(),
    st.integers(1, 8),
    st.lists(st.integers(0, 9), min_size=N_CHAR_CLASSES, max_size=N_CHAR_CLASSES),
)
def test_super_key_never_drops_a_joinable_row(data: tuple, alpha: int, frequencies: list[int]) -> None:
    rows, keys = data
    columns = [pa.array([row[j] for row in rows], pa.string()) for j in range(len(rows[0]))]
    for hasher in _hashers(alpha, frequencies):
        row_keys = row_super_keys(columns, hasher)
        query_keys = np.zeros_like(row_keys)
        for i, key in enumerate(keys):
            if key:
                query_keys[i] = np.bitwise_or.reduce(hasher.hash_values(pa.array(key, pa.string())), axis=0)
        assert covers(row_keys, query_keys).all()


def test_filter_rejects_a_row_missing_a_key_value() -> None:
    # Example 3 of §6.3 in spirit: the row (muhammad, ali, us) cannot hold (muhammad, lee, us)
    hasher = XashHasher.eq5(128, 6, (0,) * N_CHAR_CLASSES)
    row = row_super_keys([pa.array(["muhammad"]), pa.array(["ali"]), pa.array(["us"])], hasher)
    query = row_super_keys([pa.array(["muhammad"]), pa.array(["lee"]), pa.array(["us"])], hasher)
    assert not covers(row, query)[0]
    assert covers(query, query)[0]


def test_wide_and_long_aggregation_agree() -> None:
    hasher = XashHasher.eq5(256, 5, tuple(range(N_CHAR_CLASSES)))
    columns = [pa.array(["a", None, "c"]), pa.array(["x", "y", None]), pa.array([None, "q", "r"])]
    wide = row_super_keys(columns, hasher)
    cells = pa.array(["a", "x", "y", "q", "c", "r"])
    long = group_super_keys(hasher.hash_values(cells), np.array([0, 0, 1, 1, 2, 2]), 3)
    np.testing.assert_array_equal(wide, long)
    expected = hasher.hash_values(pa.array(["a"])) | hasher.hash_values(pa.array(["x"]))
    np.testing.assert_array_equal(wide[0], expected[0])


def test_binary_round_trip_reads_left_to_right() -> None:
    keys = np.random.default_rng(1).integers(0, 2**63, (7, 4), dtype=np.int64).astype(np.uint64)
    binary = super_keys_to_binary(keys)
    assert binary.type == pa.binary(32)
    np.testing.assert_array_equal(super_keys_from_binary(binary), keys)
    np.testing.assert_array_equal(super_keys_from_binary(binary.slice(3, 2)), keys[3:5])
    chunked = pa.chunked_array([binary.slice(0, 3), binary.slice(3)])
    np.testing.assert_array_equal(super_keys_from_binary(chunked), keys)
    first = binary[0].as_py()
    assert int.from_bytes(first[:8], "big") == int(keys[0, 0])
