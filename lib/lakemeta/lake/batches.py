"""Change batches: per source table, the rows inserted and deleted since its last processed version.

A run's plan lists one batch per changed table and is stored (``state/batches``) before any state is
touched, so a retried run processes exactly the same versions. A batch is one of

* ``incremental``: versions (from_version, to_version]; rows come from Delta's change data feed when the
  feed covers the whole range and its files still exist, otherwise from a diff of the two snapshots
  (tables written by other engines, or with the feed off). An update is a delete plus an insert.
* ``full``: the state of the table is rebuilt from its snapshot at to_version: a table seen for the
  first time, a table whose schema changed, or one that was dropped and created again.
* ``drop``: the table left the lake; its state is removed.

The committed batches are the watermarks: a table's watermark is the to_version of its latest committed
batch, and it advances only when every state update of the batch has committed.

A stored plan can become unreadable before it commits: its table deleted or replaced, or the versions it
names vacuumed away. Resuming such a plan would fail forever, so the planner abandons it instead and plans
a new run in which every table of the abandoned one gets a ``full`` (or ``drop``) batch: some components
may already have applied the abandoned batches, and only a batch that replaces a table's state is right
whatever they did.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection, Mapping
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import unquote

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
from deltalake.exceptions import TableNotFoundError

from lakemeta.catalog import Catalog, Txn
from lakemeta.catalog.predicates import is_in
from lakemeta.catalog.store import read_small
from lakemeta.lake.snapshots import data_files, snapshot_size
from lakemeta.lake.tables import discover_tables, table_path
from lakemeta.storage import Location

log = logging.getLogger(__name__)

PLAN_APP = "lakemeta.plan"
# Tables whose Delta logs planning reads at once.
LOG_READERS = 16


class BatchUnreadableError(RuntimeError):
    """A planned batch's rows are gone (table deleted or replaced, versions vacuumed) after part of its
    run was applied: the run must be abandoned and its tables planned again."""


@dataclass(frozen=True)
class Batch:
    table_name: str
    kind: str  # "incremental" | "full" | "drop"
    source: str  # "cdf" | "diff" | "snapshot" | "dropped"
    from_version: int | None
    to_version: int | None
    table_id: str | None
    # Of the snapshot at to_version, from the log's file statistics (None in plans stored without them).
    snapshot_rows: int | None = None
    snapshot_bytes: int | None = None

    @property
    def replaces_state(self) -> bool:
        """Whether the table's state is replaced (full, drop) rather than added to (incremental)."""
        return self.kind != "incremental"


@dataclass(frozen=True)
class Plan:
    run_id: int
    batches: tuple[Batch, ...]

    @property
    def tables(self) -> list[str]:
        return [b.table_name for b in self.batches]

    @property
    def replaced_tables(self) -> list[str]:
        return [b.table_name for b in self.batches if b.replaces_state]

    def without(self, tables: AbstractSet[str]) -> Plan:
        """The plan less the batches of ``tables`` (those a run could not read: they stay pending)."""
        return Plan(self.run_id, tuple(b for b in self.batches if b.table_name not in tables))


@dataclass(frozen=True)
class BatchSize:
    table_name: str
    rows_inserted: int
    rows_deleted: int


@dataclass(frozen=True)
class Watermark:
    version: int
    table_id: str | None


def running_plan(catalog_root: Location) -> Plan | None:
    """The plan of the run in progress (planned, not yet committed), if there is one; read without a JVM."""
    runs = read_small(catalog_root, "runs")
    running = pc.filter(runs["run_id"], pc.equal(runs["status"], "running"))
    return _stored_plan(catalog_root, pc.min(running).as_py()) if len(running) else None


def open_plan(catalog: Catalog, lake: Location) -> Plan | None:
    """The plan of the run in progress: the unfinished one when a run failed part-way, else a new one;
    None, and no run opened, when no table changed. Planned under the catalog's lock: two runs started
    at once plan one run, which both then continue. Reads Delta logs only: no Spark."""
    with catalog.lock("planning a run"):
        return _open_plan(catalog, lake)


