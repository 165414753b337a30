"""Keys, functional dependencies and approximate FDs derived from an agree-set multiset (state metrics).

Everything here is a function of ES^m(r) and |r| only (DynASt §2: the second, derivation phase of
data-driven discovery). The empty agree-set is not stored (§3), but it still matters for derivation: it is
present exactly when some pair disagrees everywhere, i.e. when the stored counts sum to less than
|r|(|r|-1)/2. It is therefore added back wherever the derivation needs the full evidence set.

* Keys (UCCs). X is unique iff no agree-set contains X, i.e. X meets the complement R \\ S of every agree-set
  S. Minimal UCCs are the minimal hitting sets of those complements (maximal S suffice). A duplicate row gives
  S = R, an empty complement, hence no UCC at all; with |r| <= 1 there is no pair and the empty set is the
  only minimal UCC.
* FDs (DepMiner, as in DynASt §1). X -> A (A not in X) holds iff no agree-set S with A not in S contains X.
  With max(r, A) the maximal agree-sets without A and cmax(r, A) = {R \\ S \\ {A}}, the minimal left-hand
  sides are the minimal transversals of cmax(r, A). No agree-set lacks A (A constant, or |r| <= 1): the only
  transversal is the empty set, so {} -> A. An S = R \\ {A} gives an empty edge, so nothing determines A.
* Approximate FDs. Def. 6.2: err(X -> A) = 2 |{as in ES^m(r) : not satisfy(as, X -> A)}| / (|r|(|r|-1)),
  the violating agree-sets being the specialisations of X that exclude A, found with the AStree (§6). For
  X = {} every pair disagreeing on A violates, including the pairs with an empty agree-set (Def. 6.1), so
  their number is added. The error is antitone in X, so the minimal X with err <= epsilon are found
  level-wise, a candidate being generated only when all its subsets failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from lakemeta.agreesets.astree import AStree
from lakemeta.agreesets.bitmasks import mask_to_indices, masks_from_indices, masks_to_names
from lakemeta.agreesets.hitting_sets import minimal_hitting_sets, minimal_sets
from lakemeta.agreesets.multiset import AgreeSetMultiset


@dataclass(frozen=True)
class FunctionalDependencies:
    """FDs X -> A: ``lhs`` mask rows, ``rhs`` attribute indices, ``error`` per Def. 6.2 (0.0 when exact)."""

    lhs: np.ndarray
    rhs: np.ndarray
    error: np.ndarray

    def __len__(self) -> int:
        return len(self.rhs)

    def to_names(self, column_names: Sequence[str]) -> list[tuple[list[str], str, float]]:
        """(sorted LHS column names, RHS column name, error) per FD: the catalog's layout."""
        lhs_names = masks_to_names(self.lhs, column_names) if len(self) else []
        return [
            (names, column_names[int(a)], float(e))
            for names, a, e in zip(lhs_names, self.rhs, self.error, strict=True)
        ]


def tuple_pairs(n_rows: int) -> int:
    """|r ⊗ r| without the diagonal: |r|(|r|-1)/2."""
    return n_rows * (n_rows - 1) // 2


def empty_agree_set_pairs(multiset: AgreeSetMultiset, n_rows: int) -> int:
    """Number of pairs whose agree-set is empty (not stored in the multiset)."""
    empty = tuple_pairs(n_rows) - multiset.total()
    if empty < 0:
        raise ValueError("the multiset counts more pairs than |r|(|r|-1)/2")
    return empty


def _full_mask(n_attributes: int) -> np.ndarray:
    return masks_from_indices([range(n_attributes)], n_attributes)[0]


def evidence_set(multiset: AgreeSetMultiset, n_rows: int) -> np.ndarray:
    """ES(r) as mask rows, including the empty agree-set when some pair has it."""
    masks, _ = multiset.masks_and_counts()
    if empty_agree_set_pairs(multiset, n_rows) > 0:
        masks = np.vstack([masks, np.zeros((1, multiset.attr_words), dtype=np.uint64)])
    return masks


def maximal_agree_sets(multiset: AgreeSetMultiset, n_rows: int) -> np.ndarray:
    """The inclusion-maximal agree-sets (complements of the minimal complements)."""
    full = _full_mask(multiset.n_attributes)
    return full & ~minimal_sets(full & ~evidence_set(multiset, n_rows))


