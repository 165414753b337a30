"""XASH (xash.py): segment sizes (Eq. 6), alpha (Eq. 5), and the bits of both schemes (§5.3) on
hand-checked values.

Bit positions are counted from the left of the bit array (0 = first bit of the length segment).
"""

import math
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.joinsearch.xash import (
    AUTHORS,
    EQ5,
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
    return set_bits(
        XashHasher.eq5(hash_bits, alpha, frequencies).hash_values(pa.array([value], pa.string()))[0]
    )


def authors_bits(value: str | None, hash_bits: int = 128, alpha: int = 6) -> set[int]:
    return set_bits(XashHasher.authors(hash_bits, alpha).hash_values(pa.array([value], pa.string()))[0])


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
    hasher = XashHasher.eq5(256, 6, UNIFORM)
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
    hashes = XashHasher.eq5(hash_bits, alpha, tuple(frequencies)).hash_values(pa.array(values, pa.string()))
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


def test_authors_muhammad_hand_checked() -> None:
    # "muhammad", |a| = 128: β = 3, |a_l| = 17, 37·β = 111. Occurrences in the value (§5.3.2, "least
    # frequent characters inside a word", ties by character): d, h, u once, a twice, m three times: the
    # 5 picks are d, h, u, a, m. 0-based positions: m 0,4,5; u 1; h 2; a 3,6; d 7; l_v = 8.
    # Area (§5.3.3, the authors' loop): least i with mean <= (i + 1)·8/3, thresholds 2.67, 5.33, 8:
    #   d mean 7 -> i = 2; h mean 2 -> 0; u mean 1 -> 0; a mean 4.5 -> 1; m mean 3 -> 1.
    # Bit from the least significant end, index·β + i (space 0, digits 1-10, letters 11-36):
    #   d (14) 44, h (18) 54, u (31) 93, a (11) 34, m (23) 70.
    # Rotation (§5.3.5, the authors' code): d = floor(111·(8 mod 17)/17) = 52, inside the 111 bits:
    #   96, 106, 145 - 111 = 34, 86, 122 - 111 = 11. Length bit: 111 + 8 mod 17 = 119.
    # From the left (127 - p): 31, 21, 93, 41, 116 and 8.
    assert authors_bits("muhammad") == {8, 21, 31, 41, 93, 116}
    assert authors_bits("MUHAMMAD") == authors_bits("muhammad")  # ASCII upper case folds
    # alpha = 2 picks d alone: {8, 31}; the picks do not depend on any other value (no corpus statistics)
    assert authors_bits("muhammad", alpha=2) == {8, 31}


def test_authors_characters_outside_the_alphabet_use_a_pick() -> None:
    # "a-b", 128 bits: each character once; by code point '-' (45) < 'a' < 'b'. '-' has no segment and
    # sets no bit. l_v = 3: rotation floor(111·3/17) = 19; thresholds (i + 1)·3/3 = 1, 2, 3:
    #   a mean 1 -> i = 0 -> 11·3 + 0 = 33 -> 52 -> from the left 127 - 52 = 75
    #   b mean 2 -> i = 1 -> 12·3 + 1 = 37 -> 56 -> 71;  length 111 + 3 = 114 -> 13
    assert authors_bits("a-b") == {13, 71, 75}
    # the space is a character of its own (index 0), unlike eq5's catch-all class
    assert authors_bits("a b") != authors_bits("a-b")
    # "über", 256 bits: β = 6, |a_l| = 34, 37·β = 222, l_v = 4, picks b, e, r, ü (ü: no bit).
    # Rotation floor(222·4/34) = 26; thresholds (i + 1)·4/6:
    #   b position 1 -> i = 1 -> 12·6 + 1 = 73; e 2 -> i = 2 -> 15·6 + 2 = 92; r 3 -> i = 4 -> 28·6 + 4
    #   = 172; rotated 99, 118, 198 -> from the left 255 - p: 156, 137, 57; length 222 + 4 -> 29
    assert authors_bits("über", hash_bits=256) == {29, 57, 137, 156}


def test_authors_five_characters_at_every_size() -> None:
    # "abcdefg", 512 bits: β = 13, |a_l| = 31, 37·β = 481. Seven characters, once each: the 5 picks are
    # a-e (ties by character), whatever the size (Eq. 5 would give alpha - 1 = 3 at 512 bits).
    # l_v = 7, rotation floor(481·7/31) = 108; area of 0-based position j: least i with j <= (i + 1)·7/13:
    #   a 0 -> 0, b 1 -> 1, c 2 -> 3, d 3 -> 5, e 4 -> 7; bits 143, 157, 172, 187, 202, rotated
    #   251, 265, 280, 295, 310 -> from the left (511 - p) 260, 246, 231, 216, 201; length 481 + 7 -> 23
    assert authors_bits("abcdefg", hash_bits=512) == {23, 201, 216, 231, 246, 260}
    for hash_bits in (128, 256, 512):
        assert len(authors_bits("abcdefg", hash_bits)) == 6


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=20)), max_size=15), st.sampled_from([128, 256, 512]))
def test_authors_bit_count_and_length_segment(values: list[str | None], hash_bits: int) -> None:
    hashes = XashHasher.authors(hash_bits).hash_values(pa.array(values, pa.string()))
    length_bits = length_segment_bits(hash_bits)
    for value, words in zip(values, hashes, strict=True):
        bits = set_bits(words)
        if value is None:
            assert bits == set()
            continue
        folded = "".join(c.lower() if c.isascii() else c for c in value)
        counts = Counter(folded)
        picks = sorted(counts, key=lambda c: (counts[c], c))[:5]
        encoded = [c for c in picks if c == " " or (c.isascii() and c.isalnum())]
        assert len(bits) == 1 + len(encoded)
        assert [b for b in bits if b < length_bits] == [length_bits - 1 - len(value) % length_bits]


def test_from_corpus_and_serialisation() -> None:
    corpus = pa.array(["lee", "us", "muhammad", None])
    hasher = XashHasher.from_corpus(corpus, 128)
    assert hasher.alpha == ones_per_value(3, 128) == 1
    assert hasher.char_frequencies == tuple(int(f) for f in char_frequencies(corpus))
    assert XashHasher.from_dict(hasher.to_dict()) == hasher
    assert hasher.n_words == 2
    assert hasher.to_dict()["scheme"] == EQ5 and hasher.to_dict()["version"] == 1
    authors = XashHasher.authors(512)
    assert authors.to_dict() == {
        "kind": "xash",
        "scheme": AUTHORS,
        "version": 1,
        "hash_bits": 512,
        "alpha": 6,
    }
    assert XashHasher.from_dict(authors.to_dict()) == authors
    # a record from before schemes were recorded is the eq5 scheme, whose bits have not changed
    legacy = {k: v for k, v in hasher.to_dict().items() if k not in ("scheme", "version")}
    assert XashHasher.from_dict(legacy) == hasher
    # bits of another version cannot be reproduced: the error says to rebuild
    with pytest.raises(ValueError, match="rebuild"):
        XashHasher.from_dict({**authors.to_dict(), "version": 2})
    with pytest.raises(ValueError, match="rebuild"):
        XashHasher.from_dict({**authors.to_dict(), "scheme": "other"})
    with pytest.raises(ValueError):
        XashHasher.from_dict({"kind": "bloom", "hash_bits": 128, "n_hashes": 3})
    with pytest.raises(ValueError):
        XashHasher.eq5(128, 4, (1, 2))
    with pytest.raises(ValueError):
        XashHasher(128, AUTHORS, 6, UNIFORM)
    with pytest.raises(ValueError):
        XashHasher(128, "other", 6)
