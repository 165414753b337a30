"""UCCs, FDs and approximate FDs from agree-sets against brute-force enumeration; minimal hitting sets; the
FD and UCC counts of the fd/ datasets (../shared/data/README.md), computed from the CSV files."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pytest

from lakemeta.agreesets import (
    approximate_fds,
    hitting_sets,
    masks_from_indices,
    masks_to_names,
    maximal_agree_sets,
    minimal_fds,
    minimal_uccs,
    unique_columns,
)
from lakemeta.agreesets.bitmasks import mask_to_indices
from lakemeta.agreesets.dependencies import lhs_attributes
from lakemeta.agreesets.hitting_sets import minimal_hitting_sets
from lakemeta.reference.dynast import DynASt
from tests.unit.agreesets import brute


def state_of(rows: list[brute.Row], n_columns: int) -> DynASt:
    state = DynASt([f"c{i}" for i in range(n_columns)])
    state.apply_batch(inserted=brute.as_batch(rows, n_columns))
    return state


def fd_set(fds: object) -> set[tuple[frozenset[int], int]]:
    return {(frozenset(lhs), rhs) for lhs, rhs in lhs_attributes(fds)}


def random_relations() -> list[list[brute.Row]]:
    rng = np.random.default_rng(2024)
    # empty, one row, duplicates only, no agreement at all, a constant column
    relations = [
        [],
        [("a", "b", "c")],
        [("a", "b", "c")] * 3,
        [("a", "x", "1"), ("b", "y", "2")],
        [("k", "1", "p"), ("k", "2", "q"), ("k", "1", "q")],
    ]
    for _ in range(25):
        n_columns = int(rng.integers(1, 6))
        relations.append(brute.random_rows(rng, int(rng.integers(2, 14)), n_columns, null_rate=0.1))
    return relations


@pytest.mark.parametrize("rows", random_relations())
def test_fds_and_uccs_equal_enumeration(rows: list[brute.Row]) -> None:
    n_columns = len(rows[0]) if rows else 3
    state = state_of(rows, n_columns)
    assert fd_set(minimal_fds(state.multiset, state.n_rows)) == brute.minimal_fds(rows, n_columns)
    uccs = {frozenset(mask_to_indices(m)) for m in minimal_uccs(state.multiset, state.n_rows)}
    assert uccs == brute.minimal_uccs(rows, n_columns)
    exact_by_error = approximate_fds(state.multiset, state.n_rows, 0.0, astree=state.astree)
    assert fd_set(exact_by_error) == brute.minimal_fds(rows, n_columns)
    singles = [a for a in range(n_columns) if frozenset([a]) in uccs or frozenset() in uccs]
    expected_unique = singles if len(rows) > 1 else list(range(n_columns))
    assert np.flatnonzero(unique_columns(state.multiset)).tolist() == expected_unique


@pytest.mark.parametrize("epsilon", [0.05, 0.2, 0.5])
def test_approximate_fds_equal_enumeration(epsilon: float) -> None:
    rng = np.random.default_rng(int(epsilon * 100))
    for _ in range(6):
        n_columns = int(rng.integers(2, 5))
        rows = brute.random_rows(rng, int(rng.integers(3, 16)), n_columns, null_rate=0.0)
        state = state_of(rows, n_columns)
        fds = approximate_fds(state.multiset, state.n_rows, epsilon)
        assert fd_set(fds) == brute.minimal_fds(rows, n_columns, epsilon)
        pairs = len(rows) * (len(rows) - 1) // 2
        for (lhs, rhs), error in zip(lhs_attributes(fds), fds.error, strict=True):
            assert error == pytest.approx(brute.violating_pairs(rows, frozenset(lhs), rhs) / pairs)
    capped = approximate_fds(state.multiset, state.n_rows, 0.0, max_lhs_size=1)
    assert all(len(lhs) <= 1 for lhs, _ in lhs_attributes(capped))


def test_maximal_agree_sets_and_names() -> None:
    rows = [("a", "x", "1"), ("a", "x", "2"), ("a", "y", "1"), ("b", "z", "3")]
    state = state_of(rows, 3)
    maximal = {frozenset(mask_to_indices(m)) for m in maximal_agree_sets(state.multiset, state.n_rows)}
    assert maximal == {frozenset({0, 1}), frozenset({0, 2}), frozenset()} - {frozenset()}
    names = masks_to_names(maximal_agree_sets(state.multiset, state.n_rows), ["zeta", "alpha", "mid"])
    assert sorted(names) == [["alpha", "zeta"], ["mid", "zeta"]]
    fds = minimal_fds(state.multiset, state.n_rows).to_names(["zeta", "alpha", "mid"])
    assert (["alpha"], "zeta", 0.0) in fds


def brute_hitting_sets(edges: list[frozenset[int]], n: int) -> set[frozenset[int]]:
    hitting = [
        frozenset(c)
        for k in range(n + 1)
        for c in combinations(range(n), k)
        if all(frozenset(c) & e for e in edges)
    ]
    return {h for h in hitting if not any(o < h for o in hitting)}


@pytest.mark.parametrize("first_capacity", [1024, 1])  # 1: most searches outgrow the buffer and run again
@pytest.mark.parametrize("n_vertices", [5, 9, 70])
def test_minimal_hitting_sets_equal_brute_force(
    n_vertices: int, first_capacity: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hitting_sets, "_FIRST_CAPACITY", first_capacity)
    rng = np.random.default_rng(n_vertices)
    universe = masks_from_indices([range(n_vertices)], n_vertices)[0]
    for _ in range(15):
        used = rng.choice(n_vertices, min(n_vertices, 9), replace=False)
        edges = [
            frozenset(
                rng.choice(
                    used, int(rng.integers(0 if rng.random() < 0.05 else 1, 5)), replace=False
                ).tolist()
            )
            for _ in range(int(rng.integers(0, 8)))
        ]
        found = {
            frozenset(mask_to_indices(m))
            for m in minimal_hitting_sets(masks_from_indices(edges, n_vertices), universe)
        }
        relabel = {v: i for i, v in enumerate(sorted(used))}
        expected = brute_hitting_sets([frozenset(relabel[v] for v in e) for e in edges], len(used))
        assert found == {frozenset(sorted(used)[i] for i in h) for h in expected}


# -- the fd/ datasets ---------------------------------------------------------------------------------------
DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"

EXPECTED = {  # file: (minimal FDs, minimal UCCs)
    "iris": (4, 0),
    "balance-scale": (1, 1),
    "chess": (1, 1),
    "abalone": (137, 29),
    "nursery": (1, 1),
    "breast-cancer-wisconsin": (46, 0),
    "bridges": (142, 5),
}


def read_strings(path: Path) -> pa.Table:
    """Header-less CSV, every value a string; '?' and '' are ordinary values."""
    header = pcsv.read_csv(path, read_options=pcsv.ReadOptions(autogenerate_column_names=True))
    return pcsv.read_csv(
        path,
        read_options=pcsv.ReadOptions(autogenerate_column_names=True),
        convert_options=pcsv.ConvertOptions(
            column_types=dict.fromkeys(header.column_names, pa.string()),
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fd_and_ucc_counts(name: str) -> None:
    if not DATA.is_dir():
        pytest.skip("fd/ datasets: ../shared/data absent")
    table = read_strings(DATA / "fd" / f"{name}.csv")
    state = DynASt(table.column_names)
    state.apply_batch(inserted=table)
    assert state.n_rows == table.num_rows
    fds = minimal_fds(state.multiset, state.n_rows)
    uccs = minimal_uccs(state.multiset, state.n_rows)
    assert (len(fds), len(uccs)) == EXPECTED[name]
