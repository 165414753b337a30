"""Many's inputs per column, taken from the value sets (``state/column_values``) instead of the tables.

For each column: its Bloom signature (Alg. 3 with the passes of §4.3), with m doubled for a large column
(``inds.sized_signatures``), built from the 64-bit hashes of its distinct canonical values, which are the
hashes ``bloom.signature_from_strings`` derives the k·p bit positions from, so the signature is the one the
values give; its number of distinct non-null values
(|dependentSet| / |referencedSet| of Alg. 11); and the statistics of the filters (§3.2): rows holding a
value, distinct such values (a configured null representation is recognised by its hash) and whether every
such value is an integer literal (the state marks each value); and, for a column of at most
``inds.driver_validation_values`` distinct values, those values' hashes, sorted, with which a candidate
between two such columns is validated on the driver (``inds.containment``).

The inputs are computed in the executors, each task summarising the value rows it holds per column (the
signature of its part of the column, its counts), and the parts are combined on the driver (signatures
OR-ed, counts added): a few hundred bytes per column. Columns of at most ``inds.driver_signature_values``
distinct values in all (a batch's few tables) are summarised by the same function on the driver, their
value rows read with delta-rs from their tables' buckets: no Spark job. The inputs are kept in
``state/ind_columns`` with the settings and the run they were computed for (the commit's
``lakemeta.reflects``), so that a discovery after a batch computes them again for the changed tables'
columns only (``inds.discover``); a signature at the paper's m whose column's hashes are kept is left out
there and built again from them when read, the same bit for bit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F

from lakemeta.arrays import binary_rows, expand_ranges, one_array, run_starts, take_rows, uint64_rows
from lakemeta.catalog import Catalog
from lakemeta.hashing import hash_strings
from lakemeta.inds.bloom import BloomParams, sized_signatures, words_at
from lakemeta.inds.config import ManyConfig
from lakemeta.inds.filters import ColumnStats
from lakemeta.inds.sized_signatures import fold_to_base, levels_for, levels_of
from lakemeta.spark.portable import arrow_frame, describe_jobs
from lakemeta.values.state import ColumnValues

log = logging.getLogger(__name__)

INPUTS = "state/ind_columns"
_PARTS_COLUMNS = {
    "column_id": "long",
    "signature": "binary",
    "set_size": "long",
    "n_values": "long",
    "n_distinct": "long",
    "n_not_integer": "long",
    "value_hashes": "binary",
}
_PARTS_SCHEMA = ", ".join(f"{name} {kind}" for name, kind in _PARTS_COLUMNS.items())
_VALUE_ROW_COLUMNS = ["column_id", "level", "hash", "count", "integer"]  # what ``_column_parts`` reads


@dataclass(frozen=True)
class ColumnInputs:
    """Many's inputs for columns in a fixed order (driver side): names, signatures, sizes, statistics."""

    table_names: pa.StringArray
    column_names: pa.StringArray
    # column c's signature at its level (``inds.sized_signatures``):
    # words[signature_offsets[c]:signature_offsets[c + 1]]
    signature_offsets: np.ndarray
    signature_words: np.ndarray
    levels: np.ndarray
    set_sizes: np.ndarray  # int64: distinct non-null values
    stats: ColumnStats  # for the filters of Alg. 10
    value_hashes: pa.BinaryArray  # sorted hashes of a column small enough to check on the driver, or null

    @cached_property
    def hash_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``value_hashes`` as (offsets, hashes, kept) (``arrays.uint64_rows``), for the kernels."""
        return uint64_rows(self.value_hashes)

    def take(self, at: np.ndarray) -> ColumnInputs:
        """The inputs of columns ``at`` (positions), in that order."""
        rows = pa.array(at, pa.int64())
        offsets, words = take_rows(self.signature_offsets, self.signature_words, at)
        return ColumnInputs(
            self.table_names.take(rows),
            self.column_names.take(rows),
            offsets,
            words,
            self.levels[at],
            self.set_sizes[at],
            ColumnStats(self.stats.n_values[at], self.stats.n_distinct[at], self.stats.all_integer[at]),
            self.value_hashes.take(rows),
        )

    def to_arrow(self) -> pa.Table:
        """The rows of ``state/ind_columns``. A signature at the paper's m (level 0) of a column whose value
        hashes are kept is not stored: those hashes give it back (``from_arrow``). The signatures were
        two thirds of the table's bytes (168 bytes against 64 for the hashes of a column of 8 values), and a
        discovery after a batch reads the table whole."""
        given_back = self.value_hashes.is_valid().to_numpy(zero_copy_only=False) & (self.levels == 0)
        return pa.table(
            {
                "table_name": self.table_names,
                "column_name": self.column_names,
                "signature": binary_rows(self.signature_words, self.signature_offsets, ~given_back),
                "set_size": pa.array(self.set_sizes, pa.int64()),
                "n_values": pa.array(self.stats.n_values, pa.int64()),
                "n_distinct": pa.array(self.stats.n_distinct, pa.int64()),
                "all_integer": pa.array(self.stats.all_integer, pa.bool_()),
                "value_hashes": self.value_hashes,
            }
        )

    @classmethod
    def from_arrow(cls, rows: pa.Table, params: BloomParams) -> ColumnInputs:
        """Inputs from rows of ``state/ind_columns``, in their order."""
        offsets, words, levels = _stored_signatures(rows, params)
        return cls(
            one_array(rows["table_name"]).cast(pa.string()),
            one_array(rows["column_name"]).cast(pa.string()),
            offsets,
            words,
            levels,
            rows["set_size"].to_numpy(),
            ColumnStats(
                rows["n_values"].to_numpy(),
                rows["n_distinct"].to_numpy(),
                rows["all_integer"].to_numpy(zero_copy_only=False).astype(bool),
            ),
            # rows written before the hashes were kept have none: their candidates are validated by Spark
            one_array(rows["value_hashes"]),
        )

    def base_signatures(self, params: BloomParams) -> np.ndarray:
        """The paper's signatures (level 0) of the columns, for the matrix: uint64 [n_columns, words]."""
        return fold_to_base(self.signature_offsets, self.signature_words, self.levels, params)


