import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.inds.bloom import BloomParams
from lakemeta.inds.matrix import SignatureMatrix, pack_bits
from lakemeta.inds.proposer import STRATEGIES, column_ranges, propose, propose_changed, propose_range


def random_signatures(rng, n_columns, params, density):
    bits = rng.random((n_columns, params.n_bits)) < density
    bits[rng.random(n_columns) < 0.1] = False  # some empty signatures
    bits[rng.random(n_columns) < 0.1] = bits[rng.integers(0, max(n_columns, 1))] if n_columns else False
    signatures = np.zeros((n_columns, params.n_words), np.uint64)
    for c in range(n_columns):
        signatures[c] = pack_bits(bits[c])
    return bits, signatures


def random_matrix(rng, n_columns, params, density):
    bits, signatures = random_signatures(rng, n_columns, params, density)
    return bits, SignatureMatrix.from_signatures(signatures, params)


def brute_candidates(bits, filtered_cols, filtered_refs):
    """Pairs (a, b), a != b, with sig(a) ⊆ sig(b), minus filtered columns/refs, in plain Python."""
    n = bits.shape[0]
    sets = [set(np.flatnonzero(bits[c]).tolist()) for c in range(n)]
    return {
        (a, b)
        for a in range(n)
        for b in range(n)
        if a != b
        and sets[a] <= sets[b]
        and not filtered_cols[a]
        and not filtered_cols[b]
        and not filtered_refs[b]
    }


# seed, columns, m, p, bit density of the random signatures
SIGNATURE_SETS = (
    st.integers(0, 2**32 - 1),
    st.integers(0, 140),
    st.integers(1, 40),
    st.integers(1, 3),
    st.floats(0.0, 0.6),
)


def as_set(candidates):
    return {(int(d), int(r)) for d, r in candidates}


@settings(max_examples=40, deadline=None)
@given(*SIGNATURE_SETS, st.booleans())
def test_both_strategies_and_bitvectors_equal_brute_force(seed, n, m, p, density, with_filters):
    rng = np.random.default_rng(seed)
    params = BloomParams(m=m, k=1, p=p)
    bits, matrix = random_matrix(rng, n, params, density)
    cols = rng.random(n) < (0.2 if with_filters else 0.0)
    refs = rng.random(n) < (0.2 if with_filters else 0.0)
    expected = brute_candidates(bits, cols, refs)
    for strategy in STRATEGIES:
        for indexed in (True, False):
            got = propose(matrix, strategy, indexed, cols, refs)
            assert len(got) == len(as_set(got))  # no duplicates
            assert as_set(got) == expected, (strategy, indexed)


def test_ranges_partition_the_candidates():
    rng = np.random.default_rng(3)
    params = BloomParams(m=16, k=1, p=2)
    _, matrix = random_matrix(rng, 130, params, 0.3)
    for strategy in STRATEGIES:
        whole = as_set(propose(matrix, strategy))
        for workers in (1, 2, 3, 7):
            parts = [propose_range(matrix, lo, hi, strategy) for lo, hi in column_ranges(130, workers)]
            assert sum(len(p) for p in parts) == len(whole)
            assert set().union(*map(as_set, parts)) == whole
        # the current column is the dependent one for dep2refs and the referenced one for ref2deps
        side = 0 if strategy == "dep2refs" else 1
        assert all(64 <= c[side] < 100 for c in propose_range(matrix, 64, 100, strategy))


def test_indexed_equals_plain_on_many_words():
    """More than 64·64 columns, so the index of active words itself spans several words."""
    rng = np.random.default_rng(4)
    params = BloomParams(m=24, k=1, p=1)
    _, matrix = random_matrix(rng, 4300, params, 0.12)
    cols = rng.random(4300) < 0.05
    for strategy in STRATEGIES:
        indexed = propose(matrix, strategy, True, cols)
        plain = propose(matrix, strategy, False, cols)
        assert np.array_equal(indexed, plain)
        assert len(indexed) > 0


@settings(max_examples=40, deadline=None)
@given(*SIGNATURE_SETS, st.floats(0.0, 0.3), st.booleans())
def test_the_candidates_of_changed_columns_equal_brute_force_and_the_matrix(
    seed, n, m, p, density, changed_share, with_filters
):
    rng = np.random.default_rng(seed)
    params = BloomParams(m=m, k=1, p=p)
    bits, signatures = random_signatures(rng, n, params, density)
    changed = rng.random(n) < changed_share
    cols = rng.random(n) < (0.2 if with_filters else 0.0)
    refs = rng.random(n) < (0.2 if with_filters else 0.0)
    expected = {(d, r) for d, r in brute_candidates(bits, cols, refs) if changed[d] or changed[r]}
    got = propose_changed(signatures, changed, cols, refs)
    assert got.tolist() == [list(pair) for pair in sorted(expected)]  # by (dep, ref), no duplicates
    matrix = SignatureMatrix.from_signatures(signatures, params)
    from_matrix = [propose_range(matrix, 0, n, s, True, cols, refs, changed) for s in STRATEGIES]
    assert as_set(np.concatenate([np.zeros((0, 2), np.int64), *from_matrix])) == expected
    # with the columns' sizes: only the pairs whose dependent side is not the larger
    sizes = rng.integers(0, 4, n)
    by_size = propose_changed(signatures, changed, cols, refs, sizes)
    assert as_set(by_size) == {(d, r) for d, r in expected if sizes[d] <= sizes[r]}


def test_column_ranges_and_arguments():
    assert column_ranges(4, 2) == [(0, 2), (2, 4)]
    assert column_ranges(5, 3) == [(0, 2), (2, 4), (4, 5)]
    assert column_ranges(2, 4) == [(0, 1), (1, 1), (1, 2), (2, 2)]
    with pytest.raises(ValueError):
        column_ranges(3, 0)
    _, matrix = random_matrix(np.random.default_rng(5), 10, BloomParams(m=8, k=1, p=1), 0.3)
    with pytest.raises(ValueError):
        propose(matrix, "both")
    with pytest.raises(ValueError):
        propose_range(matrix, 5, 11)
    with pytest.raises(ValueError):
        propose(matrix, filtered_cols=np.zeros(9, bool))
