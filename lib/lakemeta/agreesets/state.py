"""Agree-set multisets as Delta state (``state/agree_sets``): the Spark adapter of DynASt's maintenance.

The three parts of a state component (docs/architecture.md, "The state component contract"):

* Delta from a batch (:meth:`AgreeSets.delta`; DynASt Fig. 1, first step). Per changed table, in the task
  of the run's one scan (``lakemeta.scan``) that reads the table: it takes the table's snapshots at the
  batch's ``from_version`` (r^curr) and ``to_version`` (read with delta-rs, as canonical strings:
  ``lakemeta.agreesets.values``) and computes their change of ES^m (``lakemeta.agreesets.batch_delta``):
  the deleted tuples are removed with Algorithm 2 (Δ-, §5.2) and the inserted tuples added with
  Algorithm 1 (Δ+, over r^next, §5.1) - deletions first, as §3 prescribes. The emitted rows are Δ+ ⊖ Δ-
  as signed counts per agree-set. A ``full`` batch (new or replaced table) emits the complete ES^m of its
  snapshot (Alg. 1 into an empty relation); a ``drop`` batch emits nothing.
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

import functools
import logging
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import DataFrame
from pyspark.sql.types import ArrayType, BooleanType, LongType, StringType, StructField, StructType

from lakemeta.agreesets.batch_delta import AgreeSetDelta, agree_set_delta, name_lists
from lakemeta.agreesets.discover import unique_column_flags
from lakemeta.agreesets.values import comparable_table
from lakemeta.component import StateComponent, StateDelta
from lakemeta.lake.batches import Plan
from lakemeta.lake.table_changes import TableChange, TablePartial
from lakemeta.scan import BatchScan

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

# Per table, whether the partial rows replace its stored ones; a row with a null agree-set only says so
# (a table over ``max_rows``, whose stored rows are replaced by nothing).
PARTIAL_SCHEMA = StructType([*SCHEMA.fields, StructField("replaces", BooleanType(), True)])
_NAMES = pa.list_(pa.string())


def _delta_rows(table_name: str, delta: AgreeSetDelta, full: bool) -> pa.Table:
    """The delta's rows; a full build also emits the table's marker (the empty agree-set, count 1)."""
    names = name_lists(delta.masks, delta.column_names)
    counts = pa.array(delta.counts, pa.int64())
    if full:
        names = pa.concat_arrays([names, pa.array([[]], _NAMES)])
        counts = pa.concat_arrays([counts, pa.array([1], pa.int64())])
    n = len(counts)
    return pa.table(
        {
            "table_name": pa.array([table_name] * n, pa.string()),
            "agree_set": names,
            "count": counts,
            "replaces": pa.array([full] * n, pa.bool_()),
        }
    )


class _AgreeSetPartial(TablePartial):
    """A tracked table's change of ES^m from its two snapshots (``batch_delta.agree_set_delta``)."""

    def __init__(self, change: TableChange, max_rows: int, null_equals_null: bool) -> None:
        super().__init__(change)
        self.max_rows = max_rows
        self.null_equals_null = null_equals_null

    def finish(self) -> pa.Table:
        change = self.change
        if change.snapshot_rows > self.max_rows:  # untracked now: its rows, if any, are replaced by nothing
            return pa.table(
                {
                    "table_name": [change.table_name],
                    "agree_set": pa.nulls(1, _NAMES),
                    "count": pa.array([0], pa.int64()),
                    "replaces": [True],
                }
            )
        full = change.replaces_state or change.before_rows > self.max_rows  # untracked until now: built
        after = comparable_table(change.after)
        before = None if full else comparable_table(change.before)
        if before is not None and before.column_names != after.column_names:
            raise ValueError(f"{change.table_name}: schema changed in an incremental batch")
        delta = agree_set_delta(before, after, self.null_equals_null)
        log.debug(
            "%s: %d rows deleted, %d inserted", change.table_name, delta.rows_deleted, delta.rows_inserted
        )
        return _delta_rows(change.table_name, delta, full)


class AgreeSets(StateComponent):
    """DynASt's agree-set multiset ES^m(r) of every tracked table, maintained batch by batch."""

    name = "agree_sets"
    schema = SCHEMA
    partial_schema = PARTIAL_SCHEMA
    config_section = "agree_sets"
    merge_keys = ("table_name", "agree_set")
    count_columns = ("count",)

    def partial(self) -> functools.partial[_AgreeSetPartial]:
        settings = self.config.agree_sets
        return functools.partial(
            _AgreeSetPartial, max_rows=settings.max_rows, null_equals_null=settings.null_equals_null
        )

    def delta(self, plan: Plan, partials: DataFrame) -> StateDelta:
        """The tracked tables' signed agree-set counts; the tables whose rows they replace are the plan's
        new, replaced and dropped tables and those crossing ``max_rows`` (few: collected)."""
        crossing = partials.where(F.col("replaces")).select("table_name").distinct().toArrow()
        replaced = sorted(set(plan.replaced_tables) | set(crossing["table_name"].to_pylist()))
        rows = partials.where(F.col("agree_set").isNotNull()).select(*SCHEMA.fieldNames())
        return StateDelta(rows, replaced)

    def delta_on_driver(self, plan: Plan, scan: BatchScan) -> StateDelta:
        partials = scan.partials_on_driver(self)
        crossing = partials.filter(pc.fill_null(partials["replaces"], False))["table_name"].to_pylist()
        rows = partials.filter(pc.is_valid(partials["agree_set"])).select(SCHEMA.fieldNames())
        return StateDelta(rows, sorted(set(plan.replaced_tables) | set(crossing)))

    def merge(self, plan: Plan, delta: StateDelta) -> bool:
        """The shared MERGE of counts, with the tables whose agree sets it replaced in the log."""
        applied = super().merge(plan, delta)
        if applied:  # the rows merged are in the shared merge's log line
            log.info(
                "run %d: agree-sets of %d tables updated (%d replaced, new, dropped or crossing %d rows)",
                plan.run_id,
                len(plan.batches),
                len(delta.replaced_tables),
                self.config.agree_sets.max_rows,
            )
        return applied

    def derive(self, tables: Sequence[str] | None = None) -> pa.Table:
        """Per column of every profiled table (of ``tables`` unless that is None): ``is_unique``
        (``discover.unique_column_flags``)."""
        return unique_column_flags(
            self.catalog, self.config.agree_sets, tables, self.config.scan.driver_state_bytes
        )
