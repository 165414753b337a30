import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.inds.bloom import (
    BloomParams,
    merge_signatures,
    signature_from_bytes,
    signature_from_hashes,
    signature_from_strings,
    signature_to_bytes,
    signatures_from_hashes,
)


def bits_of(signature, params):
    return {b for b in range(params.n_words * 64) if (int(signature[b >> 6]) >> (b & 63)) & 1}


def expected_bits(h, params):
    """Double hashing written plainly: function t = j*k + i of pass j sets j*m + (h1 + t*h2) mod m."""
    h1, h2 = h & 0xFFFFFFFF, (h >> 32) | 1
    return {
        j * params.m + (h1 + (j * params.k + i) * h2) % params.m
        for j in range(params.p)
        for i in range(params.k)
    }


def test_defaults_are_the_papers_and_params_are_checked():
    assert BloomParams() == BloomParams(m=650, k=6, p=2)
    assert BloomParams().n_bits == 1300 and BloomParams().n_words == 21
    for bad in ({"m": 0}, {"k": 0}, {"m": 4, "k": 5}, {"p": 0}):
        with pytest.raises(ValueError):
            BloomParams(**bad)


params_st = st.integers(1, 300).flatmap(
    lambda m: st.builds(BloomParams, st.just(m), st.integers(1, min(m, 10)), st.integers(1, 4))
)


@settings(max_examples=60, deadline=None)
@given(params_st, st.lists(st.integers(0, 2**64 - 1), max_size=20))
def test_signature_sets_exactly_the_double_hash_bits(params, hashes):
    signature = signature_from_hashes(np.array(hashes, dtype=np.uint64), params)
    expected = set().union(*(expected_bits(h, params) for h in hashes)) if hashes else set()
    assert bits_of(signature, params) == expected


@settings(max_examples=60, deadline=None)
@given(params_st, st.sets(st.text(max_size=6), max_size=15), st.sets(st.text(max_size=6), max_size=15))
def test_subset_values_give_subset_signatures_and_merge_is_union(params, a, b):
    sig_a = signature_from_strings(pa.array(sorted(a), pa.string()), params)
    sig_ab = signature_from_strings(pa.array(sorted(a | b), pa.string()), params)
    sig_b = signature_from_strings(pa.array([*sorted(b), None], pa.string()), params)
    assert np.array_equal(sig_a & sig_ab, sig_a)  # A ⊆ A | B, so sig(A) ⊆ sig(A | B)
    assert np.array_equal(merge_signatures(sig_a, sig_b), sig_ab)


def test_strings_hash_with_xxh64_and_batch_matches_single():
    params = BloomParams(m=97, k=3, p=2)
    values = ["a", "bb", "", "ä"]
    hashes = np.array([xxhash.xxh64_intdigest(v.encode()) for v in values], dtype=np.uint64)
    single = signature_from_strings(pa.array(values), params)
    assert np.array_equal(single, signature_from_hashes(hashes, params))
    batch = signatures_from_hashes(hashes, np.array([0, 1, 1, 4]), params)
    assert batch.shape == (3, params.n_words)
    assert np.array_equal(batch[0], signature_from_hashes(hashes[:1], params))
    assert not batch[1].any()
    assert np.array_equal(batch[2], signature_from_hashes(hashes[1:], params))


def test_bytes_round_trip():
    params = BloomParams(m=100, k=2, p=3)
    signature = signature_from_hashes(np.arange(50, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15), params)
    assert np.array_equal(signature_from_bytes(signature_to_bytes(signature), params), signature)
    with pytest.raises(ValueError):
        signature_from_bytes(signature_to_bytes(signature), BloomParams(m=1000, k=2, p=3))