def _open_plan(catalog: Catalog, lake: Location) -> Plan | None:
    plan = running_plan(catalog.root)
    replanned: set[str] = set()
    if plan is not None:
        unreadable = {b.table_name: reason for b in plan.batches if (reason := unreadable_reason(lake, b))}
        if not unreadable:
            log.info("resuming run %d: %d table batches", plan.run_id, len(plan.batches))
            return plan
        for name, reason in sorted(unreadable.items()):
            log.warning("run %d cannot be resumed: %s: %s", plan.run_id, name, reason)
        abandon_open_runs(catalog)
        replanned = {b.table_name for b in plan.batches}
        log.warning(
            "run %d abandoned; its %d tables are planned again from their current snapshots",
            plan.run_id,
            len(replanned),
        )
    batches = plan_batches(lake, watermarks(catalog), replanned)
    if not batches:
        log.info("no table changed since the last run: no run opened")
        return None
    runs = catalog.read_small("runs")
    run_id = (pc.max(runs["run_id"]).as_py() or 0) + 1
    columns = {name: [getattr(b, name) for b in batches] for name in _BATCH_FIELDS}
    planned = pa.table(
        {
            "run_id": [run_id] * len(batches),
            **columns,
            "rows_inserted": [None] * len(batches),
            "rows_deleted": [None] * len(batches),
            "committed": [False] * len(batches),
            "snapshot_rows": [b.snapshot_rows for b in batches],
            "snapshot_bytes": [b.snapshot_bytes for b in batches],
            "error": [None] * len(batches),
        }
    )
    # a file per run, not compacted on append: a discovery after a few changed tables reads the later
    # runs' files alone, by their statistics, not the first run's batch of every table (committed_batches)
    catalog.append_small("state/batches", planned, Txn(PLAN_APP, run_id), compact=False)
    started = pa.table(
        {"run_id": [run_id], "started_at": [datetime.now(UTC)], "finished_at": [None], "status": ["running"]}
    )
    started = started.append_column("tables_changed", pa.array([len(batches)], pa.int32()))
    started = started.append_column("rows_inserted", pa.nulls(1, pa.int64()))
    started = started.append_column("rows_deleted", pa.nulls(1, pa.int64()))
    catalog.append_small("runs", started, Txn(PLAN_APP, run_id))
    # The stored plan is authoritative: a crash between the two appends above, and a retry that
    # planned again, must still process the versions the first attempt recorded.
    plan = _stored_plan(catalog.root, run_id)
    kinds = {kind: sum(b.kind == kind for b in plan.batches) for kind in ("incremental", "full", "drop")}
    log.info("run %d planned: %d table batches %s", run_id, len(plan.batches), kinds)
    return plan


_BATCH_FIELDS = ("table_name", "kind", "source", "from_version", "to_version", "table_id")
_SIZE_FIELDS = ("snapshot_rows", "snapshot_bytes")


def _stored_plan(catalog_root: Location, run_id: int) -> Plan:
    stored = read_small(catalog_root, "state/batches")
    rows = stored.filter(pc.equal(stored["run_id"], run_id)).sort_by("table_name").to_pylist()
    fields = _BATCH_FIELDS + tuple(name for name in _SIZE_FIELDS if name in stored.column_names)
    return Plan(run_id, tuple(Batch(**{name: row[name] for name in fields}) for row in rows))


def watermarks(catalog: Catalog) -> dict[str, Watermark]:
    """Per table, the version its state reflects (tables whose last batch dropped them are absent)."""
    return {
        name: Watermark(row["to_version"], row["table_id"])
        for name, row in _last_committed(catalog).items()
        if row["kind"] != "drop"
    }


def _last_committed(catalog: Catalog) -> dict[str, dict]:
    """Per table, its last committed batch (a row of ``state/batches``)."""
    stored = catalog.read_small("state/batches")
    committed = stored.filter(stored["committed"]).sort_by([("run_id", "ascending")]).to_pylist()
    return {row["table_name"]: row for row in committed}  # later runs overwrite earlier ones


def committed_bytes(catalog: Catalog, tables: Collection[str]) -> list[int | None]:
    """The bytes of each of the snapshots of ``tables`` that the state reflects, from the log's file
    statistics recorded with their last committed batches; None where none is recorded."""
    latest = _last_committed(catalog)
    return [latest.get(name, {}).get("snapshot_bytes") for name in tables]


