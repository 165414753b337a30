"""Agree-set multisets as Delta state (``state/agree_sets``), and the keys and FDs derived from them.

The three parts of a state component (DESIGN.md, "The shape of a state component"):

* Delta from a batch (DynASt Fig. 1, first step). Per changed table, in one Spark task that keeps the
  table's work together: the table's snapshot at the batch's ``from_version`` (r^curr) is loaded into a
  :class:`CompressedRelation`, the batch's deleted tuples are removed with Algorithm 2 (Δ-, §5.2) and its
  inserted tuples added with Algorithm 1 (Δ+, over r^next, §5.1) - deletions first, as §3 prescribes. The
  emitted rows are Δ+ ⊖ Δ- as signed counts per agree-set. A ``full`` batch (new or replaced table) emits
  the complete ES^m of its snapshot (Alg. 1 into an empty relation); a ``drop`` batch emits nothing.
* Merge. One idempotent MERGE adds the signed counts (Property 1: ES^m(r^next) = ES^m(r^curr) ⊖ Δ- ⊕
  Δ+), replaces the rows of new, replaced and dropped tables, and deletes agree-sets whose count reaches
  zero, so the state holds exactly the support of ES^m(r) with its counts. Empty agree-sets are never
  stored (§3: not informative; their number is |r|(|r|-1)/2 minus the stored total).
* Results. ``refresh_keys_and_dependencies`` derives, for the tables of a run at its commit (or for every
  table, when a discovery run asks for other thresholds), the minimal unique
  column combinations, the minimal exact FDs and the minimal approximate FDs (Def. 6.2, errors from the
  AStree of §6) from the stored multiset and |r|; ``unique_column_flags`` the per-column uniqueness.

The batch. The executor reads the snapshots at ``from_version`` and ``to_version`` with delta-rs and takes
their multiset difference: rows whose copies increased are inserted, rows whose copies decreased are
deleted. This is the net of the rows ``lake.batches.changes`` gives for the batch - the change feed over
(from_version, to_version] nets out to exactly that difference, and the ``diff`` source is that difference
- so an update is a delete plus an insert, and a row inserted and deleted within the range is neither.

Attribute-value evidence vectors (§4.1) are rebuilt from the ``from_version`` snapshot for every batch,
not stored. Stored bitsets alone would not do: Algorithm 2 needs each live tuple's cells to find and clear
a deleted tuple, and encoding a batch needs every column's value dictionary - together a second copy of
the table, to be rewritten after every batch and kept consistent with it. The snapshot is that copy
already, kept by Delta (time travel), and the rebuild from it is one delta-rs read, one dictionary encoding
and one bit scatter. Measured on the development data (this 2-core machine, shared, best of 3; a batch
that deletes and inserts 1% of the rows; "stored" = the bitsets alone as Parquet, written and read back)::

    table        rows  cols  vectors  read   encode+  net     Δ- & Δ+  from     stored bitsets: raw,
                                                scatter  change  1%       scratch  Parquet, write+read
    adult       32561    15    22146  0.04 s  0.20 s   0.10 s  0.34 s   16.0 s   90.2 MB, 5.7 MB, 0.43 s
    uniprot_1k   1000   223    29397  0.04 s  0.05 s   0.05 s  0.03 s    1.4 s    3.8 MB, 0.07 MB, 0.01 s
    flight_1k    1000   109     4094  0.02 s  0.02 s   0.02 s  <0.01 s   0.2 s    0.5 MB, 0.05 MB, <0.01 s
    chess       28056     7       58  0.01 s  0.05 s   0.06 s  0.11 s    2.5 s    0.2 MB, 0.06 MB, <0.01 s

The rebuild (read + encode + scatter: 0.04-0.24 s) is of the order of the batch's kernels and 5-70 times
below recomputing ES^m from scratch, which is the cost incremental maintenance has to beat. Storing would
save it only for tables whose bitsets are small, and there only after also storing the cells and
dictionaries (the table again); for adult the bitsets alone cost more to write and read back (0.43 s)
than the whole rebuild. "net change" is the multiset difference of the two snapshots described above.

Values. Every column is compared by a canonical string of its value, so equality is the column type's own
equality: floats are normalised so that -0.0 equals 0.0 (all NaNs are equal), binary values are compared
byte for byte, and nested values (lists, structs, maps) by a length-prefixed serialisation of their
elements. Nulls equal each other by default (``null_equals_null=True``, as in the FD literature and the
development data's published counts); with ``False`` a null equals nothing, not even another null. The
setting is part of the state's meaning: changing it requires a rebuild.

Which tables. Agree-sets compare every pair of tuples, so a table keeps agree-set state only while its
snapshot holds at most ``max_rows`` rows (``agree_sets.max_rows``), counted from the Delta log's file
statistics so that the decision needs no data read and is the same function of the snapshot in every run
and in a rebuild. A tracked table's state holds one marker row, the empty agree-set with count 1 (empty
agree-sets are otherwise never stored), so that "tracked" is part of the state: a table that grows past
the bound has its rows replaced by nothing, one that shrinks below it is rebuilt from its snapshot, and
keys, FDs and uniqueness flags are derived exactly for the tracked tables (and, as hitting sets are
exponential in the width in the worst case, only for those with at most ``max_columns`` columns).

Approximate FDs. ``max_fd_error`` defaults to 0.01: an FD may be violated by at most 1% of the tuple
pairs. DynASt's error (Def. 6.1/6.2) is the pair-based g1 error of Kruse and Naumann's Pyro (DynASt ref.
[19]), and 0.01 is the threshold of Pyro's evaluation. Their search is level-wise over the LHS lattice,
one AStree specialisation search per candidate: 1.2 s for adult (15 columns, 1,619 minimal approximate
FDs), but 133 s for flight_1k (109 columns) with the LHS bounded to one column and over 10 minutes with two
(measured on a loaded machine). ``max_lhs_size`` bounds it; exact FDs and UCCs (hitting sets) are always
complete: 7.4 s and 1.2 s for flight_1k's 982,631 FDs and 26,652 UCCs; uniprot_1k's (223 columns) UCCs did
not finish within 11 minutes, hence the width bound.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark import StorageLevel
from pyspark.sql import SparkSession

from lakemeta.agreesets.astree import AStree
from lakemeta.agreesets.dependencies import approximate_fds, minimal_fds, minimal_uccs
from lakemeta.agreesets.evidence import delta_minus, delta_plus
from lakemeta.agreesets.multiset import AgreeSetMultiset
from lakemeta.agreesets.relation import CompressedRelation
from lakemeta.catalog import Catalog, Txn
from lakemeta.catalog.schemas import ALL_SCHEMAS
from lakemeta.config import AgreeSetConfig
from lakemeta.lake.batches import Plan
from lakemeta.lake.tables import table_path
from lakemeta.spark.placement import balanced_frame

log = logging.getLogger(__name__)

STATE = "state/agree_sets"
APP = "lakemeta.agree_sets"
PROFILE = "state/column_profile"
UCCS = "unique_column_combinations"
FDS = "functional_dependencies"

_DESCRIPTOR_SCHEMA = "table_name string, path string, kind string, from_version long, to_version long"
_DERIVED_SCHEMA = "table_name string, kind string, columns array<string>, rhs string, error double"
_NAMES = pa.list_(pa.string())
_DERIVED_ARROW = pa.schema(
    [
        ("table_name", pa.string()),
        ("kind", pa.string()),
        ("columns", _NAMES),
        ("rhs", pa.string()),
        ("error", pa.float64()),
    ]
)
_NULL_FIELD = pa.scalar("~")  # a null element of a nested value; a framed element starts with a digit


# -- values ------------------------------------------------------------------------------------------------
def _framed(strings: pa.Array) -> pa.Array:
    """``<byte length>:<value>`` per element, ``~`` for null: concatenations of these are unambiguous."""
    lengths = pc.cast(pc.binary_length(strings), pa.string())
    framed = pc.binary_join_element_wise(lengths, strings, ":")
    return pc.fill_null(framed, _NULL_FIELD)


def canonical_strings(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The column as strings, equal exactly when the values are equal under the column's type (nulls kept)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    kind = values.type
    if pa.types.is_dictionary(kind):
        return canonical_strings(values.dictionary_decode())
    if pa.types.is_string(kind):
        return values
    if pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return pc.cast(values, pa.string())
    if pa.types.is_binary(kind):
        return values.view(pa.string())  # bytes compared as they are, no UTF-8 validation
    if pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind) or pa.types.is_binary_view(kind):
        return pc.cast(values, pa.binary()).view(pa.string())
    if pa.types.is_floating(kind):
        return pc.cast(pc.add(values, pa.scalar(0, kind)), pa.string())  # -0.0 + 0 = +0.0
    if pa.types.is_map(kind):
        entries = pa.struct([pa.field("key", kind.key_type), pa.field("value", kind.item_type)])
        return canonical_strings(pc.cast(values, pa.list_(entries)))
    if pa.types.is_struct(kind):
        if kind.num_fields == 0:
            return pc.if_else(values.is_valid(), "", pa.scalar(None, pa.string()))
        fields = [_framed(canonical_strings(values.field(i))) for i in range(kind.num_fields)]
        joined = pc.binary_join_element_wise(*fields, "")
        return pc.if_else(values.is_valid(), joined, pa.scalar(None, pa.string()))
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        lengths = pc.fill_null(pc.list_value_length(values), 0).to_numpy(zero_copy_only=False)
        offsets = np.zeros(len(values) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        elements = _framed(canonical_strings(pc.list_flatten(values)))
        lists = pa.LargeListArray.from_arrays(pa.array(offsets), elements, mask=values.is_null())
        return pc.binary_join(lists, "")
    return pc.cast(values, pa.string())


def comparable_table(table: pa.Table) -> pa.Table:
    """The snapshot with its columns in name order (so attribute order is the sorted order of agree-set
    names) and every value as its canonical string."""
    names = sorted(table.column_names)
    return pa.table({name: canonical_strings(table.column(name)) for name in names})


def read_snapshot(path: str, version: int) -> pa.Table:
    """The rows of a Delta table at ``version`` (delta-rs; usable inside Spark executors)."""
    return comparable_table(deltalake.DeltaTable(path, version=version).to_pyarrow_table())


# -- the delta of one table's batch ------------------------------------------------------------------------
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


def _first_of_each_group(groups: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Indices of the rows to take: for each group g, its first ``wanted[g]`` rows, in row order."""
    order = np.argsort(groups, kind="stable")
    ordered = groups[order]
    rank = np.arange(len(order)) - np.searchsorted(ordered, ordered, side="left")
    return np.sort(order[rank < wanted[ordered]])


