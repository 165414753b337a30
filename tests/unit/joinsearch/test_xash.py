"""XASH (xash.py): segment sizes (Eq. 6), alpha (Eq. 5), and the bit layout of §5.3 on hand-checked values.

Bit positions are counted from the left of the paper's bit array (0 = first bit of the length segment).
"""

import math
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.joinsearch.xash import (
    N_CHAR_CLASSES,
    XashHasher,
    char_frequencies,
    char_segment_bits,
    length_segment_bits,
    ones_per_value,
)

UNIFORM = (0,) * N_CHAR_CLASSES
CLASSES = "0123456789abcdefghijklmnopqrstuvwxyz"  # class 36: space and every other character


def set_bits(words: np.ndarray) -> set[int]:
    """Positions (from the left, MSB of word 0 first) of the one-bits of one hash."""
    bits = "".join(format(int(w), "064b") for w in words)
    return {p for p, b in enumerate(bits) if b == "1"}


def xash_bits(
    value: str | None, hash_bits: int = 128, alpha: int = 4, frequencies: tuple[int, ...] = UNIFORM
) -> set[int]:
    return set_bits(XashHasher(hash_bits, alpha, frequencies).hash_values(pa.array([value], pa.string()))[0])


def frequencies_with(rare: dict[str, int], default: int = 100) -> tuple[int, ...]:
    freq = [default] * N_CHAR_CLASSES
    for char, count in rare.items():
        freq[CLASSES.index(char)] = count
    return tuple(freq)


def test_segments_eq6() -> None:
    segments = [(char_segment_bits(a), length_segment_bits(a)) for a in (128, 256, 512)]
    assert segments == [(3, 17), (6, 34), (13, 31)]
    for a in (128, 256, 512):
        beta = char_segment_bits(a)
        assert 37 * beta < a <= 37 * (beta + 1)
    with pytest.raises(ValueError):
        char_segment_bits(64)


def test_alpha_eq5() -> None:
    assert ones_per_value(700_000_000, 128) == 6  # the DWTC figure of §5.3.1
    assert ones_per_value(127, 128) == 1 and ones_per_value(128, 128) == 2
    for n in (0, 1, 5000, 10**6, 10**12):
        for a in (128, 256, 512):
            alpha = ones_per_value(n, a)
            assert math.comb(a, alpha) > n and (alpha == 1 or math.comb(a, alpha - 1) <= n)


def test_muhammad_hand_checked() -> None:
    # "muhammad", l_v = 8, |a| = 128 (β = 3, |a_l| = 17), alpha = 4, flat frequencies: the three
    # lexicographically first characters a, d, h (§5.3.2).
    #   length bit: 8 mod 17 = 8
    #   a (class 10): positions 4, 7 -> mean 5.5 -> x = ceil(5.5·3/8) = 3 -> char bit 10·3 + 2 = 32
    #   d (class 13): position 8 -> x = 3 -> char bit 41;  h (class 17): position 3 -> x = 2 -> 52
    #   rotation left by 8 inside the 111 character bits, after the 17 length bits:
    #   17 + (32 - 8) = 41, 17 + 33 = 50, 17 + 44 = 61
    assert xash_bits("muhammad") == {8, 41, 50, 61}
    assert xash_bits("MUHAMMAD") == {8, 41, 50, 61}  # ASCII upper case folds


def test_paper_example_u_bit() -> None:
    # §5.3.5: the segment of "u" (first bit) is the 108th bit from the left before the rotation by 8 and the
    # 100th after it. Make "u" the rarest character so that alpha = 2 encodes it alone.
    bits = xash_bits("muhammad", alpha=2, frequencies=frequencies_with({"u": 1}))
    assert bits == {8, 99}  # 0-based 99 = the 100th bit


def test_least_frequent_characters_are_chosen() -> None:
    # m (3 occurrences in the value) is the rarest in the corpus, then u: alpha - 1 = 2 characters m, u.
    #   m: positions 1, 5, 6 -> mean 4 -> x = ceil(12/8) = 2 -> char bit 22·3 + 1 = 67 -> 17 + 59 = 76
    #   u: position 2 -> x = 1 -> char bit 90 -> 17 + 82 = 99
    bits = xash_bits("muhammad", alpha=3, frequencies=frequencies_with({"m": 1, "u": 2}))
    assert bits == {8, 76, 99}
    # ties between equally rare characters go to the lexicographically smaller one
    # ("ba": a at position 2 -> x = 3 -> char bit 32 -> 17 + 30 = 47; b would give 17 + (34 - 2) = 49)
    assert xash_bits("ba", alpha=2, frequencies=frequencies_with({"a": 5, "b": 5})) == {2, 47}
    # a character absent from the value is never encoded, even if it is the rarest
    assert xash_bits("muhammad", alpha=2, frequencies=frequencies_with({"z": 0, "u": 1})) == {8, 99}