def plan_batches(
    lake: Location, marks: dict[str, Watermark], replanned: AbstractSet[str] = frozenset()
) -> list[Batch]:
    """Compare each table's log with its watermark; read only Delta logs, never data. Tables in
    ``replanned`` (those of an abandoned run) get a full batch, or a drop when they left the lake."""
    names = list(discover_tables(lake))

    def batch_of(name: str) -> tuple[bool, Batch | None]:
        """Whether table ``name`` is present, and its batch (None: unchanged since its watermark)."""
        path = table_path(lake, name)
        try:
            table = path.delta_table()
        except TableNotFoundError:
            # A _delta_log folder without a commit: a table being created, or the folders a deleted table
            # left behind (S3-compatible stores over a file system may list emptied folders): no table.
            return False, None
        version, table_id = table.version(), table.metadata().id
        mark = marks.get(name)
        if mark is not None and mark.table_id == table_id and version == mark.version:
            return True, None
        size = snapshot_size(table)
        if name in replanned or mark is None or mark.table_id != table_id or version < mark.version:
            return True, Batch(name, "full", "snapshot", None, version, table_id, *size)
        source = incremental_source(path, mark.version, version)
        if source is None:
            return True, Batch(name, "full", "snapshot", None, version, table_id, *size)
        return True, Batch(name, "incremental", source, mark.version, version, table_id, *size)

    # Every table's log is read, most of them to find nothing changed: side by side, as the reads wait on
    # storage (a request or more each on an object store; delta-rs releases the GIL while it waits).
    with ThreadPoolExecutor(max_workers=LOG_READERS) as pool:
        found = list(pool.map(batch_of, names))
    present = [name for name, (is_present, _) in zip(names, found, strict=True) if is_present]
    batches = [batch for _, batch in found if batch is not None]
    for name in sorted((set(marks) | replanned) - set(present)):
        mark = marks.get(name)
        batches.append(Batch(name, "drop", "dropped", mark and mark.version, None, mark and mark.table_id))
    return batches


def unreadable_reason(lake: Location, batch: Batch) -> str | None:
    """Why the batch's rows can no longer be read, or None when they can (reads only Delta logs)."""
    if batch.kind == "drop":
        return None
    path = table_path(lake, batch.table_name)
    if not path.is_delta_table():
        return "the table is gone from the lake"
    try:
        after = path.delta_table(batch.to_version)
    except Exception as error:  # delta-rs raises several types for a version it cannot load
        return f"version {batch.to_version} is no longer in the log ({error})"
    if after.metadata().id != batch.table_id:
        return "the table was dropped and created again"
    present = path.files()  # one listing of the table's folder serves every check below
    if not _files_present(after, present):
        return f"data files of version {batch.to_version} were removed (VACUUM)"
    if batch.kind == "incremental":
        if batch.source == "diff" and _readable_snapshot(path, batch.from_version, present) is None:
            return f"data files of version {batch.from_version} were removed (VACUUM)"
        if batch.source == "cdf":
            try:  # the feed needs the older version's schema from the log, not its data files
                before = path.delta_table(batch.from_version)
            except Exception:  # delta-rs raises several types for a version it cannot load
                return f"version {batch.from_version} is no longer in the log"
            if not _change_files_present(path, before, batch.to_version, present):
                return f"the change feed of versions {batch.from_version + 1}-{batch.to_version} was removed"
    return None


def _readable_snapshot(path: Location, version: int, present: set[str]) -> deltalake.DeltaTable | None:
    """The table at ``version`` when it can still be read (in the log, its files among ``present``, the
    table folder's files), else None."""
    try:
        table = path.delta_table(version)
    except Exception:  # delta-rs raises several types for a version it cannot load
        return None
    return table if _files_present(table, present) else None


def _files_present(table: deltalake.DeltaTable, present: set[str]) -> bool:
    """Whether the data files the snapshot lists are among ``present``, the table folder's files from one
    listing, not a request per file (the log holds their paths URI-encoded)."""
    return {unquote(file) for file in data_files(table)} <= present


def incremental_source(path: Location, from_version: int, to_version: int) -> str | None:
    """``cdf`` when the change feed can serve (from_version, to_version], ``diff`` when only a snapshot
    diff can, ``None`` when neither can (the batch must then be a full one): the schema changed in
    between, the older snapshot's files were vacuumed, or the rows hold maps or VARIANT values without a
    change feed."""
    present = path.files()  # one listing of the table's folder serves both checks
    before = _readable_snapshot(path, from_version, present)
    if before is None:
        return None
    schema = before.schema().to_json()
    if path.delta_table(to_version).schema().to_json() != schema:
        return None
    if before.metadata().configuration.get("delta.enableChangeDataFeed") == "true" and _change_files_present(
        path, before, to_version, present
    ):
        return "cdf"
    # The diff is a multiset difference of rows, which Spark refuses over maps and VARIANT values.
    return "diff" if _set_comparable(json.loads(schema)) else None