_KEY_LIMIT = 1 << 62


def row_ids(cells: np.ndarray) -> np.ndarray:
    """A dense id per distinct row of the cell matrix (exact): the columns are folded into one integer key,
    which is re-densified whenever the next column could overflow it - one 1-D sort per few columns instead
    of a lexicographic sort of whole rows."""
    key = np.zeros(len(cells), dtype=np.int64)
    span = 1
    for column in cells.T:
        low = int(column.min())
        width = int(column.max()) - low + 1
        if span * width >= _KEY_LIMIT:
            distinct, key = np.unique(key, return_inverse=True)
            span = len(distinct)
        key = key * width + (column - low)
        span *= width
    return np.unique(key, return_inverse=True)[1].reshape(-1)


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
    n_groups = int(group.max()) + 1
    before_group, after_group = group[: len(before_cells)], group[len(before_cells) :]
    before_copies = np.bincount(before_group, minlength=n_groups)
    after_copies = np.bincount(after_group, minlength=n_groups)
    deleted = _first_of_each_group(before_group, np.maximum(before_copies - after_copies, 0))
    inserted = _first_of_each_group(after_group, np.maximum(after_copies - before_copies, 0))
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
    """The change of ES^m from snapshot ``before`` to ``after`` (both from :func:`comparable_table`);
    ``before=None`` for a full batch: the complete ES^m(after)."""
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