def _stored_signatures(rows: pa.Table, params: BloomParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows' signatures as (offsets, words) and their levels: a stored one as it is, one not stored
    (``ColumnInputs.to_arrow``) built again at level 0 from the row's value hashes, the values it was
    built from in the first place (``_column_parts``), so it is the same bit for bit."""
    offsets, words, stored = uint64_rows(rows["signature"])
    if stored.all():
        return offsets, words, levels_of(np.diff(offsets), params)
    hash_offsets, hashes, kept = uint64_rows(rows["value_hashes"])
    if not (stored | kept).all():
        raise ValueError(f"{INPUTS} holds a column with neither its signature nor its value hashes")
    levels = np.zeros(len(stored), np.int64)
    levels[stored] = levels_of(np.diff(offsets)[stored], params)
    # every row's from its hashes (none for a row without), then the stored ones written over theirs
    all_offsets, all_words = sized_signatures(hashes, hash_offsets, levels, params)
    at = np.flatnonzero(stored)
    stored_offsets, stored_words = take_rows(offsets, words, at)
    starts = all_offsets[:-1][at]
    all_words[expand_ranges(starts, starts + np.diff(stored_offsets))] = stored_words
    return all_offsets, all_words, levels


def _column_parts(
    params: BloomParams, null_hashes: np.ndarray, kept_values: int
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """Per record batch of value rows (column_id, level, hash, count, integer): one row per column present,
    with the signature of the batch's values of the column at the column's level, and their counts."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if not batch.num_rows:
                continue
            ids = batch["column_id"].to_numpy()
            hashes = batch["hash"].to_numpy().view(np.uint64)
            order = np.lexsort((hashes, ids))  # by column, each column's hashes sorted
            ids, hashes = ids[order], hashes[order]
            counts = batch["count"].to_numpy()[order]
            # a value written before the state marked integers counts as not one
            integer = pc.fill_null(batch["integer"], False).to_numpy(zero_copy_only=False)[order]
            starts = np.flatnonzero(run_starts(ids))
            bounds = np.append(starts, len(ids))
            levels = batch["level"].to_numpy()[order][starts]
            word_offsets, words = sized_signatures(hashes, bounds, levels, params)
            valued = ~np.isin(hashes, null_hashes)
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(ids[starts]),
                    binary_rows(words, word_offsets, np.ones(len(starts), bool)),
                    pa.array(np.diff(bounds)),
                    pa.array(np.add.reduceat(np.where(valued, counts, 0), starts)),
                    pa.array(np.add.reduceat(valued.astype(np.int64), starts)),
                    pa.array(np.add.reduceat((valued & ~integer).astype(np.int64), starts)),
                    binary_rows(hashes, bounds, np.diff(bounds) <= kept_values),
                ],
                names=list(_PARTS_COLUMNS),
            )

    return run


