"""Small vectorised helpers on sorted numpy arrays, shared by the kernels of several packages."""

from __future__ import annotations

import numpy as np


def run_starts(ordered: np.ndarray) -> np.ndarray:
    """For a sorted array, True at the first element of each run of equal values."""
    starts = np.ones(len(ordered), dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    return starts


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` by a plain sort: several times faster for millions of 64-bit hashes in numpy 2."""
    ordered = np.sort(values)
    return ordered[run_starts(ordered)]
