"""Bloom super key (bloom_superkey.py): bits equal a plain double-hashing computation over xxHash64."""

import math

import numpy as np
import pyarrow as pa
import pytest
import xxhash

from lakemeta.reference.bloom_superkey import BloomHasher


def plain_bloom_bits(value: str, hash_bits: int, n_hashes: int) -> set[int]:
    h = xxhash.xxh64(value.encode()).intdigest()
    h1, h2 = h & 0xFFFFFFFF, (h >> 32) | 1
    return {(h1 + t * h2) % hash_bits for t in range(n_hashes)}


@pytest.mark.parametrize("hash_bits", [128, 256, 512])
def test_bits_match_plain_double_hashing(hash_bits: int) -> None:
    values = ["abc", "", "Ünïcode", "a much longer value with more than thirty-two bytes in it", None]
    hasher = BloomHasher(hash_bits, 7)
    out = hasher.hash_values(pa.array(values))
    assert out.shape == (5, hash_bits // 64)
    for value, words in zip(values, out, strict=True):
        bits = "".join(format(int(w), "064b") for w in words)
        got = {p for p, b in enumerate(bits) if b == "1"}
        assert got == (set() if value is None else plain_bloom_bits(value, hash_bits, 7))
        if value is not None:
            assert len(got) == 7  # h2 odd and |a| a power of two: distinct bits


def test_number_of_hashes_from_row_width() -> None:
    # §7.1.2: H = (|a| / V)·ln 2 with V the mean number of columns (V = 5 for web tables, 26 for open data)
    assert BloomHasher.for_row_width(128, 5).n_hashes == round(128 / 5 * math.log(2)) == 18
    assert BloomHasher.for_row_width(128, 26).n_hashes == 3
    assert BloomHasher.for_row_width(128, 1000).n_hashes == 1
    hasher = BloomHasher(256, 4)
    assert BloomHasher.from_dict(hasher.to_dict()) == hasher
    with pytest.raises(ValueError):
        BloomHasher(100, 3)
    np.testing.assert_array_equal(
        hasher.hash_values(pa.array(["x"], pa.large_string())),
        hasher.hash_values(pa.array(["x"], pa.string())),
    )