def _set_comparable(data_type: dict | str) -> bool:
    """Whether values of a Delta schema type (its JSON form) can be compared as set elements: anything
    but a map or a VARIANT, at any depth."""
    if isinstance(data_type, str):
        return data_type != "variant"
    if data_type["type"] == "struct":
        return all(_set_comparable(field["type"]) for field in data_type["fields"])
    if data_type["type"] == "array":
        return _set_comparable(data_type["elementType"])
    return data_type["type"] != "map"


def _change_files_present(
    path: Location, before: deltalake.DeltaTable, to_version: int, present: set[str]
) -> bool:
    """Whether every commit in the range is in the log, keeps the feed on and the schema as it was, and
    its files still exist (VACUUM removes the files of old versions, and with them the feed). A schema
    changed and changed back inside the range leaves the feed with rows of two shapes; the diff of the
    two snapshots, of one shape, serves instead."""
    schema = json.loads(before.schema().to_json())
    for version in range(before.version() + 1, to_version + 1):
        commit = f"_delta_log/{version:020d}.json"
        if commit not in present:
            return False
        text = (path / commit).read_text()
        actions = [json.loads(line) for line in text.splitlines() if line]
        for action in actions:
            metadata = action.get("metaData")
            if metadata and metadata.get("configuration", {}).get("delta.enableChangeDataFeed") != "true":
                return False
            if metadata and json.loads(metadata["schemaString"]) != schema:
                return False
        change_files = [a["cdc"]["path"] for a in actions if "cdc" in a]
        if not change_files:
            change_files = [a[k]["path"] for a in actions for k in ("add", "remove") if k in a]
        if not {unquote(file) for file in change_files} <= present:
            return False
    return True


def record_batch_sizes(catalog: Catalog, run_id: int, sizes: list[BatchSize]) -> None:
    """Store each batch's inserted / deleted row counts, keeping counts an earlier attempt stored."""
    if not sizes:
        return
    rows = pa.table(
        {
            "run_id": pa.array([run_id] * len(sizes), pa.int64()),
            "table_name": pa.array([size.table_name for size in sizes], pa.string()),
            "rows_inserted": pa.array([size.rows_inserted for size in sizes], pa.int64()),
            "rows_deleted": pa.array([size.rows_deleted for size in sizes], pa.int64()),
        }
    )
    catalog.update_rows_small("state/batches", rows, ["run_id", "table_name"], "t.rows_inserted IS NULL")


def commit_plan(catalog: Catalog, plan: Plan, failed: Mapping[str, str]) -> None:
    """Advance the watermarks of the plan's tables and close its run (idempotent). The batches of the
    ``failed`` tables (table -> why it could not be read) stay uncommitted, with the error: those tables
    keep their watermarks and the next run plans them again."""
    run = f"run_id = {int(plan.run_id)}"
    if failed:
        errors = pa.table(
            {
                "run_id": pa.array([plan.run_id] * len(failed), pa.int64()),
                "table_name": pa.array(sorted(failed), pa.string()),
                "error": pa.array([failed[name] for name in sorted(failed)], pa.string()),
            }
        )
        catalog.update_rows_small("state/batches", errors, ["run_id", "table_name"], "NOT t.committed")
    readable = f" AND NOT ({is_in('table_name', sorted(failed))})" if failed else ""
    catalog.update_small("state/batches", f"{run} AND NOT committed{readable}", {"committed": True})
    stored = catalog.read_small("state/batches")
    batches = stored.filter(pc.equal(stored["run_id"], plan.run_id))
    inserted = pc.sum(batches["rows_inserted"]).as_py() or 0
    deleted = pc.sum(batches["rows_deleted"]).as_py() or 0
    catalog.update_small(
        "runs",
        f"{run} AND status = 'running'",
        {
            "status": "succeeded",
            "finished_at": datetime.now(UTC),
            "tables_changed": len(batches),
            "rows_inserted": inserted,
            "rows_deleted": deleted,
        },
    )
    log.info(
        "run %d committed: %d tables, %d rows inserted, %d deleted; %d tables not read, left pending",
        plan.run_id,
        len(batches) - len(failed),
        inserted,
        deleted,
        len(failed),
    )


def abandon_open_runs(catalog: Catalog) -> None:
    """Close an unfinished run without committing it (before a rebuild drops the state it began)."""
    catalog.update_small(
        "runs", "status = 'running'", {"status": "abandoned", "finished_at": datetime.now(UTC)}
    )
