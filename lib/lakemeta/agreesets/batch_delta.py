"""The change of one table's agree-set multiset ES^m for a batch, Spark-free (DynASt Fig. 1, first step).

The batch. :func:`agree_set_delta` takes the table's snapshots at the batch's ``from_version`` (r^curr) and
``to_version`` and their multiset difference (:func:`net_change`): rows whose copies increased are
inserted, rows whose copies decreased are deleted. This is the net of the rows ``lake.batches.changes``
gives for the batch - the change feed over (from_version, to_version] nets out to exactly that difference,
and the ``diff`` source is that difference - so an update is a delete plus an insert, and a row inserted
and deleted within the range is neither. r^curr is loaded into a :class:`CompressedRelation`, the deleted
tuples are removed with Algorithm 2 (Δ-, §5.2) and the inserted tuples added with Algorithm 1 (Δ+, over
r^next, §5.1) - deletions first, as §3 prescribes. The result is Δ+ ⊖ Δ- as signed counts per agree-set; a
full batch (no ``from_version`` snapshot) gives the complete ES^m of its snapshot (Alg. 1 into an empty
relation).

Attribute-value evidence vectors (§4.1) are rebuilt from the ``from_version`` snapshot for every batch,
not stored. Stored bitsets alone would not do: Algorithm 2 needs each live tuple's cells to find and clear
a deleted tuple, and encoding a batch needs every column's value dictionary - together a second copy of
the table, to be rewritten after every batch and kept consistent with it. The snapshot is that copy
already, kept by Delta (time travel), and the rebuild from it is one delta-rs read, one dictionary encoding
and one bit scatter. Measured on the development data (the table is in docs/performance.md, "Measurements
behind the code"), the rebuild is of the order of the batch's kernels and far below recomputing ES^m from
scratch, which is the cost incremental maintenance has to beat. Storing would save it only for tables whose
bitsets are small, and there only after also storing the cells and dictionaries (the table again); for
adult the bitsets alone cost more to write and read back than the whole rebuild.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lakemeta.agreesets.evidence import delta_minus, delta_plus
from lakemeta.agreesets.multiset import AgreeSetMultiset
from lakemeta.agreesets.relation import CompressedRelation
from lakemeta.lake.rows import copy_differences, row_ids


@dataclass(frozen=True)
class AgreeSetDelta:
    """The signed change of a table's ES^m: agree-set masks over ``column_names`` and their count changes."""

    column_names: list[str]
    masks: np.ndarray
    counts: np.ndarray
    rows_deleted: int
    rows_inserted: int


def _load(relation: CompressedRelation, table: pa.Table) -> np.ndarray:
    """Put r^curr into an empty relation without computing its evidence: positions 0..n-1 and the bits of
    the attribute-value vectors (§4.1). Returns the tuples' cells (vector ids)."""
    cells = relation.encode(table)
    positions = relation.allocate(cells)
    if len(positions):
        tuples = np.repeat(positions, cells.shape[1])
        bit = np.left_shift(np.uint64(1), (tuples & 63).astype(np.uint64))
        np.bitwise_or.at(relation.bits, (cells.reshape(-1), tuples >> 6), bit)
    return cells


def net_change(
    relation: CompressedRelation, before_cells: np.ndarray, after: pa.Table
) -> tuple[np.ndarray, pa.Table]:
    """The batch as the multiset difference of the two snapshots: positions of r^curr's deleted tuples
    (r^curr loaded at positions 0..n-1) and the inserted rows. Rows are compared by their cells, so a null
    matches a null here whatever the agree-set semantics: this is row identity, as in the change feed."""
    after_cells = relation.encode(after)
    both = np.vstack([before_cells, after_cells])
    if len(both) == 0:
        return np.zeros(0, dtype=np.int64), after.slice(0, 0)
    group = row_ids(both)
    deleted, inserted = copy_differences(group[: len(before_cells)], group[len(before_cells) :])
    return deleted, after.take(inserted)


def _signed(plus: AgreeSetMultiset, minus: AgreeSetMultiset) -> tuple[np.ndarray, np.ndarray]:
    """Δ+ ⊖ Δ- as signed counts per agree-set, zero changes dropped."""
    plus_masks, plus_counts = plus.masks_and_counts()
    minus_masks, minus_counts = minus.masks_and_counts()
    masks = np.vstack([plus_masks, minus_masks])
    counts = np.concatenate([plus_counts, -minus_counts])
    if len(counts) == 0:
        return masks, counts
    unique, inverse = np.unique(masks, axis=0, return_inverse=True)
    net = np.zeros(len(unique), dtype=np.int64)
    np.add.at(net, inverse.reshape(-1), counts)
    changed = net != 0
    return unique[changed], net[changed]


def agree_set_delta(before: pa.Table | None, after: pa.Table, null_equals_null: bool = True) -> AgreeSetDelta:
    """The change of ES^m from snapshot ``before`` to ``after`` (both from
    :func:`~lakemeta.agreesets.values.comparable_table`); ``before=None`` for a full batch: the complete
    ES^m(after)."""
    relation = CompressedRelation(after.column_names, null_equals_null=null_equals_null)
    minus = AgreeSetMultiset(relation.n_columns)
    if before is None:
        deleted, inserted = np.zeros(0, dtype=np.int64), after
    else:
        deleted, inserted = net_change(relation, _load(relation, before), after)
    if len(deleted):
        minus, _ = delta_minus(relation, deleted)  # Alg. 2 over r^curr, first (§3)
    plus = AgreeSetMultiset(relation.n_columns)
    if inserted.num_rows:
        _, plus, _ = delta_plus(relation, inserted)  # Alg. 1 over r^next
    masks, counts = _signed(plus, minus)
    return AgreeSetDelta(after.column_names, masks, counts, len(deleted), inserted.num_rows)


def name_lists(masks: np.ndarray, sorted_names: list[str]) -> pa.Array:
    """Each mask row as the list of its column names; names sorted, so ascending bits are sorted names."""
    masks = np.ascontiguousarray(masks, dtype="<u8")
    bits = np.unpackbits(masks.view(np.uint8), axis=1, bitorder="little")[:, : len(sorted_names)]
    _, attributes = np.nonzero(bits)
    offsets = np.zeros(len(masks) + 1, dtype=np.int32)
    np.cumsum(bits.sum(axis=1), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(sorted_names, pa.string()).take(attributes))
