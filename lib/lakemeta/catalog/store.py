"""Readers and writers of the catalog's Delta tables, with the idempotent writes exactly-once needs.

Every write that adds to state is tagged with its run (Delta's transaction identifiers: ``txnAppId`` is
the component, ``txnVersion`` the run id). Delta records the highest version per application id in the
table's log and skips a write whose version is not higher, so a retried run re-executes its writes
harmlessly (docs/architecture.md, "A run's data flow").
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import threading
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset
import pyspark.sql.functions as F
from deltalake.exceptions import TableNotFoundError
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from lakemeta.catalog.layout import (
    BUCKET_COLUMN,
    arrow_with_bucket,
    bucketed_schema,
    buckets_of,
    in_buckets_sql,
    with_bucket,
    writer_properties,
)
from lakemeta.catalog.leases import EXCLUSIVE, LEASE_SECONDS, SHARED, Hold, Lease
from lakemeta.catalog.predicates import is_in, is_in_sql
from lakemeta.catalog.reflects import commit_metadata
from lakemeta.catalog.schemas import CATALOG_SCHEMAS, OWN_SCHEMAS
from lakemeta.crash_points import crash_point
from lakemeta.spark.interruption import is_stop, stop_own_work
from lakemeta.spark.portable import arrow_frame
from lakemeta.storage import Location

log = logging.getLogger(__name__)

_TXN_APP = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
# commit metadata: the epochs of the leases a commit was made under (``Catalog.committing``)
LEASES_METADATA = "lakemeta.leases"
_WANTED = "lakemeta_wanted_table"  # the table names a read asks for, in its semi-join
COMPACT_PAST_FILES = 8  # files of a small table past which an append compacts it (``Catalog.append_small``)
# Told the name of each catalog table this process commits to, or finds committed to by an earlier attempt
# of the same write (a retried step skips it: what it would write is there); the orchestration's lineage
# listens.
write_observers: list[Callable[[str], None]] = []


def report_written(name: str) -> None:
    """Tell the write observers that table ``name`` holds this process's write (made or found made)."""
    for observer in list(write_observers):
        observer(name)


@dataclass(frozen=True)
class Txn:
    """A write's identity: component ``app`` applying run ``version``."""

    app: str
    version: int


def arrow_schema(name: str) -> pa.Schema:
    """The Arrow form of the schema of one of the catalog's own tables (results and bookkeeping; a state
    component's table: ``Catalog.arrow_schema``), for delta-rs reads and writes."""
    return to_arrow_schema(OWN_SCHEMAS[name], timezone="UTC")


def read_small(root: Location, name: str) -> pa.Table:
    """A table of the catalog at ``root`` that is small by construction, read with delta-rs: no Spark job,
    and no JVM for the tasks that need none (the audits)."""
    return (root / name).delta_dataset().to_table()


