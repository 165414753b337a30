"""lakemeta.hashing: XXH64 (seed 0) equals the xxhash package on every input shape the project passes."""

import datetime
import decimal
import struct

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.hashing import (
    ColumnHashes,
    canonical,
    hash_strings,
    hash_tuples,
    integer_literals,
    string_buffers,
    xxh64_bytes,
)


def _reference(values: list[str | None]) -> list[int]:
    return [0 if v is None else xxhash.xxh64_intdigest(v.encode("utf-8")) for v in values]


def _random_unicode(rng: np.random.Generator, n: int) -> list[str]:
    # code points from ASCII, Latin-1, CJK and astral planes; lengths cover every XXH64 branch (<4, 4-7,
    # 8-31, >=32 bytes, several 32-byte stripes), including the empty string
    pools = [(32, 127), (160, 0x2FF), (0x4E00, 0x9FFF), (0x1F300, 0x1FAFF)]
    out = []
    for _ in range(n):
        length = int(rng.choice([0, 1, 3, 5, 8, 15, 31, 32, 33, 64, 100, int(rng.integers(0, 200))]))
        lo, hi = pools[int(rng.integers(len(pools)))]
        out.append("".join(chr(int(c)) for c in rng.integers(lo, hi, length)))
    return out


def test_xxh64_bytes_every_length_and_alignment() -> None:
    rng = np.random.default_rng(7)
    data = rng.integers(0, 256, 200, dtype=np.uint8)
    for start in (0, 3):
        for length in range(100):
            expected = xxhash.xxh64_intdigest(data[start : start + length].tobytes())
            assert int(xxh64_bytes(data, start, start + length)) == expected


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string()])
def test_xxh64_equals_reference_on_random_unicode(arrow_type: pa.DataType) -> None:
    values = [*_random_unicode(np.random.default_rng(11), 2000), "", ""]
    hashes, valid = hash_strings(pa.array(values, type=arrow_type))
    assert valid.all()
    assert hashes.dtype == np.uint64
    assert hashes.tolist() == _reference(values)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=80)), max_size=40))
def test_xxh64_property_against_reference(values: list[str | None]) -> None:
    hashes, valid = hash_strings(pa.array(values, type=pa.string()))
    assert hashes.tolist() == _reference(values)
    assert valid.tolist() == [v is not None for v in values]


def test_nulls_are_marked_invalid_and_slices_and_chunks_hash_correctly() -> None:
    values = ["a", None, "", "héllo", None, "x" * 40, "日本"]
    arr = pa.array(values)
    hashes, valid = hash_strings(arr)
    assert valid.tolist() == [v is not None for v in values]
    assert hashes.tolist() == _reference(values)
    sliced_hashes, sliced_valid = hash_strings(arr.slice(2, 4))
    assert sliced_hashes.tolist() == _reference(values[2:6])
    assert sliced_valid.tolist() == [True, True, False, True]
    chunked = pa.chunked_array([pa.array(values[:3]), arr.slice(3)])
    assert hash_strings(chunked)[0].tolist() == _reference(values)
    assert hash_strings(pa.chunked_array([pa.array(["a"]), pa.array([None, "b"])]))[1].tolist() == [
        True,
        False,
        True,
    ]
    all_null_hashes, all_null_valid = hash_strings(pa.array([None, None], pa.string()))
    assert all_null_hashes.tolist() == [0, 0] and not all_null_valid.any()
    empty_hashes, empty_valid = hash_strings(pa.chunked_array([], pa.string()))
    assert empty_hashes.dtype == np.uint64 and empty_hashes.size == 0 and empty_valid.size == 0


def test_binary_arrays_hash_their_bytes_and_other_types_their_string_form() -> None:
    for binary_type in (pa.binary(), pa.large_binary()):
        assert hash_strings(pa.array([b"abc", b""], type=binary_type))[0].tolist() == [
            xxhash.xxh64_intdigest(b"abc"),
            xxhash.xxh64_intdigest(b""),
        ]
    hashes, valid = hash_strings(pa.array([12, None, -3]))
    assert hashes[valid].tolist() == [xxhash.xxh64_intdigest(b"12"), xxhash.xxh64_intdigest(b"-3")]
    assert valid.tolist() == [True, False, True]
    dictionary = pa.array(["k", "v", "k"]).dictionary_encode()
    assert hash_strings(dictionary)[0].tolist() == _reference(["k", "v", "k"])


