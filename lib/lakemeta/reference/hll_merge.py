"""The merge of HLL counters (BML §4) in memory: the reference for the state's MERGE.

The state ``state/hll_counters`` is merged by ``catalog.counts.merge_counts`` (one Delta MERGE of signed
counts, :class:`lakemeta.sketches.state.HllCounters`); this is the same merge on one column's counters
(:class:`lakemeta.sketches.hll.ColumnHllCounters`), which the tests use to check that counters maintained
under insertions and deletions equal the counters built from the final multiset.
"""

from __future__ import annotations

import numpy as np

from lakemeta.sketches.hll import ColumnHllCounters, add_counters


def merge_counters(state: ColumnHllCounters, delta: ColumnHllCounters) -> ColumnHllCounters:
    """state + delta, zero counts dropped (BML §4: a heap node goes when its counter reaches zero).

    Raises ValueError if any count would become negative: the delta deletes occurrences the state lacks.
    """
    merged = add_counters(state, delta)
    negative = np.flatnonzero(merged.count < 0)
    if negative.size:
        i = negative[0]
        raise ValueError(
            f"{negative.size} counter(s) would go negative, first bucket={merged.bucket[i]} "
            f"rho={merged.rho[i]} count={merged.count[i]}: deleting occurrences never inserted"
        )
    return merged
