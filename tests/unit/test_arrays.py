"""Rows of 64-bit words kept as Arrow binary rows (``lakemeta.arrays``): read as views, gathered by
position, written back; against the rows as Python lists. Ranges expanded to their positions, against
Python's ranges."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from lakemeta.arrays import binary_rows, expand_ranges, one_array, take_rows, uint64_rows

rows_of_words = st.lists(
    st.one_of(st.none(), st.lists(st.integers(0, 2**64 - 1), max_size=5)), min_size=1, max_size=30
)


def _binary(rows: list[list[int] | None]) -> pa.BinaryArray:
    return pa.array(
        [None if row is None else np.array(row, np.uint64).astype("<u8").tobytes() for row in rows],
        pa.binary(),
    )


@given(rows_of_words, st.data())
def test_rows_read_taken_and_written_back_are_the_rows(rows: list, data: st.DataObject) -> None:
    array = _binary(rows)
    offsets, words, stored = uint64_rows(array.slice(0))
    if words.size:  # a view of the Arrow data, not a copy
        assert np.shares_memory(words, np.frombuffer(array.buffers()[2], np.uint8))
    assert stored.tolist() == [row is not None for row in rows]
    for i, row in enumerate(rows):
        assert words[offsets[i] : offsets[i + 1]].tolist() == (row or [])
    at = np.array(data.draw(st.lists(st.integers(0, len(rows) - 1), max_size=40)), np.int64)
    taken_offsets, taken_words = take_rows(offsets, words, at)
    assert len(taken_offsets) == len(at) + 1
    for j, i in enumerate(at):
        assert taken_words[taken_offsets[j] : taken_offsets[j + 1]].tolist() == (rows[i] or [])
    written = binary_rows(taken_words, taken_offsets, stored[at])
    assert written.equals(_binary([rows[i] for i in at]))


def test_rows_of_a_sliced_array_start_at_its_offset() -> None:
    rows = [[1, 2], [3], None, [4, 5, 6]]
    offsets, words, stored = uint64_rows(_binary(rows).slice(1, 3))
    assert [words[offsets[i] : offsets[i + 1]].tolist() for i in range(3)] == [[3], [], [4, 5, 6]]
    assert stored.tolist() == [True, False, True]


def test_one_array_of_one_chunk_is_that_chunk_and_of_several_their_concatenation() -> None:
    chunk = _binary([[1], [2, 3]])
    assert one_array(pa.chunked_array([chunk])).buffers()[2].address == chunk.buffers()[2].address
    assert one_array(pa.chunked_array([chunk, chunk])).equals(_binary([[1], [2, 3], [1], [2, 3]]))
    assert one_array(pa.chunked_array([], pa.binary())).equals(pa.array([], pa.binary()))


# (start, length) pairs: empty ranges among them, and a stop before its start, which ``arange`` leaves empty
ranges = st.lists(st.tuples(st.integers(-(2**40), 2**40), st.integers(-3, 6)), max_size=20)


@given(ranges)
def test_expanded_ranges_are_the_concatenation_of_the_ranges(pairs: list[tuple[int, int]]) -> None:
    starts = np.array([start for start, _ in pairs], np.int64)
    stops = np.array([start + length for start, length in pairs], np.int64)
    expanded = expand_ranges(starts, stops)
    assert expanded.dtype == np.int64
    concatenated = [i for start, stop in zip(starts, stops, strict=True) for i in range(start, stop)]
    assert expanded.tolist() == concatenated


def test_no_ranges_and_empty_ranges_expand_to_nothing() -> None:
    for starts, stops in (([], []), ([3, 7], [3, 7])):
        expanded = expand_ranges(np.array(starts, np.int64), np.array(stops, np.int64))
        assert expanded.dtype == np.int64 and expanded.size == 0