def test_same_canonical_string_hashes_identically_across_calls_and_positions() -> None:
    first, _ = hash_strings(pa.array(["k1", "other", "k1"]))
    second, _ = hash_strings(pa.array(["zzz", "k1"], type=pa.large_string()))
    third, _ = hash_strings(pa.array(["k1"]))
    assert first[0] == first[2] == second[1] == third[0]
    assert first[0] != first[1]


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string(), pa.binary()])
def test_string_buffers_give_each_row_its_bytes_and_validity(arrow_type: pa.DataType) -> None:
    values = ["x", None, "yy", "", "zzz", "é"]
    encoded = [None if v is None else v.encode() for v in values]
    arr = pa.array(encoded if pa.types.is_binary(arrow_type) else values, arrow_type)
    for got, expected in (
        (arr, encoded),
        (arr.slice(1), encoded[1:]),
        (pa.chunked_array([arr.slice(0, 2), arr.slice(2)]), encoded),
    ):
        offsets, data, valid = string_buffers(got)
        assert offsets.dtype == np.int64 and offsets.shape == (len(expected) + 1,)
        assert valid.tolist() == [e is not None for e in expected]
        rows = [data[offsets[i] : offsets[i + 1]].tobytes() for i in range(len(expected))]
        assert [r for r, e in zip(rows, expected, strict=True) if e is not None] == [
            e for e in expected if e is not None
        ]
    offsets, data, valid = string_buffers(pa.array(["", ""], pa.large_string()))
    assert offsets.tolist() == [0, 0, 0] and data.size == 0 and valid.all()
    offsets, data, valid = string_buffers(pa.array([], arrow_type))
    assert offsets.tolist() == [0] and data.size == 0 and valid.size == 0


def _tuple_reference(row: tuple[str, ...]) -> int:
    encoded = b"".join(struct.pack("<Q", xxhash.xxh64_intdigest(v.encode())) for v in row)
    return xxhash.xxh64_intdigest(encoded)


def test_hash_tuples_is_xxh64_of_the_value_hashes_and_excludes_null_rows() -> None:
    rng = np.random.default_rng(3)
    a = _random_unicode(rng, 300)
    b = _random_unicode(rng, 300)
    c = _random_unicode(rng, 300)
    b[5] = None
    c[7] = None
    c_chunked = pa.chunked_array([pa.array(c[:100]), pa.array(c[100:])])
    hashes, valid = hash_tuples([pa.array(a), pa.array(b, type=pa.large_string()), c_chunked])
    for i in range(300):
        if i in (5, 7):
            assert not valid[i] and hashes[i] == 0
        else:
            assert valid[i]
            assert int(hashes[i]) == _tuple_reference((a[i], b[i], c[i]))
    sliced, _ = hash_tuples([pa.array(a).slice(10, 5), pa.array(a).slice(20, 5)])
    wide, _ = hash_tuples([pa.array(column) for column in (a, a[::-1], a, a[::-1], a)])  # 32-byte stripes
    assert [int(h) for h in wide[:50]] == [
        _tuple_reference((a[i], a[-1 - i], a[i], a[-1 - i], a[i])) for i in range(50)
    ]
    assert sliced.tolist() == [_tuple_reference((a[10 + i], a[20 + i])) for i in range(5)]


def test_hash_tuples_encoding_is_unambiguous() -> None:
    hashes, _ = hash_tuples([pa.array(["ab", "a", "", "abc"]), pa.array(["c", "bc", "abc", ""])])
    assert len(set(hashes.tolist())) == 4
    as_integers, _ = hash_tuples([pa.array([3, -7], pa.int32()), pa.array([10, 2], pa.int64())])
    as_strings, _ = hash_tuples([pa.array(["3", "-7"]), pa.array(["10", "2"])])
    assert as_integers.tolist() == as_strings.tolist()  # the same values in other physical types


def test_hash_tuples_rejects_ragged_or_empty_input() -> None:
    with pytest.raises(ValueError):
        hash_tuples([pa.array(["a"]), pa.array(["a", "b"])])
    with pytest.raises(ValueError):
        hash_tuples([])


