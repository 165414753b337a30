"""The contract every state component follows: a delta from a batch, a merge with removal, metrics.

A state component is Deequ's analyzer extended with removal. Deequ computes an analyzer's state from a
DataFrame (``computeStateFrom``), adds states up (``sum``: states form a monoid) and derives the metric from
a state (``computeMetricFrom``). Deletions make our states groups rather than monoids, so the merge also
subtracts; the three parts are:

* :meth:`StateComponent.delta`: the plan's batches -> the rows to merge. For a batch that replaces the
  table's state (a new, rebuilt or dropped table) they are the table's complete rows instead of a change.
  It has two halves, as Deequ's scan-shareable analyzers do: :meth:`StateComponent.partial` works inside
  the executor tasks of the run's one scan (``lakemeta.scan``), on each table's change read once for all
  components, and returns the component's partial rows for that table; :meth:`StateComponent.delta`
  turns the partial rows of all tables (a DataFrame) into the rows to merge (by default the sums of
  signed counts per key), and :meth:`StateComponent.delta_on_driver` does the same with Arrow for a
  batch small enough to merge on the driver.
* :meth:`StateComponent.merge`: the delta into the stored state, in one idempotent Delta commit tagged with
  the run (Delta's ``txnAppId`` / ``txnVersion``), so a retried run never applies a batch twice. The default
  is the shared MERGE of signed counts (``catalog.counts.merge_counts``): counts are added, rows whose counts
  reach zero are removed, a count that would turn negative stops the run before anything is written.
* :meth:`StateComponent.derive`: metrics of every column derived from the stored state (for the catalog's
  ``columns``), or None for a component whose results come from a discovery step.

:meth:`StateComponent.update` ties them together; the pipeline calls it for every component of
:data:`lakemeta.registry.STATE_COMPONENTS`, and the incremental DAG runs one task per component. A new
component is one module holding a subclass and one entry in that registry: its state table
(``state/<name>``), its DAG task (``update_<name>``) and its transaction id (``lakemeta.<name>``) all follow
from :attr:`StateComponent.name`.
"""

from __future__ import annotations

import functools
import logging
import operator
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc
import pyspark.sql.functions as F
from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from lakemeta.catalog import Catalog, Txn
from lakemeta.catalog.counts import merge_counts
from lakemeta.config import Config
from lakemeta.lake.batches import Plan
from lakemeta.lake.table_changes import TableChange, TablePartial
from lakemeta.scan import BatchScan
from lakemeta.spark.portable import describe_jobs
from lakemeta.storage import Location

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StateDelta:
    """What a plan changes in one component's state: ``rows`` in the state table's schema (signed counts
    for the shared MERGE), and the tables whose stored rows ``rows`` replace whole. ``rows`` is a
    DataFrame, or an Arrow table that the driver merges: of state small by construction (a row per column:
    ``ColumnProfile``), or of a small batch (``StateComponent.update``)."""

    rows: DataFrame | pa.Table
    replaced_tables: Sequence[str]