def unique_columns(multiset: AgreeSetMultiset) -> np.ndarray:
    """Per attribute, True when no agree-set contains it (no two tuples share a value there)."""
    masks, _ = multiset.masks_and_counts()
    covered = np.bitwise_or.reduce(masks, axis=0) if len(masks) else np.zeros(multiset.attr_words, np.uint64)
    bits = np.unpackbits(np.ascontiguousarray(covered, dtype="<u8").view(np.uint8), bitorder="little")
    return bits[: multiset.n_attributes] == 0


def minimal_uccs(multiset: AgreeSetMultiset, n_rows: int) -> np.ndarray:
    """Minimal unique column combinations as mask rows (minimal hitting sets of the complements)."""
    full = _full_mask(multiset.n_attributes)
    return minimal_hitting_sets(full & ~maximal_agree_sets(multiset, n_rows), full)


def minimal_fds(multiset: AgreeSetMultiset, n_rows: int) -> FunctionalDependencies:
    """Minimal non-trivial exact FDs X -> A with a single attribute on the right (DepMiner)."""
    n = multiset.n_attributes
    full = _full_mask(n)
    evidence = evidence_set(multiset, n_rows)
    lhs, rhs = [], []
    for a in range(n):
        without_a = (evidence[:, a // 64] >> np.uint64(a % 64)) & np.uint64(1) == 0
        others = full.copy()
        others[a // 64] &= ~(np.uint64(1) << np.uint64(a % 64))
        transversals = minimal_hitting_sets(others & ~evidence[without_a], others)
        lhs.append(transversals)
        rhs.append(np.full(len(transversals), a, dtype=np.int64))
    lhs_masks = np.vstack(lhs)
    return FunctionalDependencies(lhs_masks, np.concatenate(rhs), np.zeros(len(lhs_masks)))


def fd_errors(astree: AStree, n_rows: int, lhs: np.ndarray, rhs: int) -> np.ndarray:
    """err(X -> rhs) of Def. 6.2 for each LHS mask row X, from the AStree and the multiset counts."""
    multiset = astree.multiset
    lhs = np.ascontiguousarray(lhs, dtype=np.uint64).reshape(-1, multiset.attr_words)
    pairs = tuple_pairs(n_rows)
    if pairs == 0:
        return np.zeros(len(lhs))
    excluded = masks_from_indices([[rhs]], multiset.n_attributes)
    violating = astree.specialisation_counts(lhs, np.repeat(excluded, len(lhs), axis=0))
    violating = violating + np.where(lhs.any(axis=1), 0, empty_agree_set_pairs(multiset, n_rows))
    return violating / pairs


def _next_level(failed: set[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Apriori candidate generation: (k+1)-sets all of whose k-subsets failed."""
    ordered = sorted(failed)
    candidates = []
    for i, left in enumerate(ordered):
        for right in ordered[i + 1 :]:
            if left[:-1] != right[:-1]:
                break
            candidate = (*left, right[-1])
            if all(subset in failed for subset in combinations(candidate, len(candidate) - 1)):
                candidates.append(candidate)
    return candidates


def approximate_fds(
    multiset: AgreeSetMultiset,
    n_rows: int,
    epsilon: float,
    *,
    astree: AStree | None = None,
    max_lhs_size: int | None = None,
) -> FunctionalDependencies:
    """Minimal FDs X -> A with err(X -> A) <= epsilon (Def. 6.2), |X| <= ``max_lhs_size`` when given."""
    tree = astree if astree is not None else AStree(multiset)
    n = multiset.n_attributes
    lhs, rhs, errors = [], [], []
    for a in range(n):
        level: list[tuple[int, ...]] = [()]
        while level and (max_lhs_size is None or len(level[0]) <= max_lhs_size):
            level_errors = fd_errors(tree, n_rows, masks_from_indices(level, n), a)
            failed = set()
            for candidate, error in zip(level, level_errors, strict=True):
                if error <= epsilon:
                    lhs.append(candidate)
                    rhs.append(a)
                    errors.append(error)
                else:
                    failed.add(candidate)
            level = [(b,) for b in range(n) if b != a] if level == [()] and failed else _next_level(failed)
    return FunctionalDependencies(
        masks_from_indices(lhs, n), np.array(rhs, dtype=np.int64), np.array(errors, dtype=np.float64)
    )


def lhs_attributes(fds: FunctionalDependencies) -> list[tuple[list[int], int]]:
    """(LHS attribute indices, RHS index) per FD, for readable comparisons."""
    return [(mask_to_indices(mask), int(a)) for mask, a in zip(fds.lhs, fds.rhs, strict=True)]
