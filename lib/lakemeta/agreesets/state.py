"""Agree-set multisets as Delta state (``state/agree_sets``): the Spark adapter of DynASt's maintenance.

The three parts of a state component (docs/architecture.md, "The state component contract"):

* Delta from a batch (:meth:`AgreeSets.delta`; DynASt Fig. 1, first step). Per changed table, in one Spark
  task that keeps the table's work together: the executor reads the table's snapshots at the batch's
  ``from_version`` (r^curr) and ``to_version`` with delta-rs (``lakemeta.agreesets.values``) and computes
  their change of ES^m (``lakemeta.agreesets.batch_delta``): the deleted tuples are removed with Algorithm 2
  (Δ-, §5.2) and the inserted tuples added with Algorithm 1 (Δ+, over r^next, §5.1) - deletions first, as
  §3 prescribes. The emitted rows are Δ+ ⊖ Δ- as signed counts per agree-set. A ``full`` batch (new or
  replaced table) emits the complete ES^m of its snapshot (Alg. 1 into an empty relation); a ``drop`` batch
  emits nothing.
* Merge (the contract's shared MERGE of counts). One idempotent MERGE adds the signed counts (Property 1:
  ES^m(r^next) = ES^m(r^curr) ⊖ Δ- ⊕ Δ+), replaces the rows of new, replaced and dropped tables, and
  deletes agree-sets whose count reaches zero, so the state holds exactly the support of ES^m(r) with its
  counts. Empty agree-sets are never stored (§3: not informative; their number is |r|(|r|-1)/2 minus the
  stored total).
* Derive (:meth:`AgreeSets.derive`): the per-column uniqueness flags. The minimal UCCs, exact and
  approximate FDs are catalog results of their own, written by the discovery step
  ``lakemeta.agreesets.discover``, which a run's commit runs for the run's tables before the flags are read.

Which tables. Agree-sets compare every pair of tuples, so a table keeps agree-set state only while its
snapshot holds at most ``max_rows`` rows (``agree_sets.max_rows``), counted from the Delta log's file
statistics so that the decision needs no data read and is the same function of the snapshot in every run
and in a rebuild. A tracked table's state holds one marker row, the empty agree-set with count 1 (empty
agree-sets are otherwise never stored), so that "tracked" is part of the state: a table that grows past
the bound has its rows replaced by nothing, one that shrinks below it is rebuilt from its snapshot, and
keys, FDs and uniqueness flags are derived exactly for the tracked tables (and, as hitting sets are
exponential in the width in the worst case, only for those with at most ``max_columns`` columns).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

from lakemeta.agreesets.batch_delta import AgreeSetDelta, agree_set_delta, name_lists
from lakemeta.agreesets.discover import unique_column_flags
from lakemeta.agreesets.values import read_snapshot
from lakemeta.component import StateComponent, StateDelta
from lakemeta.lake.batches import Plan
from lakemeta.lake.tables import table_path
from lakemeta.spark.placement import balanced_frame

log = logging.getLogger(__name__)

# Per tracked table, each agree-set of ES^m(r) (sorted column names) and its number of tuple pairs, plus
# the table's marker (the empty agree-set, count 1).
SCHEMA = StructType(
    [
        StructField("table_name", StringType(), True),
        StructField("agree_set", ArrayType(StringType()), True),
        StructField("count", LongType(), True),
    ]
)

_DESCRIPTOR_SCHEMA = "table_name string, path string, kind string, from_version long, to_version long"
_NAMES = pa.list_(pa.string())


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


@dataclass(frozen=True)
class _AgreeSetRows(StateDelta):
    """The delta, with what the merge's log line reports: the executors' counters, filled as the rows are
    computed, and the number of tables left untracked (over ``max_rows``)."""

    counters: _Counters
    untracked: int


class AgreeSets(StateComponent):
    """DynASt's agree-set multiset ES^m(r) of every tracked table, maintained batch by batch."""

    name = "agree_sets"
    schema = SCHEMA
    config_section = "agree_sets"
    merge_keys = ("table_name", "agree_set")
    count_columns = ("count",)
    drop_zero = True

    def delta(self, plan: Plan) -> _AgreeSetRows:
        settings = self.config.agree_sets
        spark = self.catalog.spark
        counters = _Counters.create(spark)
        work = _plan_work(self.lake, plan, settings.max_rows)
        if work.descriptors:
            rows = balanced_frame(spark, work.descriptors, _DESCRIPTOR_SCHEMA).mapInArrow(
                _batch_deltas(settings.null_equals_null, counters), SCHEMA
            )
        else:
            rows = spark.createDataFrame([], SCHEMA)
        untracked = sum(batch.kind != "drop" for batch in plan.batches) - len(work.descriptors)
        return _AgreeSetRows(rows, work.replaced_tables, counters, untracked)

    def merge(self, plan: Plan, delta: _AgreeSetRows) -> bool:
        """The shared MERGE of counts, with the number of agree-set rows merged in the log."""
        # Computed once, for the count and the MERGE (which reads it for its negative-count check and
        # twice more).
        rows = delta.rows.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            merged = rows.count()
            applied = super().merge(plan, StateDelta(rows, delta.replaced_tables))
        finally:
            rows.unpersist()
        log.info(
            "run %d: agree-sets of %d tables updated (%d rows deleted, %d inserted; %d dropped tables, "
            "%d over %d rows untracked): %d agree-set rows merged",
            plan.run_id,
            delta.counters.tables.value,
            delta.counters.rows_deleted.value,
            delta.counters.rows_inserted.value,
            sum(batch.kind == "drop" for batch in plan.batches),
            delta.untracked,
            self.config.agree_sets.max_rows,
            merged,
        )
        return applied

    def derive(self) -> pa.Table:
        """Per column of every profiled table: ``is_unique`` (``discover.unique_column_flags``)."""
        return unique_column_flags(self.catalog, self.config.agree_sets)
