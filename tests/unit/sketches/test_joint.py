"""Φ from the joint distribution of register pairs (``joint``) on large random columns with known overlaps:
within its bound, and closer than the dominated-bucket look-up of the exact marginal (``bml``)."""

from __future__ import annotations

import numpy as np

from lakemeta.sketches.bml import EXACT_MARGINAL, estimate_inclusion
from lakemeta.sketches.hll import counter_delta, estimate_cardinality, registers
from lakemeta.sketches.joint import joint_inclusion


def test_joint_estimates_of_large_columns_are_close_and_within_their_bounds() -> None:
    rng = np.random.default_rng(17)
    universe = rng.integers(0, 2**64, 1_200_000, dtype=np.uint64)
    rows, truth = [], []
    for _ in range(12):
        n_x, n_y = (int(n) for n in rng.integers(30_000, 300_000, 2))
        shared = int(rng.uniform(0.0, 1.0) * min(n_x, n_y))
        start = int(rng.integers(0, universe.size - n_x - n_y))
        x = universe[start : start + n_x]
        y = universe[start + n_x - shared : start + n_x - shared + n_y]
        rows += [registers(counter_delta(x)), registers(counter_delta(y))]
        truth.append(shared / n_x)
    regs = np.stack(rows)
    xs, ys = np.arange(0, 24, 2), np.arange(1, 24, 2)
    n = estimate_cardinality(regs)
    phi, bound = joint_inclusion(regs, xs, ys, n, 0.95)
    error = np.abs(phi - np.array(truth))
    assert error.mean() < 0.01 and (error <= bound).mean() >= 0.75
    assert np.all((phi >= 0) & (phi <= 1)) and np.all((bound > 0) & (bound < 0.1))
    dominated = estimate_inclusion(regs, xs, ys, n, model=EXACT_MARGINAL)
    assert error.mean() < np.abs(dominated.estimate - np.array(truth)).mean()
    # at the ends of the range: a column inside another (Φ = 1) and two disjoint ones (Φ = 0)
    inside, outer, apart = universe[:50_000], universe[:400_000], universe[600_000:700_000]
    ends = np.stack([registers(counter_delta(c)) for c in (inside, outer, apart)])
    phi, bound = joint_inclusion(ends, np.array([0, 0]), np.array([1, 2]), estimate_cardinality(ends), 0.95)
    assert phi[0] >= 1.0 - bound[0] and phi[0] > 0.97 and phi[1] <= bound[1] and phi[1] < 0.03
    # no pairs, no work
    empty = joint_inclusion(regs, xs[:0], ys[:0], n, 0.95)
    assert empty[0].shape == empty[1].shape == (0,)