# -- Spark: one task per group of tables -------------------------------------------------------------------
def _delta_rows(table_name: str, delta: AgreeSetDelta, full: bool) -> pa.RecordBatch:
    """The delta's rows; a full build also emits the table's marker (the empty agree-set, count 1)."""
    names = name_lists(delta.masks, delta.column_names)
    counts = pa.array(delta.counts, pa.int64())
    if full:
        names = pa.concat_arrays([names, pa.array([[]], _NAMES)])
        counts = pa.concat_arrays([counts, pa.array([1], pa.int64())])
    return pa.RecordBatch.from_arrays(
        [pa.array([table_name] * len(counts), pa.string()), names, counts],
        names=["table_name", "agree_set", "count"],
    )


@dataclass(frozen=True)
class _Counters:
    """Spark accumulators for the log line (a retried task may count twice; logs only)."""

    tables: object
    rows_deleted: object
    rows_inserted: object

    @classmethod
    def create(cls, spark: SparkSession) -> _Counters:
        context = spark.sparkContext
        return cls(context.accumulator(0), context.accumulator(0), context.accumulator(0))


def _batch_deltas(
    null_equals_null: bool, counters: _Counters
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(descriptors: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for record_batch in descriptors:
            for batch in record_batch.to_pylist():
                full = batch["kind"] == "full"
                after = read_snapshot(batch["path"], batch["to_version"])
                before = None
                if not full:
                    before = read_snapshot(batch["path"], batch["from_version"])
                    if before.column_names != after.column_names:
                        raise ValueError(f"{batch['table_name']}: schema changed in an incremental batch")
                delta = agree_set_delta(before, after, null_equals_null)
                counters.tables.add(1)
                counters.rows_deleted.add(delta.rows_deleted)
                counters.rows_inserted.add(delta.rows_inserted)
                yield _delta_rows(batch["table_name"], delta, full)

    return run


def _snapshot_rows_and_bytes(path: Path, version: int) -> tuple[int, int]:
    """Rows and bytes of a snapshot's data files, from the Delta log's file statistics (no data read)."""
    actions = pa.table(deltalake.DeltaTable(str(path), version=version).get_add_actions(flatten=True))
    return int(pc.sum(actions["num_records"]).as_py() or 0), int(pc.sum(actions["size_bytes"]).as_py() or 0)


@dataclass(frozen=True)
class _Work:
    """What the executors compute for a plan: one descriptor per table to process, and the tables whose
    stored rows the delta replaces (new, replaced and dropped tables, and tables crossing ``max_rows``)."""

    descriptors: list[tuple[int, tuple]]  # (bytes, descriptor), the bytes for balancing
    replaced_tables: list[str]


def _plan_work(lake: Path, plan: Plan, max_rows: int) -> _Work:
    descriptors = []
    replaced = set(plan.replaced_tables)
    for batch in plan.batches:
        if batch.kind == "drop":
            continue
        path = table_path(lake, batch.table_name)
        rows, size = _snapshot_rows_and_bytes(path, batch.to_version)
        kind = batch.kind
        if rows > max_rows:
            replaced.add(batch.table_name)  # untracked now: its rows, if any, are replaced by nothing
            continue
        if kind == "incremental" and _snapshot_rows_and_bytes(path, batch.from_version)[0] > max_rows:
            kind = "full"  # untracked until now: built from its snapshot
            replaced.add(batch.table_name)
        descriptors.append((size, (batch.table_name, str(path), kind, batch.from_version, batch.to_version)))
    return _Work(descriptors, sorted(replaced))


def update_agree_sets(catalog: Catalog, lake: Path, plan: Plan, config: AgreeSetConfig) -> int:
    """Apply the plan's batches to ``state/agree_sets`` exactly once; returns the agree-set rows merged."""
    txn = Txn(APP, plan.run_id)
    if not plan.batches or catalog.already_applied(STATE, txn):
        log.info("run %d: agree-sets already applied or nothing to apply", plan.run_id)
        return 0
    spark = catalog.spark
    spark.sparkContext.setJobDescription(f"run {plan.run_id}: agree-sets of {len(plan.batches)} tables")
    counters = _Counters.create(spark)
    work = _plan_work(lake, plan, config.max_rows)
    if work.descriptors:
        delta = balanced_frame(spark, work.descriptors, _DESCRIPTOR_SCHEMA).mapInArrow(
            _batch_deltas(config.null_equals_null, counters), ALL_SCHEMAS[STATE]
        )
    else:
        delta = spark.createDataFrame([], ALL_SCHEMAS[STATE])
    # Computed once, for the count and the MERGE (which reads it for its negative-count check and twice more).
    delta = delta.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        merged = delta.count()
        catalog.merge_counts(
            STATE,
            delta,
            keys=["table_name", "agree_set"],
            counts=["count"],
            replaced_tables=work.replaced_tables,
            txn=txn,
            drop_zero=True,
        )
    finally:
        delta.unpersist()
    untracked = sum(batch.kind != "drop" for batch in plan.batches) - len(work.descriptors)
    log.info(
        "run %d: agree-sets of %d tables updated (%d rows deleted, %d inserted; %d dropped tables, %d over "
        "%d rows untracked): %d agree-set rows merged",
        plan.run_id,
        counters.tables.value,
        counters.rows_deleted.value,
        counters.rows_inserted.value,
        sum(batch.kind == "drop" for batch in plan.batches),
        untracked,
        config.max_rows,
        merged,
    )
    return merged


# -- results: keys and dependencies ------------------------------------------------------------------------
@dataclass(frozen=True)
class TableShape:
    """A table's columns (sorted names: the attribute order of its masks) and |r|."""

    column_names: list[str]
    n_rows: int


def table_shapes(catalog: Catalog, tables: list[str]) -> dict[str, TableShape]:
    """Columns and row counts of ``tables`` from ``state/column_profile`` (tables absent there are gone)."""
    profile = catalog.read_small(PROFILE)
    profile = profile.filter(pc.is_in(profile["table_name"], pa.array(tables, pa.string())))
    shapes: dict[str, tuple[list[str], int]] = {}
    for row in profile.select(["table_name", "column_name", "n_rows"]).to_pylist():
        columns, _ = shapes.setdefault(row["table_name"], ([], row["n_rows"]))
        columns.append(row["column_name"])
    return {name: TableShape(sorted(columns), n_rows) for name, (columns, n_rows) in shapes.items()}


def derive_keys_and_dependencies(
    multiset: AgreeSetMultiset,
    shape: TableShape,
    max_fd_error: float,
    max_lhs_size: int | None,
) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    """Minimal UCCs, then minimal exact FDs (error 0.0), then the minimal approximate FDs with
    0 < error <= ``max_fd_error`` (Def. 6.2 via the AStree, §6). An approximate FD of error 0 is also a
    minimal exact FD, so each FD is listed once. Returns (kind, columns / lhs, rhs, error)."""
    names = shape.column_names
    uccs = minimal_uccs(multiset, shape.n_rows)
    exact = minimal_fds(multiset, shape.n_rows)
    approximate = approximate_fds(
        multiset, shape.n_rows, max_fd_error, astree=AStree(multiset), max_lhs_size=max_lhs_size
    )
    strict = approximate.error > 0
    lhs = np.vstack([uccs, exact.lhs, approximate.lhs[strict]])
    rhs = np.concatenate([exact.rhs, approximate.rhs[strict]])
    error = np.concatenate([exact.error, approximate.error[strict]])
    kinds = ["ucc"] * len(uccs) + ["fd"] * len(rhs)
    rhs_names = pa.array(names, pa.string()).take(pa.array(rhs, pa.int64()))
    return (
        pa.array(kinds, pa.string()),
        name_lists(lhs, names),
        pa.concat_arrays([pa.nulls(len(uccs), pa.string()), rhs_names]),
        pa.concat_arrays([pa.nulls(len(uccs), pa.float64()), pa.array(error, pa.float64())]),
    )


def _derive_per_table(
    shapes: dict[str, TableShape], max_fd_error: float, max_lhs_size: int | None
) -> Callable[[pa.Table], pa.Table]:
    def derive(group: pa.Table) -> pa.Table:
        table_name = group["table_name"][0].as_py()
        shape = shapes[table_name]
        stored = group.filter(pc.greater(pc.list_value_length(group["agree_set"]), 0))  # without the marker
        multiset = AgreeSetMultiset.from_arrow(stored.select(["agree_set", "count"]), shape.column_names)
        kinds, columns, rhs, error = derive_keys_and_dependencies(multiset, shape, max_fd_error, max_lhs_size)
        table_names = pa.array([table_name] * len(kinds), pa.string())
        return pa.table(
            [table_names, kinds, columns, rhs, error], names=["table_name", "kind", "columns", "rhs", "error"]
        )

    return derive


def tracked_tables(catalog: Catalog) -> set[str]:
    """The tables that keep agree-set state: those holding the marker row (at most ``max_rows`` rows)."""
    markers = catalog.read(STATE).where(F.size("agree_set") == 0).select("table_name")
    return {row.table_name for row in markers.collect()}  # small by construction: one marker per table


def refresh_keys_and_dependencies(
    catalog: Catalog, config: AgreeSetConfig, tables: list[str] | None = None
) -> None:
    """Recompute ``unique_column_combinations`` and ``functional_dependencies`` of ``tables`` (all tables
    when None) from ``state/agree_sets`` and the row counts of ``state/column_profile`` (both updated before
    this runs).

    Rows of other tables are kept; the rows of a dropped or untracked table, or of one wider than
    ``max_columns``, are removed (with ``tables`` None, every row is rewritten). Each table's derivation
    runs in one Spark task (the multiset of a wide table can be large); the results are written with
    delta-rs. ``max_lhs_size`` bounds the LHS of approximate FDs (exact FDs and UCCs are always complete):
    the level-wise search is exponential in the number of columns (see the module's figures).
    """
    every_table = tables is None
    if every_table:
        tables = sorted(set(catalog.read_small(PROFILE)["table_name"].to_pylist()))
    if not tables and not every_table:
        return
    spark = catalog.spark
    spark.sparkContext.setJobDescription(f"keys and FDs of {len(tables)} tables")
    shapes = {
        name: shape
        for name, shape in table_shapes(catalog, tables).items()
        if len(shape.column_names) <= config.max_columns
    }
    derived = _DERIVED_ARROW.empty_table()
    if shapes:
        # A group per tracked table: its marker row is always there, even when it has no other agree-set.
        derive = _derive_per_table(shapes, config.max_fd_error, config.max_lhs_size)
        derived = (
            catalog.read(STATE)
            .where(F.col("table_name").isin(list(shapes)))
            .groupBy("table_name")
            .applyInArrow(derive, _DERIVED_SCHEMA)
            .toArrow()
        )
    is_ucc = pc.equal(derived["kind"], "ucc")
    uccs = derived.filter(is_ucc).select(["table_name", "columns"])
    fds = derived.filter(pc.invert(is_ucc)).select(["table_name", "columns", "rhs", "error"])
    # The rows of the listed tables only, in one commit each; other tables' rows stay.
    of_tables = (
        None
        if every_table
        else "table_name IN (" + ", ".join("'" + t.replace("'", "''") + "'" for t in tables) + ")"
    )
    catalog.replace_small(UCCS, uccs, of_tables)
    catalog.replace_small(FDS, fds.rename_columns(["table_name", "lhs", "rhs", "error"]), of_tables)
    exact = int(pc.sum(pc.equal(fds["error"], 0.0)).as_py() or 0)
    log.info(
        "keys and dependencies of %d tables (of %d listed): %d minimal UCCs, %d exact and %d "
        "approximate minimal FDs (error <= %g)",
        len(pc.unique(derived["table_name"])),
        len(tables),
        len(uccs),
        exact,
        len(fds) - exact,
        config.max_fd_error,
    )


def unique_column_flags(catalog: Catalog, config: AgreeSetConfig) -> pa.Table:
    """Per column of every table in ``state/column_profile``: ``is_unique``, true when no agree-set contains
    the column (no two rows share a value there); null where keys are not derived (untracked tables, and
    tables wider than ``max_columns``).

    Read from ``unique_column_combinations`` rather than from the agree-set state: a column is in no
    agree-set exactly when {column} is a UCC, which is then minimal, unless |r| <= 1, where the empty set is
    the minimal UCC and every column is unique. So call it after :func:`refresh_keys_and_dependencies`.
    """
    profile = catalog.read_small(PROFILE).sort_by([("table_name", "ascending"), ("ordinal", "ascending")])
    uccs = catalog.read_small(UCCS)
    sizes = pc.list_value_length(uccs["columns"])
    singles = uccs.filter(pc.equal(sizes, 1))
    unique = set(
        zip(singles["table_name"].to_pylist(), pc.list_flatten(singles["columns"]).to_pylist(), strict=True)
    )
    everything_unique = set(uccs.filter(pc.equal(sizes, 0))["table_name"].to_pylist())
    widths = profile.group_by("table_name").aggregate([("column_name", "count")]).to_pylist()
    derived = tracked_tables(catalog) & {
        row["table_name"] for row in widths if row["column_name_count"] <= config.max_columns
    }
    pairs = zip(profile["table_name"].to_pylist(), profile["column_name"].to_pylist(), strict=True)
    flags = [
        ((table, column) in unique or table in everything_unique) if table in derived else None
        for table, column in pairs
    ]
    return pa.table(
        {
            "table_name": profile["table_name"],
            "column_name": profile["column_name"],
            "is_unique": pa.array(flags, pa.bool_()),
        }
    )