class StateComponent(ABC):
    """One kind of incremental state kept as the Delta table ``state/<name>``."""

    #: The name: state table ``state/<name>``, DAG task ``update_<name>``, txn ``lakemeta.<name>``.
    name: ClassVar[str]
    #: The state table's schema (part of the catalog contract).
    schema: ClassVar[StructType]
    #: Whether the state table is partitioned by a bucket of ``table_name`` (``lakemeta.catalog.layout``):
    #: for state of a row per value or per cell of a table, so that a batch's MERGE reads and rewrites the
    #: files of the buckets of the tables it changes and no others. (State of a few rows per column stays in
    #: few files, which a full read opens at once.)
    bucketed_by_table: ClassVar[bool] = False
    #: The section of the configuration the component reads (``Config.<section>``).
    config_section: ClassVar[str | None] = None
    #: For the shared MERGE of a multiset's counts: the key columns, the count columns, and descriptive
    #: columns taken from the delta as they are.
    merge_keys: ClassVar[Sequence[str]] = ()
    count_columns: ClassVar[Sequence[str]] = ()
    replace_columns: ClassVar[Sequence[str]] = ()
    #: The schema of the rows ``partial`` emits per table in the scan's tasks; its first column is
    #: ``table_name``.
    partial_schema: ClassVar[StructType]

    def __init__(self, catalog: Catalog, lake: Location, config: Config) -> None:
        self.catalog = catalog
        self.lake = lake
        self.config = config

    @classmethod
    def state_table(cls) -> str:
        return f"state/{cls.name}"

    @classmethod
    def task_id(cls) -> str:
        """The step's name in the DAG, the jobs and the logs."""
        return f"update_{cls.name}"

    def txn(self, plan: Plan) -> Txn:
        return Txn(f"lakemeta.{self.name}", plan.run_id)

    @abstractmethod
    def partial(self) -> Callable[[TableChange], TablePartial]:
        """What the scan's tasks run for this component on each table's change: a picklable factory (it is
        shipped to the executors, so it holds settings, never the catalog or the session)."""

    def delta(self, plan: Plan, partials: DataFrame) -> StateDelta:
        """The rows ``merge`` applies for the plan's batches, from the partial rows the scan staged for
        them (computed lazily where Spark allows). The default, for partial rows of signed counts: their
        sums per ``merge_keys`` (a table read in parts gives a row per part), zeros left out; for full
        batches they are the table's complete counts, which the MERGE puts in place of the stored ones."""
        summed = partials.groupBy(*self.merge_keys).agg(*(F.sum(c).alias(c) for c in self.count_columns))
        nonzero = functools.reduce(operator.or_, (F.col(c) != 0 for c in self.count_columns))
        return StateDelta(summed.where(nonzero), plan.replaced_tables)

    def delta_on_driver(self, plan: Plan, scan: BatchScan) -> StateDelta:
        """``delta`` of a batch merged on the driver (``update``), its rows an Arrow table: computed with
        Arrow from the staged partial rows read on the driver, where a Spark aggregation costs a small batch
        two or more jobs for a few thousand rows. The default mirrors ``delta``'s: the signed counts summed
        per ``merge_keys``, zeros left out."""
        partials = scan.partials_on_driver(self)
        summed = partials.group_by(list(self.merge_keys)).aggregate([(c, "sum") for c in self.count_columns])
        summed = summed.rename_columns([*self.merge_keys, *self.count_columns])
        nonzero = functools.reduce(pc.or_, (pc.not_equal(summed[c], 0) for c in self.count_columns))
        return StateDelta(summed.filter(nonzero), plan.replaced_tables)

    def merge(self, plan: Plan, delta: StateDelta) -> bool:
        """Apply ``delta`` to the stored state in one commit tagged with the run; False when the run had
        already been applied. The default is the shared MERGE of signed counts, then what it changed in
        the log."""
        merged = merge_counts(
            self.catalog,
            self.state_table(),
            delta.rows,
            keys=self.merge_keys,
            counts=self.count_columns,
            tables=plan.tables,
            replaced_tables=delta.replaced_tables,
            txn=self.txn(plan),
            replace_columns=self.replace_columns,
        )
        if merged:
            metrics = self.catalog.last_commit_metrics(self.state_table())
            log.info(
                "run %d: %s of %d tables merged (%s rows inserted, %s updated, %s deleted)",
                plan.run_id,
                self.name,
                len(plan.batches),
                # an append into an empty table (``merge_counts``) records its rows as output rows
                metrics.get("numTargetRowsInserted", metrics.get("numOutputRows", 0)),
                metrics.get("numTargetRowsUpdated", 0),
                metrics.get("numTargetRowsDeleted", 0),
            )
        return merged

    def derive(self, tables: Sequence[str] | None = None) -> pa.Table | None:
        """Per-column metrics derived from the stored state (``table_name``, ``column_name`` and metric
        columns of the catalog table ``columns``) of the columns of ``tables`` (of every table when None),
        or None."""
        return None

    def applied(self, plan: Plan) -> bool:
        """Whether the plan needs nothing more of this component: no batches, or its commit is in the log."""
        if not plan.batches:
            log.info("run %d: no batches, nothing to apply to %s", plan.run_id, self.state_table())
            return True
        if self.catalog.already_applied(self.state_table(), self.txn(plan)):
            log.info("run %d: %s already applied, skipping", plan.run_id, self.state_table())
            return True
        return False

    def update(self, plan: Plan) -> None:
        """Apply the plan's batches to this component's state exactly once, from the partial rows of the
        run's scan (``lakemeta.scan``; run now when no recorded scan covers this component). The batches of
        tables the scan could not read are left out: they stay pending."""
        if self.applied(plan):
            return
        scan = BatchScan(self.catalog, self.lake, plan, self.config.scan)
        if self.name not in scan.covered():
            scan.run([self])
        readable = plan.without(set(scan.failed()))
        describe_jobs(self.catalog.spark, f"run {plan.run_id}: {self.name} of {len(readable.batches)} tables")
        if self._merges_on_driver(scan, readable):
            delta = self.delta_on_driver(readable, scan)
        else:
            delta = self.delta(readable, scan.partials(self))
        self.merge(readable, delta)

    def _merges_on_driver(self, scan: BatchScan, plan: Plan) -> bool:
        """Whether the batch is small enough to merge on the driver: its staged partial rows, and the
        stored files the merge rewrites, each at most ``scan.driver_state_bytes``. A Spark MERGE costs a
        small batch 10-16 Spark jobs and seconds per component, nearly all per statement
        (docs/performance.md, "Measurements behind the code"); the driver merges it in a few delta-rs reads
        and one commit (``lakemeta.catalog.merges``). The tables whose state a delta replaces are among the
        plan's (new, rebuilt, dropped, or crossing a size)."""
        return (
            self.reads_on_driver(plan.tables)
            and scan.staged_bytes(self) <= self.config.scan.driver_state_bytes
        )

    def reads_on_driver(self, tables: Sequence[str] | None) -> bool:
        """Whether the stored state of ``tables`` (of every table when None) is small enough to read on the
        driver (``Catalog.reads_on_driver``)."""
        return self.catalog.reads_on_driver(self.state_table(), tables, self.config.scan.driver_state_bytes)
