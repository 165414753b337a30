import math
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.hashing import hash_strings
from lakemeta.sketches.hll import (
    counter_delta,
    counters_from_bytes,
    counters_to_bytes,
    empty_counters,
    estimate_cardinality,
    fold_registers,
    registers,
    registers_from_bytes,
    registers_of,
    registers_to_bytes,
    relative_standard_error,
)

MASK64 = (1 << 64) - 1


def brute_bucket_rho(h: int, m: int) -> tuple[int, int]:
    """Alg. 3 lines 6-7 written plainly: top m bits, leftmost 1 of the other 64 - m bits (65 - m if none)."""
    bucket = h >> (64 - m) if m else 0
    tail = (h << m) & MASK64
    rho = 64 - tail.bit_length() + 1 if tail else 64 - m + 1
    return bucket, rho


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


@pytest.mark.parametrize("n", [0, 1, 300, 5000])
def test_registers_of_a_set_equal_the_registers_of_its_counters_and_brute_force(n: int) -> None:
    rng = np.random.default_rng(n)
    hashes = np.concatenate([rng.integers(0, 2**64, n, dtype=np.uint64), EDGE_HASHES])
    hashes = np.concatenate([hashes, hashes[: n // 3]])  # duplicates
    for p in (0, 4, 14):
        direct = registers_of(hashes, p)
        assert direct.dtype == np.uint8
        assert np.array_equal(direct, registers(counter_delta(hashes, p=p)))
        assert direct.tolist() == brute_registers(hashes.tolist(), p)


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
    assert abs(estimate - n) <= 3 * relative_standard_error(m) * n


def test_cardinality_of_many_columns_at_once_and_of_strings() -> None:
    values = [f"customer-{i}" for i in range(3000)]
    regs = np.stack([registers(counter_delta(hashes_of(values[:k]))) for k in (0, 1, 50, 3000)])
    est = estimate_cardinality(regs)
    assert est[0] == 0.0
    assert np.allclose(est[1:], [1, 50, 3000], rtol=3 * relative_standard_error(14))


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
