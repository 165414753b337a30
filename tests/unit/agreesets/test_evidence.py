"""Δ+ / Δ- / from-scratch agree-set multisets against a brute-force pairwise comparison."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lakemeta.agreesets import AgreeSetMultiset, CompressedRelation, delta_minus, delta_plus, from_scratch
from lakemeta.agreesets.bitmasks import mask_to_indices
from lakemeta.agreesets.evidence import evidence_kernel
from tests.unit.agreesets.brute import as_batch, evidence_multiset, random_rows


def as_counter(multiset: AgreeSetMultiset) -> dict[frozenset[int], int]:
    masks, counts = multiset.masks_and_counts()
    return {frozenset(mask_to_indices(m)): int(c) for m, c in zip(masks, counts, strict=True)}


EMPLOYEE = [
    ("John", "Bond", "Manager", "2500"),
    ("Marie", "Miller", "Manager", "3000"),
    ("Marie", "Bond", "Employee", "2000"),
    ("Tom", "Gray", "Manager", "3000"),
]


def test_paper_example_table_1() -> None:
    """§3: ES^m(Emp^curr), Δ- of deleting t4 and Δ+ of inserting t5, t6 (Table 2's codes: t3, t5 share P)."""
    relation = CompressedRelation(["FN", "LN", "P", "S"])
    _, curr, _ = delta_plus(relation, as_batch(EMPLOYEE, 4))
    fn, ln, p, s = (frozenset([a]) for a in range(4))
    assert as_counter(curr) == {p: 2, ln: 1, fn: 1, p | s: 1}
    minus, _ = delta_minus(relation, np.array([3]))
    assert as_counter(minus) == {p: 1, p | s: 1}
    _, plus, _ = delta_plus(
        relation, as_batch([("John", "Miller", "Employee", "2000"), ("Anna", "Scott", "Manager", "3000")], 4)
    )
    assert as_counter(plus) == {fn: 1, ln: 1, p | s: 2, p: 1}
    curr.update(plus, minus)
    assert as_counter(curr) == {ln: 2, p: 2, fn: 2, p | s: 2}


@pytest.mark.parametrize("null_equals_null", [True, False])
@pytest.mark.parametrize("factorize", [True, False])
@pytest.mark.parametrize("n_columns", [1, 3, 6, 70])
def test_insert_equals_brute_force(null_equals_null: bool, factorize: bool, n_columns: int) -> None:
    rng = np.random.default_rng(n_columns * 7 + factorize + 2 * null_equals_null)
    for trial in range(4):
        rows = random_rows(rng, int(rng.integers(0, 40)), n_columns, n_values=2 if n_columns > 10 else 3)
        relation = CompressedRelation([f"c{i}" for i in range(n_columns)], null_equals_null=null_equals_null)
        chunk = int(rng.integers(1, 9))
        _, plus, _ = delta_plus(relation, as_batch(rows, n_columns), factorize=factorize, chunk_size=chunk)
        assert as_counter(plus) == dict(evidence_multiset(rows, null_equals_null)), trial
        scratch, _ = from_scratch(relation, factorize=factorize, chunk_size=chunk)
        assert scratch == plus


@pytest.mark.parametrize("null_equals_null", [True, False])
def test_delta_minus_equals_brute_force(null_equals_null: bool) -> None:
    rng = np.random.default_rng(5)
    for n_columns in (2, 5, 67):
        rows = random_rows(rng, 30, n_columns)
        relation = CompressedRelation([f"c{i}" for i in range(n_columns)], null_equals_null=null_equals_null)
        positions, _, _ = delta_plus(relation, as_batch(rows, n_columns))
        deleted = rng.choice(len(rows), 12, replace=False)
        minus, _ = delta_minus(relation, positions[deleted], chunk_size=5)
        kept = [row for i, row in enumerate(rows) if i not in set(deleted)]
        expected = evidence_multiset(rows, null_equals_null)
        expected.subtract(evidence_multiset(kept, null_equals_null))
        assert as_counter(minus) == {k: v for k, v in expected.items() if v}
        assert as_counter(from_scratch(relation)[0]) == dict(evidence_multiset(kept, null_equals_null))


def test_product_counts_section_5_3_example() -> None:
    """§5.3: four tuples sharing suffixes need 12 zip-bit products one by one and 8 with Algorithm 3."""
    # leaf vectors v11 v12 v13 v14 v21 v31 v32 v41 v42 = ids 0..8, with their attributes
    attribute = np.array([0, 1, 2, 3, 0, 0, 1, 0, 1], dtype=np.int64)
    bits = np.zeros((len(attribute), 1), dtype=np.uint64)
    rows = np.array([[0, 1, 2, 3], [4, 1, 2, 3], [5, 6, 2, 3], [7, 8, 2, 3]], dtype=np.int64)
    for factorize, expected in ((True, 8), (False, 12)):
        multiset = AgreeSetMultiset(4)
        result = evidence_kernel(
            bits.copy(),
            attribute,
            rows,
            rows,
            np.arange(4, dtype=np.int64),
            np.arange(64, dtype=np.int64),
            1,
            1,
            factorize,
            64,
            multiset.keys,
            multiset.counts,
            multiset.slots,
            multiset.size,
        )
        assert (result[3], result[4]) == (expected, 12)


def test_from_scratch_leaves_relation_unchanged() -> None:
    rng = np.random.default_rng(3)
    rows = random_rows(rng, 25, 4)
    relation = CompressedRelation(["a", "b", "c", "d"])
    delta_plus(relation, as_batch(rows, 4))
    before = relation.bits.copy()
    from_scratch(relation)
    assert np.array_equal(before, relation.bits)


def test_batch_input_forms() -> None:
    """numpy arrays, pyarrow tables and record batches encode alike; numbers become strings."""
    table = pa.table({"a": ["1", "2", "1"], "b": ["x", None, "x"]})
    results = []
    arrays = [np.array([1, 2, 1]), np.array(["x", None, "x"], dtype=object)]
    for batch in (table, table.to_batches()[0], arrays):
        relation = CompressedRelation(["a", "b"])
        _, plus, _ = delta_plus(relation, batch)
        results.append(as_counter(plus))
    assert results[0] == results[1] == results[2] == {frozenset([0, 1]): 1}
    with pytest.raises(ValueError):
        delta_plus(CompressedRelation(["a"]), table)
