"""Bloom super key (bloom_superkey.py): bits equal a plain SplitMix64 computation over xxHash64, the H bits
of a value are independent (distinct patterns, the false-positive rate of §7.1.2's formula), and H."""

import math

import numpy as np
import pyarrow as pa
import pytest
import xxhash

from lakemeta.joinsearch.superkey import covers
from lakemeta.reference.bloom_superkey import AUTHORS_N_HASHES, BloomHasher

MASK = (1 << 64) - 1


def plain_bloom_bits(value: str, hash_bits: int, n_hashes: int) -> set[int]:
    """The first ``n_hashes`` SplitMix64 outputs seeded with XXH64(value), their top log2 |a| bits."""
    state, bits = xxhash.xxh64(value.encode()).intdigest(), set()
    for _ in range(n_hashes):
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        bits.add((z ^ (z >> 31)) >> (64 - int(math.log2(hash_bits))))
    return bits


@pytest.mark.parametrize("hash_bits", [128, 256, 512])
def test_bits_match_plain_splitmix64(hash_bits: int) -> None:
    values = ["abc", "", "Ünïcode", "a much longer value with more than thirty-two bytes in it", None]
    hasher = BloomHasher(hash_bits, 7)
    out = hasher.hash_values(pa.array(values))
    assert out.shape == (5, hash_bits // 64)
    for value, words in zip(values, out, strict=True):
        bits = "".join(format(int(w), "064b") for w in words)
        got = {p for p, b in enumerate(bits) if b == "1"}
        assert got == (set() if value is None else plain_bloom_bits(value, hash_bits, 7))
        if value is not None:
            assert 1 <= len(got) <= 7


@pytest.mark.parametrize("n_hashes", [AUTHORS_N_HASHES, 19])
def test_values_set_as_many_patterns_as_there_are_values(n_hashes: int) -> None:
    # Independent positions: 30,000 values give 30,000 patterns but for chance collisions (C(128, 5) > 10^8).
    # Double hashing (h1 + t·h2) mod 128 gives at most 8,192 patterns, here 4,094 at H = 5.
    values = pa.array([f"value {i}" for i in range(30_000)])
    patterns = np.unique(BloomHasher(128, n_hashes).hash_values(values), axis=0)
    assert len(patterns) >= 29_990


def test_false_positive_rate_follows_the_bloom_formula() -> None:
    # 20,000 rows of V = 20 values, one absent value each: a Bloom filter of H = 5 independent hashes
    # passes (1 - e^{-V·H/|a|})^H = 0.0468 of them (§7.1.2), measured 0.0462 (standard error 0.0015); double
    # hashing's dependent bits pass 0.0522.
    n, width, n_hashes = 20_000, 20, 5
    hashes = BloomHasher(128, n_hashes).hash_values(pa.array([f"value {i}" for i in range(n * (width + 1))]))
    hashes = hashes.reshape(n, width + 1, 2)
    rows = np.bitwise_or.reduce(hashes[:, :width], axis=1)
    expected = (1 - math.exp(-width * n_hashes / 128)) ** n_hashes
    assert abs(covers(rows, hashes[:, width]).mean() - expected) < 0.004


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