def compute_inputs(
    catalog: Catalog,
    table_names: pa.StringArray,
    column_names: pa.StringArray,
    set_sizes: np.ndarray,
    config: ManyConfig,
) -> ColumnInputs:
    """Many's inputs of the given columns, in their order, from their value sets; a column without a
    value has an empty signature and zero counts. ``set_sizes`` are the columns' distinct counts as the
    catalog's ``columns`` records them, which choose each signature's level (``inds.sized_signatures``)."""
    n, params, kept_values = len(column_names), config.params, config.driver_validation_values
    levels = levels_for(set_sizes, params, config.max_doublings)
    asked = pa.table(
        {
            "table_name": table_names,
            "column_name": column_names,
            "column_id": pa.array(np.arange(n, dtype=np.int64)),
            "level": pa.array(levels, pa.int64()),
        }
    )
    null_hashes, valid = hash_strings(pa.array(list(config.filters.null_values), pa.string()))
    summarise = _column_parts(params, np.sort(null_hashes[valid]), kept_values)
    value_sets = ColumnValues.state_table()
    tables = sorted(pc.unique(table_names).to_pylist())
    on_driver = int(np.sum(set_sizes)) <= config.driver_signature_values
    no_parts = pa.table({name: [] for name in _PARTS_COLUMNS})
    if n:
        log.info(
            "Many: inputs of %d columns of %d tables (%d distinct values) %s",
            n,
            len(tables),
            int(np.sum(set_sizes)),
            "on the driver" if on_driver else "by Spark",
        )
    if not n:
        parts = no_parts
    elif on_driver:
        # inner, as the Spark path's join: the tables' other columns (binary ones, not asked) are left out
        rows = catalog.read_small(value_sets, tables).join(
            asked, ["table_name", "column_name"], join_type="inner"
        )
        batches = list(summarise(rows.select(_VALUE_ROW_COLUMNS).to_batches()))
        parts = pa.Table.from_batches(batches).sort_by("column_id") if batches else no_parts
    else:
        describe_jobs(catalog.spark, f"Many: signatures of {n} columns from their value sets")
        parts = (
            # by table name first: the scan's own filter is what prunes the value sets' partitions
            catalog.read(value_sets, tables)
            .join(F.broadcast(arrow_frame(catalog.spark, asked)), ["table_name", "column_name"])
            .select(*_VALUE_ROW_COLUMNS)
            .mapInArrow(summarise, _PARTS_SCHEMA)
            # a summary per column and task (signature words, counts, a small column's hashes): O(columns)
            .toArrow()
            .sort_by("column_id")
        )
    signature_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(words_at(params, levels), out=signature_offsets[1:])
    signature_words = np.zeros(signature_offsets[-1], np.uint64)
    counted, n_values, n_distinct, n_not_integer = (np.zeros(n, np.int64) for _ in range(4))
    value_ids, values = np.zeros(0, np.int64), np.zeros(0, np.uint64)
    if len(parts):
        ids = parts["column_id"].to_numpy()
        starts = np.flatnonzero(run_starts(ids))
        at = ids[starts]
        # the signature of a union is the OR of its parts' (§4.1): each part's words onto its column's
        part_offsets, part_words, _ = uint64_rows(parts["signature"])
        lengths = np.diff(part_offsets)
        if np.any(lengths != np.diff(signature_offsets)[ids]):
            raise ValueError("a part's signature does not have its column's level")
        targets = expand_ranges(signature_offsets[ids], signature_offsets[ids] + lengths)
        np.bitwise_or.at(signature_words, targets, part_words)
        for total, name in (
            (counted, "set_size"),
            (n_values, "n_values"),
            (n_distinct, "n_distinct"),
            (n_not_integer, "n_not_integer"),
        ):
            total[at] = np.add.reduceat(parts[name].to_numpy(), starts)
        # a small column's hashes from its parts (each part of a small column is small, so kept); the
        # parts hold disjoint values, each part's sorted: the union is their concatenation, sorted
        offsets, values, _ = uint64_rows(parts["value_hashes"])
        value_ids = np.repeat(ids, np.diff(offsets))
        order = np.lexsort((values, value_ids))
        value_ids, values = value_ids[order], values[order]
    all_integer = (n_distinct > 0) & (n_not_integer == 0)
    bounds = np.searchsorted(value_ids, np.arange(n + 1))
    return ColumnInputs(
        table_names,
        column_names,
        signature_offsets,
        signature_words,
        levels,
        counted,
        ColumnStats(n_values, n_distinct, all_integer),
        binary_rows(values, bounds, counted <= kept_values),
    )
