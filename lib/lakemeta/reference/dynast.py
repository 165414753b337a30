"""DynASt state for one table: compressed relation, evidence multiset and AStree, updated per batch (Fig. 1).

A reference: the paper's per-table state kept in memory, which the tests of the kernels, of the keys and
FDs and of the AStree drive, and which ``bench/agreesets_batches.py`` times against recomputation from
scratch (the paper's experiments). The pipeline keeps no such object: ``lakemeta.agreesets.batch_delta``
rebuilds the relation from the snapshot for each batch and ``lakemeta.agreesets.state`` stores ES^m(r) as
Delta rows.

A batch b = (b_del, b_ins) is processed as in §3: Δ- is computed over r^curr and the deleted tuples leave the
index (Alg. 2), then Δ+ is computed over r^next as the inserted tuples enter it (Alg. 1), and
ES^m(r^next) = ES^m(r^curr) ⊖ Δ- ⊕ Δ+ (Property 1). An update is a delete plus an insert.

The AStree (§6) serves approximate-FD errors only, and on wide tables its upkeep costs more than the
agree-sets themselves (§7.5, Table 9: its update per 50-tuple batch is by far the largest on Uniprot). So it
is brought up to date when it is read (``astree``): it then adds the paths of the agree-sets that appeared
and sets every flag from the counts, giving the same tree as an update after every batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lakemeta.agreesets.astree import AStree
from lakemeta.agreesets.evidence import (
    DEFAULT_CHUNK_SIZE,
    ZipBitProducts,
    delta_minus,
    delta_plus,
    from_scratch,
)
from lakemeta.agreesets.multiset import AgreeSetMultiset
from lakemeta.agreesets.relation import Batch, CompressedRelation


@dataclass(frozen=True)
class BatchResult:
    """What one batch did: the positions given to the inserted tuples, Δ+, Δ- and the zip-bit products."""

    inserted_positions: np.ndarray
    delta_plus: AgreeSetMultiset
    delta_minus: AgreeSetMultiset
    products: ZipBitProducts


class DynASt:
    """Incrementally maintained ES^m(r) of one table."""

    def __init__(
        self,
        column_names: Sequence[str],
        *,
        null_equals_null: bool = True,
        factorize: bool = True,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ) -> None:
        self.relation = CompressedRelation(column_names, null_equals_null=null_equals_null)
        self.multiset = AgreeSetMultiset(self.relation.n_columns)
        self._astree = AStree(self.multiset)
        self._astree_current = True
        self.factorize = factorize
        self.chunk_size = chunk_size
        self.products = ZipBitProducts(0, 0)

    @property
    def column_names(self) -> list[str]:
        return self.relation.column_names

    @property
    def n_rows(self) -> int:
        return self.relation.n_rows

    @property
    def astree(self) -> AStree:
        """The AStree of ES^m(r), up to date with every batch applied so far."""
        if not self._astree_current:
            self._astree.refresh()
            self._astree_current = True
        return self._astree

    def apply_batch(
        self, deleted_positions: np.ndarray | Sequence[int] | None = None, inserted: Batch | None = None
    ) -> BatchResult:
        """Delete the tuples at ``deleted_positions``, then insert ``inserted``; update ES^m(r)."""
        options = {"factorize": self.factorize, "chunk_size": self.chunk_size}
        minus = AgreeSetMultiset(self.relation.n_columns)
        plus = AgreeSetMultiset(self.relation.n_columns)
        products = ZipBitProducts(0, 0)
        positions = np.zeros(0, dtype=np.int64)
        if deleted_positions is not None and len(deleted_positions) > 0:
            minus, products = delta_minus(self.relation, np.asarray(deleted_positions), **options)
        if inserted is not None:
            positions, plus, inserted_products = delta_plus(self.relation, inserted, **options)
            products = products + inserted_products
        self.multiset.update(plus, minus)
        self._astree_current = False
        self.products = self.products + products
        return BatchResult(positions, plus, minus, products)

    def positions_of(self, rows: Batch) -> np.ndarray:
        """Positions of live tuples equal to ``rows`` (for delete batches given by value); -1 when absent."""
        return self.relation.positions_of(rows)

    def recompute(self) -> AgreeSetMultiset:
        """ES^m(r) of the current tuples recomputed from scratch (the baseline; the state is not changed)."""
        multiset, _ = from_scratch(self.relation, factorize=self.factorize, chunk_size=self.chunk_size)
        return multiset