def test_canonical_form_relates_the_same_value_across_physical_types() -> None:
    import datetime
    from decimal import Decimal

    forms = {
        "int64": canonical(pa.array([3, -7, None], pa.int64())),
        "int32": canonical(pa.array([3, -7, None], pa.int32())),
        "decimal": canonical(pa.array([Decimal("3.00"), Decimal("-7.00"), None], pa.decimal128(10, 2))),
        "decimal0": canonical(pa.array([Decimal("3"), Decimal("-7"), None], pa.decimal128(10, 0))),
        "double": canonical(pa.array([3.0, -7.0, None])),
        "string": canonical(pa.array(["3", "-7", None])),
    }
    for form in forms.values():
        assert form.to_pylist() == ["3", "-7", None]
    assert canonical(
        pa.array([Decimal("12.50"), Decimal("0.00"), Decimal("-0.50")], pa.decimal128(9, 2))
    ).to_pylist() == [
        "12.5",
        "0",
        "-0.5",
    ]
    assert canonical(pa.array([0.1, -0.0, 2.5e-7, 1e16])).to_pylist() == ["0.1", "0", "2.5e-7", "1e+16"]
    assert canonical(pa.array([True, False])).to_pylist() == ["true", "false"]
    assert canonical(pa.array([datetime.date(1995, 3, 1)])).to_pylist() == ["1995-03-01"]
    assert canonical(pa.array(["  Mixed Case "])).to_pylist() == ["  Mixed Case "]
    hashes = {name: hash_strings(form)[0][:2].tolist() for name, form in forms.items()}
    assert len({tuple(h) for h in hashes.values()}) == 1


def _canonical_hashes(arr: pa.Array) -> list[int]:
    return [0 if v is None else xxhash.xxh64_intdigest(v.encode()) for v in canonical(arr).to_pylist()]


def test_numeric_and_date_kernels_hash_exactly_the_canonical_strings() -> None:
    import datetime
    from decimal import Decimal

    rng = np.random.default_rng(5)
    ints = rng.integers(-(2**63), 2**63 - 1, 300, dtype=np.int64).tolist()
    ints += [0, -1, 1, 9, 10, -(2**63), 2**63 - 1, None]
    small = [*(int(v) for v in rng.integers(-128, 128, 100)), None]
    days = [*rng.integers(-719528, 2932896, 300).tolist(), 0, -1, None]
    unscaled = [*rng.integers(-(10**12), 10**12, 300).tolist(), 0, 5, -5, 10, 100, -100, 1, None]
    arrays = [
        pa.array(ints, pa.int64()),
        pa.array(small, pa.int8()),
        pa.array(small, pa.int16()),
        pa.array([None if v is None else abs(v) for v in small], pa.uint32()),
        pa.array(days, pa.date32()),
        pa.array([datetime.date(9999, 12, 31), datetime.date(1, 1, 1)], pa.date32()),
    ]
    for scale in (0, 1, 2, 5):
        arrays.append(
            pa.array(
                [None if u is None else Decimal(u).scaleb(-scale) for u in unscaled], pa.decimal128(18, scale)
            )
        )
    for arr in arrays:
        hashes, valid = hash_strings(arr)
        assert hashes.tolist() == _canonical_hashes(arr), arr.type
        assert valid.tolist() == [v is not None for v in arr.to_pylist()]
        sliced = arr.slice(3, 50)
        assert hash_strings(sliced)[0].tolist() == _canonical_hashes(sliced)
    wide = pa.array([Decimal(10**30), Decimal(-7)], pa.decimal128(38, 2))  # beyond 64 bits: the string path
    assert hash_strings(wide)[0].tolist() == _canonical_hashes(wide)
    far = pa.array([-800000, 3000000], pa.date32())  # years outside 0..9999: the string path
    assert hash_strings(far)[0].tolist() == _canonical_hashes(far)


def test_column_hashes_are_hash_strings_computed_once_per_column() -> None:
    rows = pa.table({"n": pa.array([1, None, 3]), "s": pa.array(["a", "b", None])})
    hashes = ColumnHashes(rows)
    for column in ("n", "s"):
        got, valid = hashes[column]
        expected, expected_valid = hash_strings(rows[column])
        assert np.array_equal(got, expected) and np.array_equal(valid, expected_valid)
        assert hashes[column][0] is got  # the second component reads the same arrays, not a new hashing


def test_integer_literals_follow_the_canonical_form_of_every_type() -> None:
    cases = [
        (pa.array([1, None, -7], pa.int32()), [True, False, True]),
        (pa.array([3.0, 2.5, None, -0.0, 1e20], pa.float64()), [True, False, False, True, False]),
        (pa.array([decimal.Decimal("10.00"), decimal.Decimal("1.50")], pa.decimal128(5, 2)), [True, False]),
        (pa.array([decimal.Decimal("12")], pa.decimal128(4, 0)), [True]),
        (
            pa.array(["42", "+3", "-0", "4.0", "", " 5", None, "x1"]),
            [True, True, True, False, False, False, False, False],
        ),
        (pa.array([b"42"], pa.binary()), [False]),
        (pa.array([datetime.date(2020, 1, 1)]), [False]),
        (pa.chunked_array([pa.array(["1"]), pa.array(["a"])]), [True, False]),
    ]
    for values, expected in cases:
        assert integer_literals(values).tolist() == expected, values
