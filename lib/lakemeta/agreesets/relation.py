"""The compressed relation and its attribute-value evidence vectors (DynASt §4, §4.1, Alg. 1-2 index updates).

Every cell is dictionary-encoded per column (Table 2). Each distinct (column, value) owns one attribute-value
evidence vector EV(A, v): a bitset over tuple positions, one row of the uint64 matrix ``bits`` (§4.1). A
cell is stored as the id of its vector, so a tuple is the row of vector ids that the zip-bit product of
Def. 4.2 multiplies. The bitsets double as the paper's inverted attribute index IAIdx (the positions having
value v in A are the set bits of EV(A, v)), so no separate hash-of-sets is kept.

Positions. ``getTupleAt`` of §4.1 is a dense position. Instead of shifting every vector's bits when a tuple
is deleted (Alg. 2, l. 17-19: ``removeBitAtPosition``), a deleted tuple's bits are cleared and its position
goes to a free list; the lowest free positions are reused first by later insertions, and new positions are
appended after the high-water mark. A free position has no bit set in any vector, so it takes part in no
zip-bit product: the vectors stay exactly the §4.1 vectors of the live tuples, with gaps.

Nulls. With ``null_equals_null=True`` (default, as in the FD literature) a null is one more value of its
column and has its own vector. With ``null_equals_null=False`` a null equals nothing, not even another null:
the null vector is still kept (it locates the rows for deletion by value) but a null cell is left out of the
tuple's zip-bit product, so its attribute is never in an agree-set of that tuple. Vectors whose value
disappeared stay allocated with no bit set (the ``AVIdx.removeVector`` of §4.1 is not needed for
correctness); ids therefore stay stable.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

from lakemeta.agreesets.bitmasks import WORD_BITS, attribute_words, lowest_bit_index

Batch = pa.Table | pa.RecordBatch | Sequence[pa.Array | pa.ChunkedArray | np.ndarray]
ABSENT = -1


def _string_column(values: pa.Array | pa.ChunkedArray | np.ndarray) -> pa.Array:
    """One batch column as a pyarrow string array (nulls kept)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):
        values = pa.array(values, from_pandas=True)
    if values.type != pa.string():
        values = pc.cast(values, pa.string())
    return values


def _table_columns(batch: pa.Table | pa.RecordBatch) -> list[pa.Array] | None:
    """A table's columns as string arrays in whole-table steps (wide tables have hundreds of columns)."""
    if any(column_type != pa.string() for column_type in batch.schema.types):
        batch = batch.cast(pa.schema([pa.field(name, pa.string()) for name in batch.schema.names]))
    if isinstance(batch, pa.RecordBatch):
        return list(batch.columns)
    batches = batch.combine_chunks().to_batches()
    return list(batches[0].columns) if len(batches) == 1 else None


def batch_columns(batch: Batch, n_columns: int) -> list[pa.Array]:
    """The columns of a batch (pyarrow table/record batch or one array per column) as string arrays."""
    if isinstance(batch, pa.Table | pa.RecordBatch):
        if batch.num_columns != n_columns:
            raise ValueError(f"batch has {batch.num_columns} columns, relation has {n_columns}")
        arrays = _table_columns(batch)
        if arrays is not None:
            return arrays
    columns = batch.columns if isinstance(batch, pa.Table | pa.RecordBatch) else list(batch)
    if len(columns) != n_columns:
        raise ValueError(f"batch has {len(columns)} columns, relation has {n_columns}")
    arrays = [_string_column(c) for c in columns]
    if len({len(a) for a in arrays}) > 1:
        raise ValueError("batch columns differ in length")
    return arrays


@njit(cache=True)
def _match_positions(bits: np.ndarray, query: np.ndarray) -> np.ndarray:
    """For each query row, the lowest live position holding exactly those vectors and not matched before."""
    n_words = bits.shape[1]
    claimed = np.zeros(n_words, dtype=np.uint64)
    found = np.full(query.shape[0], ABSENT, dtype=np.int64)
    for i in range(query.shape[0]):
        if query.shape[1] == 0 or (query[i] < 0).any():
            continue
        for w in range(n_words):
            x = ~claimed[w]
            for a in range(query.shape[1]):
                x &= bits[query[i, a], w]
            if x != 0:
                found[i] = w * 64 + lowest_bit_index(x)
                claimed[w] |= x & (~x + np.uint64(1))
                break
    return found


