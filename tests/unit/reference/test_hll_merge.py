"""The in-memory merge of HLL counters (the reference for the state's MERGE) with the production deltas and
registers: counters maintained under insertions and deletions equal those of the final multiset, and a
deletion lowers a register exactly."""

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.reference.hll_merge import merge_counters
from lakemeta.sketches.hll import counter_delta, empty_counters, registers

from ..sketches.test_hll import as_dict, brute_bucket_rho, brute_registers, hashes_of


def brute_counters(hash_multiset: Counter, p: int) -> dict[tuple[int, int], int]:
    out: Counter = Counter()
    for h, occurrences in hash_multiset.items():
        if occurrences:
            out[brute_bucket_rho(h, p)] += occurrences
    return dict(out)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.sampled_from(["ins", "del"]), st.integers(0, 40)), max_size=30),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from([4, 8, 14]),
)
def test_incremental_counters_equal_rebuild_from_final_multiset(batches, p) -> None:
    pool = [f"v{i}" for i in range(41)]
    pool_hashes = hashes_of(pool)
    multiset: Counter = Counter()
    state = empty_counters(p)
    for batch in batches:
        idx, signs = [], []
        for op, i in batch:
            if op == "ins":
                multiset[i] += 1
            elif multiset[i] > 0:  # a delete removes an occurrence that exists
                multiset[i] -= 1
            else:
                continue
            idx.append(i)
            signs.append(1 if op == "ins" else -1)
        state = merge_counters(state, counter_delta(pool_hashes[idx], np.array(signs, np.int64), p))
        final = [i for i, c in multiset.items() for _ in range(c)]
        assert state == counter_delta(pool_hashes[final], None, p)
        assert as_dict(state) == brute_counters(
            Counter({int(pool_hashes[i]): c for i, c in multiset.items()}), p
        )
        assert registers(state).tolist() == brute_registers([int(pool_hashes[i]) for i in final], p)


def test_emptying_a_column_then_refilling() -> None:
    rng = np.random.default_rng(8)
    hashes = rng.integers(0, 2**64, 5000, dtype=np.uint64)
    hashes = np.concatenate([hashes, hashes[:1000]])
    state = merge_counters(empty_counters(), counter_delta(hashes))
    state = merge_counters(state, counter_delta(hashes, -np.ones(hashes.size, np.int64)))
    assert len(state) == 0 and state == empty_counters()
    assert not registers(state).any()
    refill = hashes[:2000]
    state = merge_counters(state, counter_delta(refill))
    assert state == counter_delta(refill)


def test_deleting_last_occurrence_of_max_rho_lowers_register_exactly() -> None:
    p = 6
    hashes = np.random.default_rng(21).integers(0, 2**64, 400, dtype=np.uint64)
    state = counter_delta(np.concatenate([hashes, hashes[:50]]), None, p)  # the first 50 values twice
    regs = registers(state)
    bucket_rho = [brute_bucket_rho(h, p) for h in hashes.tolist()]
    checked: Counter = Counter()
    for i, (b, r) in enumerate(bucket_rho):
        if regs[b] != r or [rr for bb, rr in bucket_rho if bb == b].count(r) != 1:
            continue  # only the unique holder of its bucket's max rho
        second = max([rr for j, (bb, rr) in enumerate(bucket_rho) if bb == b and j != i], default=0)
        delete_one = counter_delta(hashes[i : i + 1], np.array([-1]), p)
        after = merge_counters(state, delete_one)
        if i < 50:  # one occurrence is left: the register stays, the second delete lowers it
            assert registers(after)[b] == r
            after = merge_counters(after, delete_one)
        lowered = registers(after)
        assert lowered[b] == second < r
        assert np.array_equal(np.delete(lowered, b), np.delete(regs, b))
        checked[i < 50] += 1
    assert checked[False] > 5 and checked[True] > 0


def test_merge_rejects_negative_counts_and_precision_mismatch() -> None:
    h = np.array([123456789, 987654321], np.uint64)
    state = counter_delta(h)
    with pytest.raises(ValueError, match="negative"):
        merge_counters(state, counter_delta(np.array([5], np.uint64), np.array([-1])))
    with pytest.raises(ValueError, match="negative"):
        merge_counters(state, counter_delta(h[:1], np.array([-2])))
    with pytest.raises(ValueError, match="precision"):
        merge_counters(state, counter_delta(h, None, 10))
    with pytest.raises(ValueError):
        counter_delta(h, np.array([1]))