def test_length_bit_and_rotation_wrap_around() -> None:
    # 20 characters: length bit 20 mod 17 = 3
    assert 3 in xash_bits("abcdefghijklmnopqrst")
    # "00000000000" (l_v = 11): class 0, mean position 6 -> x = ceil(18/11) = 2 -> char bit 1; rotated left by
    # 11 it wraps: (1 - 11) mod 111 = 101 -> 17 + 101 = 118; length bit 11
    assert xash_bits("00000000000", alpha=2) == {11, 118}


def test_other_characters_share_class_36_and_count_as_one_character() -> None:
    # "über": ü is one character of class 36 (two UTF-8 bytes); l_v = 4; flat frequencies, alpha = 2 -> the
    # lexicographically first class present: b (class 11), position 2 -> x = ceil(6/4) = 2 -> char bit 34
    # -> 17 + (34 - 4) = 47
    assert xash_bits("über", alpha=2) == {4, 47}
    # alpha = 5 uses all of b, e (class 14, position 3 -> x = 3), r (class 27, position 4 -> x = 3) and ü
    # (class 36, position 1 -> x = 1 -> char bit 108 -> 17 + 104 = 121)
    assert xash_bits("über", alpha=5) == {4, 47, 17 + (14 * 3 + 2 - 4), 17 + (27 * 3 + 2 - 4), 121}
    assert xash_bits("a-b", alpha=4) == xash_bits("a b", alpha=4) == xash_bits("a\u00e9b", alpha=4)


def test_larger_hashes() -> None:
    # |a| = 512: β = 13, |a_l| = 31. "ab": length bit 2; a at position 1 -> x = ceil(13/2) = 7 -> char bit
    # 10·13 + 6 = 136; b at position 2 -> x = 13 -> 11·13 + 12 = 155; rotated by 2: 31 + 134, 31 + 153
    assert xash_bits("ab", hash_bits=512, alpha=3) == {2, 165, 184}
    # |a| = 256: β = 6, |a_l| = 34. "ab": a -> x = 3 -> 62, b -> x = 6 -> 71; rotated by 2
    assert xash_bits("ab", hash_bits=256, alpha=3) == {2, 34 + 60, 34 + 69}


def test_null_alpha_one_and_shapes() -> None:
    hasher = XashHasher(256, 6, UNIFORM)
    out = hasher.hash_values(pa.array(["x", None, ""], pa.string()))
    assert out.shape == (3, 4) and out.dtype == np.uint64
    assert not out[1].any()
    assert set_bits(out[2]) == {0}  # an empty string (never indexed after normalisation): length bit only
    assert xash_bits("muhammad", alpha=1) == {8}
    assert hasher.hash_values(pa.array([], pa.string())).shape == (0, 4)
    values = pa.array(["lee", None, "muhammad", "us", "Ü"], pa.string())
    np.testing.assert_array_equal(hasher.hash_values(values.slice(1, 3)), hasher.hash_values(values)[1:4])
    np.testing.assert_array_equal(
        hasher.hash_values(pa.chunked_array([values.slice(0, 2), values.slice(2)])),
        hasher.hash_values(values),
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.text(max_size=15)), max_size=15),
    st.sampled_from([128, 256, 512]),
    st.integers(1, 8),
    st.lists(st.integers(0, 5), min_size=N_CHAR_CLASSES, max_size=N_CHAR_CLASSES),
)
def test_bit_count_and_segments(
    values: list[str | None], hash_bits: int, alpha: int, frequencies: list[int]
) -> None:
    hashes = XashHasher(hash_bits, alpha, tuple(frequencies)).hash_values(pa.array(values, pa.string()))
    length_bits = length_segment_bits(hash_bits)
    for value, words in zip(values, hashes, strict=True):
        bits = set_bits(words)
        if value is None:
            assert bits == set()
            continue
        classes = {CLASSES.index(c.lower()) if c.isascii() and c.lower() in CLASSES else 36 for c in value}
        assert len(bits) == 1 + min(alpha - 1, len(classes))  # one length bit, distinct character segments
        assert [b for b in bits if b < length_bits] == [len(value) % length_bits]


def test_char_frequencies_match_counter() -> None:
    values = ["Muhammad", None, "lee", "über 7", ""]
    counts = Counter()
    for v in values:
        for c in v or "":
            counts[CLASSES.index(c.lower()) if c.isascii() and c.lower() in CLASSES else 36] += 1
    expected = np.array([counts[i] for i in range(N_CHAR_CLASSES)])
    np.testing.assert_array_equal(char_frequencies(pa.array(values)), expected)
    np.testing.assert_array_equal(char_frequencies(pa.chunked_array([values[:2], values[2:]])), expected)


def test_from_corpus_and_serialisation() -> None:
    corpus = pa.array(["lee", "us", "muhammad", None])
    hasher = XashHasher.from_corpus(corpus, 128)
    assert hasher.alpha == ones_per_value(3, 128) == 1
    assert hasher.char_frequencies == tuple(int(f) for f in char_frequencies(corpus))
    assert XashHasher.from_dict(hasher.to_dict()) == hasher
    assert hasher.n_words == 2
    with pytest.raises(ValueError):
        XashHasher.from_dict({"kind": "bloom", "hash_bits": 128, "n_hashes": 3})
    with pytest.raises(ValueError):
        XashHasher(128, 4, (1, 2))