class CompressedRelation:
    """A dictionary-encoded relation with one evidence bitset per (column, value) (§4, §4.1)."""

    def __init__(self, column_names: Sequence[str], *, null_equals_null: bool = True) -> None:
        if len(column_names) == 0:
            raise ValueError("a relation needs at least one column")
        self.column_names = list(column_names)
        self.n_columns = len(self.column_names)
        self.attr_words = attribute_words(self.n_columns)
        self.null_equals_null = null_equals_null
        self.bits = np.zeros((16, 1), dtype=np.uint64)
        self.vector_attribute = np.zeros(16, dtype=np.int64)
        self.vector_is_null = np.zeros(16, dtype=bool)
        self.n_vectors = 0
        self.cells = np.full((WORD_BITS, self.n_columns), ABSENT, dtype=np.int64)
        self.live = np.zeros(WORD_BITS, dtype=bool)
        self.high_water = 0
        self.free = np.zeros(0, dtype=np.int64)
        # AVIdx lookup: every known value tagged with its attribute, "<attribute>\0<value>", so one hash
        # look-up serves all columns of a batch; the vector id of each known value; each column's null vector.
        self._tags = pa.array([f"{attribute}\0" for attribute in range(self.n_columns)], pa.string())
        self._known = pa.array([], pa.string())
        self._known_vector = np.zeros(0, dtype=np.int64)
        self._null_vector = np.full(self.n_columns, ABSENT, dtype=np.int64)

    # -- sizes -------------------------------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        """|r|: number of live tuples."""
        return self.high_water - len(self.free)

    @property
    def n_words(self) -> int:
        """Words per evidence vector (position capacity / 64)."""
        return self.bits.shape[1]

    @property
    def used_words(self) -> int:
        """Words of an evidence vector that hold positions below the high-water mark (the kernels' range)."""
        return (self.high_water + WORD_BITS - 1) // WORD_BITS

    def live_positions(self) -> np.ndarray:
        """Positions of the live tuples, ascending."""
        return np.flatnonzero(self.live[: self.high_water])

    # -- attribute-value evidence vectors (AVIdx) ----------------------------------------------------------
    def _new_vectors(self, attributes: np.ndarray, is_null: np.ndarray) -> np.ndarray:
        """Allocate one empty vector per entry of ``attributes`` (Alg. 1, l. 27-30); returns their ids."""
        needed = self.n_vectors + len(attributes)
        if needed > self.bits.shape[0]:
            capacity = max(needed + needed // 4, 2 * self.bits.shape[0])  # headroom, as for positions
            grown = np.zeros((capacity, self.n_words), dtype=np.uint64)
            grown[: self.n_vectors] = self.bits[: self.n_vectors]
            self.bits = grown
            self.vector_attribute = np.resize(self.vector_attribute, capacity)
            self.vector_is_null = np.resize(self.vector_is_null, capacity)
        ids = np.arange(self.n_vectors, needed, dtype=np.int64)
        self.vector_attribute[ids] = attributes
        self.vector_is_null[ids] = is_null
        self.n_vectors = needed
        return ids

    def _encode_cells(self, columns: list[pa.Array], create: bool) -> np.ndarray:
        """(rows, columns) vector ids; unseen values get new vectors (``create``) or ABSENT (lookup only).

        All columns are looked up at once: the cells are concatenated column after column and tagged with
        their attribute. New vectors are numbered column by column, a column's new values in order of first
        occurrence and then its null vector, if it needs one.
        """
        n = len(columns[0])
        if n == 0:
            return np.zeros((0, self.n_columns), dtype=np.int64)
        cells = pa.concat_arrays(columns)
        attribute = np.repeat(np.arange(self.n_columns, dtype=np.int64), n)
        tagged = pc.binary_join_element_wise(self._tags.take(pa.array(attribute)), cells, "")
        value_ids = pc.fill_null(pc.index_in(tagged, value_set=self._known), -1).to_numpy().astype(np.int64)
        is_null = cells.is_null().to_numpy(zero_copy_only=False)
        if create:
            self._create_vectors(tagged, attribute, value_ids, is_null)
        encoded = np.full(len(cells), ABSENT, dtype=np.int64)
        known = value_ids >= 0
        encoded[known] = self._known_vector[value_ids[known]]
        encoded[is_null] = self._null_vector[attribute[is_null]]
        return np.ascontiguousarray(encoded.reshape(self.n_columns, n).T)

    def _create_vectors(
        self, tagged: pa.Array, attribute: np.ndarray, value_ids: np.ndarray, is_null: np.ndarray
    ) -> None:
        """Give the batch's unseen values, and columns' first nulls, new vectors; fills ``value_ids``."""
        unseen = (value_ids < 0) & ~is_null
        new_values = pc.dictionary_encode(tagged.filter(pa.array(unseen))) if unseen.any() else None
        value_attribute = np.zeros(0, dtype=np.int64)
        if new_values is not None:
            _, first = np.unique(new_values.indices.to_numpy(), return_index=True)
            value_attribute = attribute[unseen][first]
        null_columns = np.unique(attribute[is_null])
        null_columns = null_columns[self._null_vector[null_columns] == ABSENT]
        if len(value_attribute) == 0 and len(null_columns) == 0:
            return
        attributes = np.concatenate([value_attribute, null_columns])
        nulls = np.concatenate([np.zeros(len(value_attribute), bool), np.ones(len(null_columns), bool)])
        order = np.lexsort((np.arange(len(attributes)), nulls, attributes))
        vector = np.empty(len(attributes), dtype=np.int64)
        vector[order] = self._new_vectors(attributes[order], nulls[order])
        self._null_vector[null_columns] = vector[len(value_attribute) :]
        if new_values is not None:
            first_id = len(self._known_vector)
            self._known = pa.concat_arrays([self._known, new_values.dictionary])
            self._known_vector = np.concatenate([self._known_vector, vector[: len(value_attribute)]])
            value_ids[unseen] = first_id + new_values.indices.to_numpy()

    def encode(self, batch: Batch) -> np.ndarray:
        """(rows, columns) vector ids of a batch, creating vectors for unseen values (Alg. 1, l. 23-30)."""
        return self._encode_cells(batch_columns(batch, self.n_columns), create=True)

    # -- positions ----------------------------------------------------------------------------------------
    def _grow_positions(self, needed: int) -> None:
        if needed <= self.n_words * WORD_BITS:
            return
        # a quarter of headroom, so the batches that follow a bulk load do not copy the vectors again
        words = max((needed + needed // 4 + WORD_BITS - 1) // WORD_BITS, 2 * self.n_words)
        grown = np.zeros((self.bits.shape[0], words), dtype=np.uint64)
        grown[: self.n_vectors, : self.n_words] = self.bits[: self.n_vectors]
        self.bits = grown
        cells = np.full((words * WORD_BITS, self.n_columns), ABSENT, dtype=np.int64)
        cells[: self.cells.shape[0]] = self.cells
        self.cells = cells
        self.live = np.concatenate([self.live, np.zeros(words * WORD_BITS - len(self.live), dtype=bool)])

    def allocate(self, cells: np.ndarray) -> np.ndarray:
        """Give encoded tuples positions (lowest free first) and record their cells.

        The tuples' bits are not set here: Algorithm 1 sets them chunk by chunk while it computes Δ+
        (``evidence.delta_plus``), so that each tuple is compared with the tuples inserted before it.
        """
        count = cells.shape[0]
        reused = self.free[:count]
        self.free = self.free[count:]
        appended = np.arange(self.high_water, self.high_water + count - len(reused), dtype=np.int64)
        self._grow_positions(self.high_water + len(appended))
        self.high_water += len(appended)
        positions = np.concatenate([reused, appended])
        self.cells[positions] = cells
        self.live[positions] = True
        return positions

    def check_live(self, positions: np.ndarray) -> np.ndarray:
        """Validate that positions are distinct live tuples; returns them as int64."""
        positions = np.asarray(positions, dtype=np.int64).reshape(-1)
        if len(np.unique(positions)) != len(positions):
            raise ValueError("a tuple position is listed twice")
        if ((positions < 0) | (positions >= self.high_water)).any() or not self.live[positions].all():
            raise ValueError("position of a tuple that is not in the relation")
        return positions

    def release(self, positions: np.ndarray) -> None:
        """Free the positions of deleted tuples whose bits Algorithm 2 cleared (``evidence.delta_minus``)."""
        positions = self.check_live(positions)
        self.cells[positions] = ABSENT
        self.live[positions] = False
        self.free = np.sort(np.concatenate([self.free, positions]))

    def evidence_rows(self, positions: np.ndarray) -> np.ndarray:
        """The vectors whose zip-bit product gives each tuple's evidence vector (Def. 4.2).

        Null cells are ABSENT under ``null_equals_null=False``: that attribute is in none of the tuple's
        agree-sets.
        """
        rows = self.cells[positions].copy()
        if not self.null_equals_null:
            rows[self.vector_is_null[np.maximum(rows, 0)] & (rows >= 0)] = ABSENT
        return rows

    def positions_of(self, batch: Batch) -> np.ndarray:
        """Positions of live tuples equal to the batch rows (null matching null), distinct; ABSENT if none.

        This locates the physical rows of a delete batch given by value; duplicates match distinct positions.
        """
        query = self._encode_cells(batch_columns(batch, self.n_columns), create=False)
        return _match_positions(self.bits, query)
