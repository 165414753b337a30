import math
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakemeta.hashing import hash_strings
from lakemeta.sketches.hll import (
    counter_delta,
    counters_from_bytes,
    counters_to_bytes,
    empty_counters,
    estimate_cardinality,
    fold_registers,
    merge_counters,
    registers,
    registers_from_bytes,
    registers_to_bytes,
)

MASK64 = (1 << 64) - 1


def brute_bucket_rho(h: int, m: int) -> tuple[int, int]:
    """Alg. 3 lines 6-7 written plainly: top m bits, leftmost 1 of the other 64 - m bits (65 - m if none)."""
    bucket = h >> (64 - m) if m else 0
    tail = (h << m) & MASK64
    rho = 64 - tail.bit_length() + 1 if tail else 64 - m + 1
    return bucket, rho


def brute_counters(hash_multiset: Counter, p: int) -> dict[tuple[int, int], int]:
    out: Counter = Counter()
    for h, occurrences in hash_multiset.items():
        if occurrences:
            out[brute_bucket_rho(h, p)] += occurrences
    return dict(out)


def brute_registers(hashes: list[int], m: int) -> list[int]:
    regs = [0] * (1 << m)
    for h in hashes:
        b, r = brute_bucket_rho(h, m)
        regs[b] = max(regs[b], r)
    return regs


def as_dict(c) -> dict[tuple[int, int], int]:
    return {(int(b), int(r)): int(n) for b, r, n in zip(c.bucket, c.rho, c.count, strict=True)}


def hashes_of(values: list[str]) -> np.ndarray:
    h, valid = hash_strings(pa.array(values, type=pa.string()))
    return h[valid]


# hashes whose tail after the bucket bits is all zero exercise the rho cap
EDGE_HASHES = np.array(
    [0, 1, MASK64, 1 << 63, (1 << 63) | 1, 0xFFFF000000000000, 0x0001000000000000], np.uint64
)


def test_counter_delta_matches_brute_force_with_duplicates_and_signs() -> None:
    rng = np.random.default_rng(5)
    hashes = np.concatenate([rng.integers(0, 2**64, 3000, dtype=np.uint64), EDGE_HASHES])
    hashes = np.concatenate([hashes, hashes[:500]])  # duplicates
    signs = np.where(rng.random(hashes.size) < 0.3, -1, 1)
    for p in (0, 4, 10, 14):
        expected: Counter = Counter()
        for h, s in zip(hashes.tolist(), signs.tolist(), strict=True):
            expected[brute_bucket_rho(h, p)] += s
        expected = {k: v for k, v in expected.items() if v}
        assert as_dict(counter_delta(hashes, signs, p)) == expected


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


@pytest.mark.parametrize("n", [0, 1, 7, 300, 20000])
def test_folding_equals_direct_build_for_every_m(n: int) -> None:
    rng = np.random.default_rng(n)
    hashes = np.concatenate([rng.integers(0, 2**64, n, dtype=np.uint64), EDGE_HASHES[: min(n, 7)]])
    p = 12
    at_p = registers(counter_delta(hashes, None, p))
    matrix = np.stack([at_p, registers(counter_delta(hashes[: n // 2], None, p))])
    for m in range(p + 1):
        direct = registers(counter_delta(hashes, None, m))
        assert np.array_equal(fold_registers(at_p, p, m), direct)
        assert np.array_equal(registers(counter_delta(hashes, None, p), m), direct)
        assert np.array_equal(
            fold_registers(matrix, p, m)[1], registers(counter_delta(hashes[: n // 2], None, m))
        )
        if n <= 300:
            assert direct.tolist() == brute_registers(hashes.tolist(), m)


def test_folding_default_precision_to_low_m() -> None:
    rng = np.random.default_rng(99)
    hashes = np.concatenate([rng.integers(0, 2**64, 50000, dtype=np.uint64), EDGE_HASHES])
    at_14 = registers(counter_delta(hashes))
    for m in (0, 1, 5, 9, 13):
        assert np.array_equal(fold_registers(at_14, 14, m), registers(counter_delta(hashes, None, m)))
    with pytest.raises(ValueError):
        fold_registers(at_14, 14, 15)


@pytest.mark.parametrize(
    "n, m",
    [(10, 14), (100, 14), (1000, 14), (10_000, 14), (100_000, 14), (1_000_000, 14), (5000, 8), (200_000, 10)],
)
def test_cardinality_within_three_standard_errors(n: int, m: int) -> None:
    rng = np.random.default_rng(1000 + n)
    hashes = rng.integers(0, 2**64, n, dtype=np.uint64)
    hashes = np.concatenate([hashes, hashes[: n // 3]])  # duplicates must not count
    estimate = float(estimate_cardinality(registers(counter_delta(hashes), m)))
    assert abs(estimate - n) <= 3 * 1.04 / math.sqrt(1 << m) * n


def test_cardinality_of_many_columns_at_once_and_of_strings() -> None:
    values = [f"customer-{i}" for i in range(3000)]
    regs = np.stack([registers(counter_delta(hashes_of(values[:k]))) for k in (0, 1, 50, 3000)])
    est = estimate_cardinality(regs)
    assert est[0] == 0.0
    assert np.allclose(est[1:], [1, 50, 3000], rtol=3 * 1.04 / 128)


def test_cardinality_range_corrections() -> None:
    # large range: raw E above 2^64 / 30 is corrected to -2^64 ln(1 - E / 2^64)
    regs = np.full(16, 60, np.uint8)
    raw = 0.673 * 16 * 16 / (16 * 2.0**-60)
    assert raw > 2.0**64 / 30
    assert estimate_cardinality(regs) == pytest.approx(-(2.0**64) * math.log(1 - raw / 2.0**64), rel=1e-12)
    # small range: linear counting M ln(M / V)
    regs = np.zeros(64, np.uint8)
    regs[:5] = 1
    assert estimate_cardinality(regs) == pytest.approx(64 * math.log(64 / 59), rel=1e-12)
    with pytest.raises(ValueError):
        estimate_cardinality(np.zeros(8, np.uint8))


def test_serialisation_round_trips() -> None:
    rng = np.random.default_rng(4)
    hashes = rng.integers(0, 2**64, 10000, dtype=np.uint64)
    for p in (4, 14, 18):
        state = counter_delta(np.concatenate([hashes, np.repeat(hashes[:3], 70000)]), None, p)
        data = counters_to_bytes(state)
        assert counters_from_bytes(data) == state
        # 15-byte header; per entry: bucket 2 bytes (p <= 16) or 4, rho 1, count 4 (70000 needs int32)
        assert len(data) == 15 + len(state) * ((2 if p <= 16 else 4) + 1 + 4)
    delta = counter_delta(hashes[:100], -np.ones(100, np.int64), 14)
    assert counters_from_bytes(counters_to_bytes(delta)) == delta
    assert len(counters_to_bytes(delta)) == 15 + len(delta) * (2 + 1 + 1)
    assert counters_from_bytes(counters_to_bytes(empty_counters())) == empty_counters()
    regs = registers(counter_delta(hashes))
    assert np.array_equal(registers_from_bytes(registers_to_bytes(regs)), regs)
    with pytest.raises(ValueError):
        counters_from_bytes(registers_to_bytes(regs))
