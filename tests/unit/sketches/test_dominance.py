"""z(X, Y) for given pairs over all 2^p registers: each of the kernel's three ways to count it (X's filled
registers, Y's, or word by word) equals comparing the two rows, at every row width."""

import numpy as np
import pytest

from lakemeta.sketches.dominance import dominated_counts


@pytest.mark.parametrize("width", [4, 16, 64, 1024])
def test_dominated_counts_equal_comparing_the_rows(width: int) -> None:
    rng = np.random.default_rng(width)
    rows = []
    for filled_share in (0.0, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0):  # empty, sparse, around 1/8, dense
        for _ in range(4):
            row = rng.integers(1, 256, width).astype(np.uint8)  # values above 127 test unsigned lanes
            row[rng.random(width) >= filled_share] = 0
            rows.append(row)
    regs = np.stack(rows)
    x, y = (a.ravel() for a in np.meshgrid(np.arange(len(rows)), np.arange(len(rows))))
    # the parallel path starts at 2,048 pairs; repeat the pairs to take it as well as the serial one
    for times in (1, 3):
        xs, ys = np.tile(x, times), np.tile(y, times)
        assert np.array_equal(dominated_counts(regs, xs, ys), (regs[xs] <= regs[ys]).sum(axis=1))