class Catalog:
    """The catalog rooted at ``root``: result tables at the top, state under ``state/``.

    Two access paths, each where it fits: Spark for the state that batches of lake rows update (the
    work runs in executors), and delta-rs for the bookkeeping tables that are small by construction
    (a row per run, per table or per column: ``runs``, ``state/batches``, ``tables``, ``columns``),
    where a Spark job would cost seconds of overhead for a few rows.
    """

    def __init__(
        self,
        spark: SparkSession | None,
        root: Location | Path,
        state_schemas: Mapping[str, StructType] | None = None,
        bucketed_by_table: Collection[str] = (),
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        """``state_schemas``: the state tables of the state components (``lakemeta.registry.open_catalog``
        gives those of every registered component); the result and bookkeeping tables are always there.
        ``bucketed_by_table``: those of them kept partitioned by a bucket of ``table_name``
        (``lakemeta.catalog.layout``), with the bucket as their last column. ``lease_seconds``: the length
        of its leases (``lakemeta.catalog.leases``).
        Without a Spark session (None) the handle serves what needs no JVM: planning, the bookkeeping
        tables, the leases."""
        self._spark = spark
        self.root = Location.parse(root)
        self.bucketed_by_table = frozenset(bucketed_by_table)
        self.schemas: dict[str, StructType] = {
            **OWN_SCHEMAS,
            **{
                name: bucketed_schema(schema) if name in self.bucketed_by_table else schema
                for name, schema in (state_schemas or {}).items()
            },
        }
        self.lease_seconds = lease_seconds
        # the leases this handle holds, outermost first: every commit is fenced by them all (``committing``)
        self._holds: list[Hold] = []
        self._holding_state = False  # whether this handle holds the state lock, shared or alone
        # while it holds the state lock shared: a delta-rs handle per table read or written (``delta_table``)
        # by the thread that took the lock (a handle is not to be used by two threads at once)
        self._tables: dict[str, deltalake.DeltaTable] | None = None
        self._tables_thread: int | None = None

    @property
    def has_spark(self) -> bool:
        """Whether the handle was opened with a Spark session (the steps that read Delta logs only are
        not)."""
        return self._spark is not None

    @property
    def spark(self) -> SparkSession:
        if self._spark is None:
            raise RuntimeError(f"the catalog handle of {self.root} was opened without a Spark session")
        return self._spark

    @property
    def state_tables(self) -> list[str]:
        """The state tables: the state components' and the batches (the watermarks)."""
        return [name for name in self.schemas if name not in CATALOG_SCHEMAS]

    def location(self, name: str) -> Location:
        if name not in self.schemas:
            raise KeyError(f"not a catalog table: {name}")
        return self.root / name

    def path(self, name: str) -> str:
        """The table's URI, as Spark and delta-rs take it."""
        return self.location(name).uri

    def arrow_schema(self, name: str) -> pa.Schema:
        """The Arrow form of a table's schema (for delta-rs reads and writes)."""
        return to_arrow_schema(self.schemas[name], timezone="UTC")

    def delta_table(self, name: str) -> deltalake.DeltaTable:
        """Table ``name`` at its newest version, through delta-rs. Inside a step (the state lock held
        shared) the handle is kept and brought up to date on the next call, which reads only the commits
        since (``update_incremental``) where opening replays the log from its last checkpoint, many times
        as long (docs/performance.md, "Measurements behind the code"): a discovery after a small batch
        reads and writes the same bookkeeping tables a dozen times. The handles are the step's and go with
        its hold: outside a step nothing would bound how long a kept handle lived (with its snapshot of the
        table's files) nor which thread used it, and another thread of the step (a search's freshness check)
        may read meanwhile, which a shared handle would not bear: each such call opens the table. (A rebuild
        truncates with ``replace_small``, an overwrite, and maintenance compacts and rewrites in place:
        commits on the same Delta log, which a kept handle follows like any other.)"""
        location = self.location(name)
        if self._tables is None or threading.get_ident() != self._tables_thread:
            return location.delta_table()
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = location.delta_table()
        else:
            table.update_incremental()
        return table

    def read(self, name: str, tables: Sequence[str] | None = None) -> DataFrame:
        """A table through Spark; only the rows of ``tables`` (by ``table_name``; in a table bucketed by
        table, from the partitions of their buckets alone) unless that is None."""
        rows = self.spark.read.format("delta").load(self.path(name))
        if tables is None:
            return rows
        names = sorted(set(tables))
        if name in self.bucketed_by_table:
            rows = rows.where(F.col(BUCKET_COLUMN).isin(buckets_of(names)))
        # A broadcast semi-join rather than a filter with a literal per table: over the 20,000 tables of
        # bench/many_inds.py a literal list of that many names cost most of the read, where the join costs
        # little; for ten tables both are as fast (docs/performance.md, "Measurements behind the code").
        wanted = arrow_frame(self.spark, pa.table({_WANTED: pa.array(names, pa.string())}))
        return rows.join(F.broadcast(wanted), F.col("table_name") == F.col(_WANTED), "left_semi")

    def append(self, name: str, rows: DataFrame, fenced: dict[str, str]) -> None:
        """Append ``rows`` (in the component's schema) to state table ``name`` through Spark, with the bucket
        of their table where the table is bucketed by it. The caller commits (``committing``, whose
        ``fenced`` metadata the commit carries)."""
        if name in self.bucketed_by_table:
            rows = with_bucket(rows)
        metadata = json.dumps(fenced, sort_keys=True)
        rows.write.format("delta").mode("append").option("userMetadata", metadata).save(self.path(name))

    def merge_into(
        self,
        name: str,
        source: DataFrame,
        on: str,
        clauses: Sequence[str],
        tables: Sequence[str],
        fenced: dict[str, str],
    ) -> Row:
        """``MERGE INTO`` table ``name`` (alias ``t``) from ``source`` (alias ``s``) with the ``WHEN``
        ``clauses``, its commit carrying ``fenced`` (``committing``'s metadata); its metrics
        (``num_inserted_rows``...). ``tables``: every ``table_name`` the source holds (a source row of
        another table would be inserted as new, never matched). In SQL rather than
        through delta-spark's ``DeltaTable``, whose Python API a Spark Connect session lacks; the source is
        a temporary view of the session, dropped afterwards. In a table bucketed by table, the source's rows
        get their bucket here."""
        view = f"lakemeta_merge_source_{uuid.uuid4().hex}"
        (with_bucket(source) if name in self.bucketed_by_table else source).createOrReplaceTempView(view)
        target = self.path(name).replace("`", "``")
        # The condition on the target alone is what Delta prunes the files it reads by (the partitions of the
        # tables' buckets in a table bucketed by table, else the files' min/max statistics): without it a
        # MERGE of one table's batch reads and joins the state of every table. Rows of other tables match no
        # source row either way, so it changes no outcome. (Delta ignores it while a WHEN NOT MATCHED BY
        # SOURCE clause needs every target row: a plan that replaces a table's state.)
        pruned = f"({on}) AND {is_in_sql('t.table_name', tables)}"
        if name in self.bucketed_by_table:
            pruned += f" AND {in_buckets_sql(f't.{BUCKET_COLUMN}', tables)}"
        # SQL has no writer option: the session's commit metadata, for this statement alone
        self.spark.conf.set(_USER_METADATA, json.dumps(fenced, sort_keys=True))
        try:
            return self.spark.sql(
                f"MERGE INTO delta.`{target}` AS t USING {view} AS s ON {pruned} {' '.join(clauses)}"
            ).first()
        finally:
            self.spark.conf.unset(_USER_METADATA)
            self.spark.catalog.dropTempView(view)

    @contextlib.contextmanager
    def _holding(self, lease: str, mode: str, purpose: str) -> Iterator[Hold]:
        """Hold the lease ``lease`` of the catalog (``lakemeta.catalog.leases``) while ``purpose`` runs. Its
        epoch fences every commit made inside (``committing``). When the step is stopped from outside (a
        timeout, a kill, Ctrl-C), or the hold is found lost while the step works, the Spark work of the
        step (this thread's task tags) is stopped before the lease is let go
        (``lakemeta.spark.interruption``), so that no job of it commits once another holder may write."""
        tags = self._spark.getTags() if self._spark is not None else []
        on_lost = None if self._spark is None else functools.partial(stop_own_work, self._spark, tags)
        try:
            with Lease(self.root, lease, self.lease_seconds).hold(mode, purpose, on_lost) as hold:
                self._holds.append(hold)
                try:
                    yield hold
                finally:
                    self._holds.remove(hold)
        except BaseException as error:
            # once per stop: the holds nest (a table's write lease inside the state's)
            if (
                self._spark is not None
                and is_stop(error)
                and not getattr(error, "_lakemeta_work_stopped", False)
            ):
                stop_own_work(self._spark, tags)
                error._lakemeta_work_stopped = True
            raise

    @contextlib.contextmanager
    def lock(self, purpose: str) -> Iterator[None]:
        """Hold the catalog's lease alone while ``purpose`` runs; another process, on any host, waits for
        it. For the steps that read and then write the bookkeeping tables (planning a run, publishing):
        Delta's commit protocol orders blind appends, but does not refuse a second writer that read the
        same state before the first wrote."""
        with self._holding("catalog", EXCLUSIVE, purpose):
            yield

    @contextlib.contextmanager
    def using_state(self, purpose: str) -> Iterator[None]:
        """Hold the state lease shared while ``purpose`` reads or writes the state: the steps of runs go on
        side by side, but never while a rebuild replaces the state (``replacing_state``), which waits for
        them and, from the moment it asks, makes new ones wait behind it. Inside a hold of this catalog
        handle it holds nothing more."""
        if self._holding_state:
            yield
            return
        with self._holding("state", SHARED, purpose):
            self._holding_state, self._tables, self._tables_thread = True, {}, threading.get_ident()
            try:
                yield
            finally:
                self._holding_state, self._tables, self._tables_thread = False, None, None

    @contextlib.contextmanager
    def replacing_state(self) -> Iterator[None]:
        """Hold the state lease alone while a rebuild drops and recomputes the state."""
        if self._holding_state:
            raise RuntimeError("a rebuild cannot start inside a step that uses the state")
        with self._holding("state", EXCLUSIVE, "rebuilding the state"):
            self._holding_state = True
            try:
                yield
            finally:
                self._holding_state = False

    @contextlib.contextmanager
    def committing(self, operation: str, name: str) -> Iterator[dict[str, str]]:
        """One durable write (``operation`` on table ``name``): the table's write lease held alone around
        it, crash points before and after it (``lakemeta.crash_points``; the after-point is passed only when
        the write returned), and the fence: the write goes ahead only while every lease this handle holds
        surely lasts (``Hold.check``), and its commit carries their epochs: the metadata yielded, for a
        delta-rs commit's ``custom_metadata`` or a Spark write's (``append``, ``merge_into``). Delta's
        commit needs an atomic "create if absent" of the next log entry, which delta-rs makes a conditional
        PUT on S3 but delta-spark's S3 log store does not: one writer per table at a time keeps a Spark
        commit from overwriting another process's."""
        with self._holding(f"tables/{name}", EXCLUSIVE, f"{operation} {name}"):
            crash_point(f"before {operation} {name}")
            for hold in self._holds:
                hold.check()
            yield {LEASES_METADATA: json.dumps({h.lease.name: h.epoch for h in self._holds}, sort_keys=True)}
        crash_point(f"after {operation} {name}")
        report_written(name)

    def read_small(
        self,
        name: str,
        tables: Sequence[str] | None = None,
        columns: Sequence[str] | None = None,
        where: pc.Expression | None = None,
    ) -> pa.Table:
        """A table small by construction, read on the driver without a Spark job (``read_small``); only the
        rows of ``tables`` (by ``table_name``) unless that is None, only ``columns`` unless that is None,
        only the rows ``where`` holds for unless that is None. Of a table bucketed by table, only the files
        of their buckets are read: the rows of a few tables, which the caller bounds."""
        if tables is not None and not tables:
            empty = self.arrow_schema(name).empty_table()
            return empty if columns is None else empty.select(columns)
        if tables is not None:
            # The filter skips the row groups whose statistics exclude the tables (the files of a table
            # not bucketed by table hold the rows of many tables, sorted by name as their writes leave them).
            wanted = pc.field("table_name").isin(pa.array(sorted(set(tables)), pa.string()))
            where = wanted if where is None else wanted & where
        return self._dataset(name, tables).to_table(columns=columns, filter=where)

    def count_rows(self, name: str, where: pc.Expression | None = None) -> int:
        """How many rows of a table ``where`` holds for (all unless that is None), counted on the driver
        batch by batch, or from the files' statistics (the rows are never held: a pair table of a dense
        lake has tens of millions)."""
        return self._dataset(name, None).count_rows(filter=where)

    def _dataset(self, name: str, tables: Sequence[str] | None) -> pyarrow.dataset.Dataset:
        """The table as a pyarrow dataset; of a table bucketed by table, only the buckets of ``tables``
        (all unless that is None)."""
        if name in self.bucketed_by_table and tables is not None:
            in_buckets = [(BUCKET_COLUMN, "in", buckets_of(tables))]
        else:
            in_buckets = None
        return self.location(name).delta_dataset(self.delta_table(name), in_buckets)

    def append_small(
        self, name: str, rows: pa.Table, txn: Txn, reflects: dict | None = None, compact: bool = True
    ) -> None:
        """Append rows to a small table once per ``txn`` (a repeated append is skipped); ``reflects`` as
        :meth:`replace_small`'s. ``compact``: whether the append compacts the table once it passes
        ``COMPACT_PAST_FILES`` files (not one whose readers skip files by their statistics)."""
        if self.already_applied(name, txn):
            report_written(name)
            return
        with self.committing("append", name) as fenced:
            table = self.delta_table(name)
            commit = deltalake.CommitProperties(
                app_transactions=[deltalake.Transaction(txn.app, txn.version)],
                custom_metadata=commit_metadata(reflects) | fenced,
            )
            self.location(name).write_delta(
                rows.cast(self.arrow_schema(name)), table, mode="append", commit_properties=commit
            )
            # Each append adds a file, which every later read opens (about a millisecond each): a table
            # appended to per run or per step would be read from hundreds of them between two
            # ``lakemeta maintain``. Past a few it is compacted, in a commit of its own that keeps its rows
            # (Delta's OPTIMIZE: a retry, ``reflects`` and the publication pass over it). A table
            # partitioned by bucket has a file per bucket it holds, and is left to maintenance. The write
            # moved ``table`` to the version it committed, so its files count the appended one.
            if (
                compact
                and len(table.file_uris()) > COMPACT_PAST_FILES
                and not table.metadata().partition_columns
            ):
                table.optimize.compact(
                    writer_properties=writer_properties(name),
                    commit_properties=deltalake.CommitProperties(custom_metadata=fenced),
                )

    def replace_small(
        self, name: str, rows: pa.Table, predicate: str | None = None, reflects: dict | None = None
    ) -> None:
        """Replace a small derived table's content - or only its rows matching ``predicate`` (built from the
        pipeline's own values) - in one commit (idempotent by nature). ``reflects`` says what the content
        was computed from (a run, settings); ``reflects.recorded_reflects`` reads it back."""
        with self.committing("replace", name) as fenced:
            try:
                table = self.delta_table(name)
            except TableNotFoundError:
                table = None  # created by the write (a catalog whose tables are not all made yet)
            self.location(name).write_delta(
                rows.cast(self.arrow_schema(name)),
                table,
                mode="overwrite",
                predicate=predicate,
                writer_properties=writer_properties(name),
                commit_properties=deltalake.CommitProperties(
                    custom_metadata=commit_metadata(reflects) | fenced
                ),
            )

    def record(self, name: str, reflects: dict) -> None:
        """Record that table ``name``'s rows, unchanged, reflect ``reflects`` (``lakemeta.catalog.freshness``:
        a step that found nothing to recompute): a commit that adds no file."""
        with self.committing("record", name) as fenced:
            self.location(name).write_delta(
                self.arrow_schema(name).empty_table(),
                self.delta_table(name),
                mode="append",
                commit_properties=deltalake.CommitProperties(
                    custom_metadata=commit_metadata(reflects) | fenced
                ),
            )

    def replace(
        self, name: str, rows: DataFrame, predicate: str | None = None, reflects: dict | None = None
    ) -> int:
        """``replace_small`` for rows the executors hold (a pair set of a dense lake, millions of rows that
        never pass through the driver): Spark writes them, replacing the table's content - or only its rows
        matching ``predicate``, a Spark SQL condition every written row meets (Delta's ``replaceWhere``) -
        in one commit, whose ``userMetadata`` carries ``reflects``. Returns the rows written."""
        writer = self._in_schema(name, rows).write.format("delta").mode("overwrite")
        if predicate is not None:
            writer = writer.option("replaceWhere", predicate)
        with self.committing("replace", name) as fenced:
            metadata = json.dumps(commit_metadata(reflects) | fenced, sort_keys=True)
            writer.option("userMetadata", metadata).save(self.path(name))
            return int(self.last_commit_metrics(name).get("numOutputRows", 0))

    def append_once(self, name: str, rows: DataFrame, txn: Txn) -> None:
        """``append_small`` for rows the executors hold: Spark appends them once per ``txn`` (Delta's
        ``txnAppId`` / ``txnVersion``; a repeated append is skipped)."""
        if self.already_applied(name, txn):
            report_written(name)
            return
        writer = self._in_schema(name, rows).write.format("delta").mode("append")
        with self.committing("append", name) as fenced:
            writer.option("txnAppId", txn.app).option("txnVersion", txn.version).option(
                "userMetadata", json.dumps(fenced, sort_keys=True)
            ).save(self.path(name))

    def _in_schema(self, name: str, rows: DataFrame) -> DataFrame:
        """``rows`` with table ``name``'s columns, in its order and types."""
        return rows.select([F.col(field.name).cast(field.dataType) for field in self.schemas[name].fields])

    def merge_small(
        self,
        name: str,
        tables: Sequence[str],
        txn: Txn,
        merged: Callable[[pa.Table], pa.Table],
        columns: Sequence[str] | None = None,
    ) -> bool:
        """A state update merged on the driver: the stored rows of ``tables`` (not empty; only ``columns``
        unless None) are read, and ``merged`` of them - rows of those tables alone - put in their place, in
        one commit once per ``txn``; False when ``txn`` had committed. For state small by construction (a
        row per column) and for a small batch's delta (``lakemeta.catalog.merges``). The read is made under
        the table's write lease, so no other write comes between it and the commit; the crash points are a
        MERGE's, as those of every state update (``merge_counts``)."""
        if self.already_applied(name, txn):
            log.info("%s: run %d of %s already applied, skipping", name, txn.version, txn.app)
            report_written(name)
            return False
        with self.committing("merge", name) as fenced:
            stored = self.read_small(name, tables, columns)
            self._put_rows_of_tables(name, merged(stored), tables, txn, fenced)
        return True

    def stored_bytes(self, name: str, tables: Sequence[str] | None = None) -> int:
        """The bytes of the data files that may hold rows of ``tables`` (of every table when None) in table
        ``name`` (those a driver merge reads and rewrites), from the Delta log: the files of their buckets
        in a table bucketed by table, else every file whose ``table_name`` statistics do not exclude them."""
        files = pa.table(self.delta_table(name).get_add_actions(flatten=True))
        may_hold = np.ones(files.num_rows, dtype=bool)
        if tables is not None and name in self.bucketed_by_table:
            buckets = pa.array(buckets_of(tables), files[f"partition.{BUCKET_COLUMN}"].type)
            may_hold &= pc.is_in(files[f"partition.{BUCKET_COLUMN}"], buckets).to_numpy(zero_copy_only=False)
        if tables is not None and "min.table_name" in files.column_names:
            low, high = files["min.table_name"], files["max.table_name"]
            spans = np.zeros(files.num_rows, dtype=bool)
            for table in set(tables):
                spans |= pc.fill_null(
                    pc.and_(pc.less_equal(low, table), pc.greater_equal(high, table)), True
                ).to_numpy(zero_copy_only=False)
            may_hold &= spans
        return int(pc.sum(files["size_bytes"].filter(pa.array(may_hold))).as_py() or 0)

    def reads_on_driver(self, name: str, tables: Sequence[str] | None, limit: int) -> bool:
        """Whether the rows of ``tables`` (of every table when None) in table ``name`` are small enough to
        read on the driver, with delta-rs and no Spark job: at most ``limit`` bytes in the files that may
        hold them (``scan.driver_state_bytes``; 0: never)."""
        return limit > 0 and self.stored_bytes(name, tables) <= limit

    def _put_rows_of_tables(
        self, name: str, rows: pa.Table, tables: Sequence[str], txn: Txn, fenced: dict[str, str]
    ) -> None:
        """Write ``rows`` in place of the stored rows of ``tables`` in one delta-rs commit tagged with
        ``txn`` (inside ``committing``, whose ``fenced`` metadata it carries): the files holding rows of
        ``tables`` are rewritten without them."""
        predicate = is_in("table_name", tables)
        if name in self.bucketed_by_table:
            rows = arrow_with_bucket(rows)
            if tables:
                predicate = f"{BUCKET_COLUMN} IN ({', '.join(map(str, buckets_of(tables)))}) AND {predicate}"
        self.location(name).write_delta(
            rows.cast(self.arrow_schema(name)),
            self.delta_table(name),
            mode="overwrite",
            predicate=predicate,
            writer_properties=writer_properties(name),
            commit_properties=deltalake.CommitProperties(
                app_transactions=[deltalake.Transaction(txn.app, txn.version)], custom_metadata=fenced
            ),
        )

    def update_small(self, name: str, predicate: str, new_values: dict[str, object]) -> None:
        """Set ``new_values`` on the rows matching ``predicate`` (built from the pipeline's own values,
        never from identifiers a user supplied)."""
        # delta-rs puts a string value between single quotes as it is: a quote inside must be doubled.
        literal = {
            key: value.replace("'", "''") if isinstance(value, str) else value
            for key, value in new_values.items()
        }
        with self.committing("update", name) as fenced:
            self.delta_table(name).update(
                new_values=literal,
                predicate=predicate,
                commit_properties=deltalake.CommitProperties(custom_metadata=fenced),
            )

    def update_rows_small(self, name: str, rows: pa.Table, keys: Sequence[str], condition: str) -> None:
        """Set, on every stored row that matches a row of ``rows`` on ``keys`` and meets ``condition`` (over
        the stored row ``t``), the other columns of ``rows``: per-row values in one commit."""
        matched = " AND ".join(f"t.{key} = s.{key}" for key in keys)
        updates = {column: f"s.{column}" for column in rows.column_names if column not in keys}
        with self.committing("update", name) as fenced:
            self.delta_table(name).merge(
                rows,
                predicate=matched,
                source_alias="s",
                target_alias="t",
                commit_properties=deltalake.CommitProperties(custom_metadata=fenced),
            ).when_matched_update(updates=updates, predicate=condition).execute()

    def already_applied(self, name: str, txn: Txn) -> bool:
        """Whether ``txn`` (or a later run of the same component) has committed to table ``name``."""
        applied = self.delta_table(name).transaction_version(txn.app)
        return applied is not None and applied >= txn.version

    def last_commit_metrics(self, name: str) -> dict[str, str]:
        """The operation metrics Delta recorded for the table's latest commit (rows inserted, ...)."""
        history = self.delta_table(name).history(1)
        return dict(history[0].get("operationMetrics", {})) if history else {}

    def truncate(self, name: str) -> None:
        self.replace_small(name, self.arrow_schema(name).empty_table())

    @contextlib.contextmanager
    def transaction(self, txn: Txn) -> Iterator[None]:
        """Tag the MERGE / UPDATE / DELETE statements run inside with ``txn`` (session-level confs)."""
        self.spark.conf.set(_TXN_APP, txn.app)
        self.spark.conf.set(_TXN_VERSION, str(txn.version))
        try:
            yield
        finally:
            self.spark.conf.unset(_TXN_APP)
            self.spark.conf.unset(_TXN_VERSION)

    def holds_rows(self, name: str) -> bool:
        """Whether table ``name`` holds any row, from its files' record counts in the Delta log (no scan;
        a file without a count is taken to hold rows)."""
        records = pa.table(self.delta_table(name).get_add_actions(flatten=True)).column("num_records")
        return len(records) > 0 and (records.null_count > 0 or pc.sum(records).as_py() > 0)
