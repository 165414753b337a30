"""Plain brute-force references for the agree-set tests: pairwise comparison, no bitsets, no kernels."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np
import pyarrow as pa

Row = tuple[str | None, ...]


def random_rows(
    rng: np.random.Generator, n_rows: int, n_columns: int, n_values: int = 3, null_rate: float = 0.15
) -> list[Row]:
    """Small-domain rows (so pairs agree often), with nulls and duplicate rows."""
    rows = []
    for _ in range(n_rows):
        if rows and rng.random() < 0.1:
            rows.append(rows[int(rng.integers(len(rows)))])  # a duplicate tuple
            continue
        rows.append(
            tuple(
                None if rng.random() < null_rate else f"v{int(rng.integers(n_values))}"
                for _ in range(n_columns)
            )
        )
    return rows


def as_batch(rows: list[Row], n_columns: int) -> list[pa.Array]:
    return [pa.array([row[c] for row in rows], pa.string()) for c in range(n_columns)]


def equal(x: str | None, y: str | None, null_equals_null: bool) -> bool:
    if x is None or y is None:
        return null_equals_null and x is None and y is None
    return x == y


def agree_set(t: Row, u: Row, null_equals_null: bool = True) -> frozenset[int]:
    return frozenset(a for a in range(len(t)) if equal(t[a], u[a], null_equals_null))


def evidence_multiset(rows: list[Row], null_equals_null: bool = True) -> Counter:
    """ES^m(r) by comparing every unordered pair; empty agree-sets dropped."""
    counts = Counter(agree_set(t, u, null_equals_null) for t, u in combinations(rows, 2))
    counts.pop(frozenset(), None)
    return counts


def violating_pairs(rows: list[Row], lhs: frozenset[int], rhs: int) -> int:
    """Def. 6.1: pairs equal on lhs and different on rhs."""
    return sum(1 for t, u in combinations(rows, 2) if all(t[a] == u[a] for a in lhs) and t[rhs] != u[rhs])


def subsets(items: list[int]) -> list[frozenset[int]]:
    return [frozenset(c) for k in range(len(items) + 1) for c in combinations(items, k)]


def minimal_fds(rows: list[Row], n_columns: int, epsilon: float = 0.0) -> set[tuple[frozenset[int], int]]:
    """Minimal X -> A with error <= epsilon (Def. 6.1), by enumerating every X."""
    pairs = len(rows) * (len(rows) - 1) // 2
    found = set()
    for a in range(n_columns):
        holds = {
            x
            for x in subsets([b for b in range(n_columns) if b != a])
            if (violating_pairs(rows, x, a) / pairs if pairs else 0.0) <= epsilon
        }
        found |= {(x, a) for x in holds if not any((x - {b}) in holds for b in x)}
    return found


def minimal_uccs(rows: list[Row], n_columns: int) -> set[frozenset[int]]:
    unique = {
        x
        for x in subsets(list(range(n_columns)))
        if len({tuple(row[a] for a in sorted(x)) for row in rows}) == len(rows)
    }
    return {x for x in unique if not any((x - {b}) in unique for b in x)}
