"""One table batch's change of ES^m against brute force over the two snapshots, and a full batch against the
reference per-table state (``lakemeta.reference.dynast``)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.agreesets.batch_delta import AgreeSetDelta, agree_set_delta, name_lists
from lakemeta.agreesets.bitmasks import mask_to_indices
from lakemeta.agreesets.values import comparable_table
from lakemeta.reference.dynast import DynASt
from tests.unit.agreesets.brute import Row, as_batch, evidence_multiset, random_rows

N_COLUMNS = 4
NAMES = [f"c{i}" for i in range(N_COLUMNS)]


def snapshot(rows: list[Row]) -> pa.Table:
    return comparable_table(pa.table(dict(zip(NAMES, as_batch(rows, N_COLUMNS), strict=True))))


def as_sets(masks: np.ndarray, counts: np.ndarray) -> dict[frozenset[int], int]:
    return {frozenset(mask_to_indices(m)): int(c) for m, c in zip(masks, counts, strict=True)}


def signed(delta: AgreeSetDelta) -> dict[frozenset[int], int]:
    return as_sets(delta.masks, delta.counts)


@pytest.mark.parametrize(("seed", "null_equals_null"), [(0, True), (1, False), (2, True)])
def test_delta_equals_brute_force(seed: int, null_equals_null: bool) -> None:
    rng = np.random.default_rng(seed)
    before = random_rows(rng, 30, N_COLUMNS)
    after = [row for row in before if rng.random() < 0.7] + random_rows(rng, 10, N_COLUMNS)
    delta = agree_set_delta(snapshot(before), snapshot(after), null_equals_null)
    expected = evidence_multiset(after, null_equals_null)
    expected.subtract(evidence_multiset(before, null_equals_null))
    assert signed(delta) == {s: c for s, c in expected.items() if c}
    # The batch is the multiset difference of the snapshots: rows of equal copies are neither.
    assert delta.rows_deleted == (Counter(before) - Counter(after)).total()
    assert delta.rows_inserted == (Counter(after) - Counter(before)).total()


def test_full_batch_equals_the_reference_state() -> None:
    rows = random_rows(np.random.default_rng(3), 40, N_COLUMNS)
    delta = agree_set_delta(None, snapshot(rows))
    reference = DynASt(NAMES)
    reference.apply_batch(inserted=as_batch(rows, N_COLUMNS))
    assert signed(delta) == as_sets(*reference.multiset.masks_and_counts())
    assert name_lists(delta.masks, NAMES).to_pylist() == [
        [NAMES[a] for a in sorted(mask_to_indices(m))] for m in delta.masks
    ]
