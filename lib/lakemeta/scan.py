"""A run's one scan: every changed table read once, every state component's partial rows from that read.

Deequ shares one scan of a table among all its analyzers; here the run's batches are read once for all
state components. The driver holds only the plan's descriptors (table, versions, the snapshot's rows from
the log): they are packed into tasks by rows (``scan.max_task_rows`` per task, many small tables in one
task, no Spark plan or job per table; a large table built from its snapshot is split into groups of its
data files, each a descriptor of its own), and each task reads its tables with delta-rs
(``lakemeta.lake.table_changes``), feeds each table's signed rows, slice by slice, to every component's
:class:`~lakemeta.component.TablePartial`, and emits their partial rows. One Spark job writes them all to
the run's staging folder (``CATALOG/_staging/run-<id>/``, Parquet, a partition per component); each
component then computes its delta from its partition and commits it in its own idempotent Delta commit.

One bad table does not stop the lake: a table whose batch cannot be read (or whose partial rows cannot be
computed) is reported with the error, its partial rows are left out for every component, and its batch
stays pending (not committed; the next run plans it again from its watermark) while the other tables'
batches commit.

Exactly once: the staged rows are a function of the plan, so a scan killed before it recorded its result
(``_scan.json``, written last) is simply run again. Once recorded, a scan is never redone for its run, so
every component of a run sees the same rows and the same failed tables. A scan covers the components that
still needed the plan when it ran; a component updated alone (the step ``update_state``) without a scan
covering it gets a scan of its own, which must read the tables the first one read. The staging folder
goes when the run commits.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pyspark.sql.functions as F
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import LongType, StringType, StructField, StructType

from lakemeta.catalog import Catalog
from lakemeta.config import ScanConfig
from lakemeta.crash_points import crash_point
from lakemeta.hashing import ColumnHashes
from lakemeta.lake.batches import Batch, BatchUnreadableError, Plan, unreadable_reason
from lakemeta.lake.snapshots import file_groups
from lakemeta.lake.table_changes import BatchRead, TableChange, TablePartial
from lakemeta.lake.tables import table_path
from lakemeta.spark.placement import MapBody, balanced_tasks, map_on_driver, map_tasks, reads_tables_on_driver
from lakemeta.spark.portable import describe_jobs
from lakemeta.storage import Location

log = logging.getLogger(__name__)

STAGING = "_staging"
_MARKER = "_scan.json"
_COMPONENT = "_component"
# One row per table a scan read: its rows read, or the error that stopped it.
_READ = "_read"
_READ_SCHEMA = StructType(
    [
        StructField("table_name", StringType()),
        StructField("rows_read", LongType()),
        StructField("error", StringType()),
    ]
)
_DESCRIPTOR_SCHEMA = from_arrow_schema(
    pa.schema(
        [
            ("table_name", pa.string()),
            ("path", pa.string()),
            ("kind", pa.string()),
            ("source", pa.string()),
            ("from_version", pa.int64()),
            ("to_version", pa.int64()),
            ("files", pa.list_(pa.string())),
        ]
    )
)


class ScannedComponent(Protocol):
    """What the scan needs of a state component (``lakemeta.component.StateComponent``)."""

    name: str
    partial_schema: StructType

    def partial(self) -> Callable[[TableChange], TablePartial]: ...


@dataclass(frozen=True)
class ScanResult:
    """What a recorded scan staged: for which components, and the tables it could not read (with why)."""

    components: tuple[str, ...]
    failed: dict[str, str]


def _staging_schema(components: Sequence[ScannedComponent]) -> StructType:
    fields = [StructField(_COMPONENT, StringType()), StructField(_READ, _READ_SCHEMA)]
    fields += [StructField(component.name, component.partial_schema) for component in components]
    return StructType(fields)


def _staged_batch(schema: pa.Schema, column: str, rows: pa.Table) -> pa.RecordBatch:
    """``rows`` (of the column's struct type) as staged rows: the component's name, its struct column
    filled, every other one null."""
    index = schema.get_field_index(column)
    struct_type = schema.field(index).type
    rows = rows.combine_chunks()
    n = rows.num_rows
    arrays = []
    for i, field in enumerate(schema):
        if i == 0:
            arrays.append(pa.array(np.full(n, column, dtype=object), pa.string()))
        elif i == index:
            children = [
                rows.column(j).chunk(0) if n else pa.array([], f.type) for j, f in enumerate(struct_type)
            ]
            arrays.append(pa.StructArray.from_arrays(children, fields=list(struct_type)))
        else:
            arrays.append(pa.nulls(n, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


class _Output:
    """A task's partial rows, gathered over its tables and handed to Spark in batches of about
    ``_FLUSH_ROWS`` rows: thousands of small tables must not make thousands of tiny Arrow batches."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.pending: dict[str, list[pa.Table]] = {}
        self.rows = 0

    def add(self, column: str, rows: pa.Table | None) -> Iterator[pa.RecordBatch]:
        if rows is not None and rows.num_rows:
            fields = list(self.schema.field(column).type)
            self.pending.setdefault(column, []).append(rows.cast(pa.schema(fields)))
            self.rows += rows.num_rows
            if self.rows >= _FLUSH_ROWS:
                yield from self.flush()

    def flush(self) -> Iterator[pa.RecordBatch]:
        for column, tables in self.pending.items():
            staged = _staged_batch(self.schema, column, pa.concat_tables(tables))
            for start in range(0, staged.num_rows, _MAX_BATCH_ROWS):  # slices share the buffers
                yield staged.slice(start, _MAX_BATCH_ROWS)
        self.pending, self.rows = {}, 0


_FLUSH_ROWS = 1 << 16
_MAX_BATCH_ROWS = 1 << 20  # what the JVM side holds of a batch: bounded, whatever a table's partial rows


def _scan_tasks(
    partials: Sequence[tuple[str, Callable[[TableChange], TablePartial]]],
    schema: pa.Schema,
    max_rows: int,
    descriptors: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: read each descriptor's batch once, feed every component, emit their partial rows.
    A table that fails gets a ``_read`` row naming the error; rows it emitted before failing are left out
    when the components read their partitions."""
    output = _Output(schema)
    for record_batch in descriptors:
        for descriptor in record_batch.to_pylist():
            change = TableChange(BatchRead(**{**descriptor, "files": tuple(descriptor["files"])}), max_rows)
            rows_read, error = 0, None
            try:
                components = [(name, factory(change)) for name, factory in partials]
                for rows in change.signed_slices():
                    rows_read += rows.num_rows
                    hashes = ColumnHashes(rows)  # each cell hashed once for every component
                    for name, partial in components:
                        yield from output.add(name, partial.add(rows, hashes))
                for name, partial in components:
                    yield from output.add(name, partial.finish())
            # Any failure of one table is reported and isolated (module docstring).
            except Exception as failure:
                batch = change.batch
                error = f"{change.table_name} (version {batch.to_version}, {batch.path}): "
                error += f"{type(failure).__name__}: {failure}"
            read = pa.table(
                {
                    "table_name": [change.table_name],
                    "rows_read": [rows_read],
                    "error": pa.array([error], pa.string()),
                }
            )
            yield from output.add(_READ, read)
    yield from output.flush()


class BatchScan:
    """The scan of one run's plan and its staged rows (module docstring)."""

    def __init__(self, catalog: Catalog, lake: Location, plan: Plan, config: ScanConfig) -> None:
        self.catalog = catalog
        self.lake = lake
        self.plan = plan
        self.max_task_rows = config.max_task_rows
        self.driver_state_bytes = config.driver_state_bytes
        self.folder = catalog.root / STAGING / f"run-{plan.run_id}"

    def results(self) -> list[tuple[Location, ScanResult]]:
        """The recorded scans of the run, oldest first."""
        scans = [name for name, is_dir in self.folder.children() if is_dir and name.startswith("scan-")]
        found = []
        for name in sorted(scans, key=lambda scan: int(scan.split("-")[1])):
            folder = self.folder / name
            if (_MARKER, False) in folder.children():
                recorded = json.loads((folder / _MARKER).read_text())
                found.append((folder, ScanResult(tuple(recorded["components"]), recorded["failed"])))
        return found

    def failed(self) -> dict[str, str]:
        """The tables the run's scans could not read, with the error."""
        return {name: error for _, result in self.results() for name, error in result.failed.items()}

    def covered(self) -> set[str]:
        return {name for _, result in self.results() for name in result.components}

    def run(self, components: Sequence[ScannedComponent]) -> ScanResult:
        """Read the plan's batches once and stage every component's partial rows; record the result."""
        spark = self.catalog.spark
        earlier_failures = self.failed()
        batches = [b for b in self.plan.batches if b.kind != "drop" and b.table_name not in earlier_failures]
        schema = _staging_schema(components)
        # A scan killed before its marker left a folder without one: it is written again, whole.
        folder = self.folder / f"scan-{len(self.results())}"
        names = [component.name for component in components]
        describe_jobs(spark, f"run {self.plan.run_id}: scan of {len(batches)} tables for {', '.join(names)}")
        descriptors = [part for batch in batches for part in self._parts(batch)]
        read: list[dict] = []
        where = "with nothing to read"
        if descriptors:
            arrow_schema = to_arrow_schema(schema, timezone="UTC")
            tasks = functools.partial(
                _scan_tasks, [(c.name, c.partial()) for c in components], arrow_schema, self.max_task_rows
            )
            if self.reads_on_driver(batches):
                where = "on the driver"
                self._stage_on_driver(folder, [row for _, row in descriptors], tasks)
            else:
                placed = balanced_tasks(spark, descriptors, self.max_task_rows)
                where = f"in {len(placed)} Spark tasks"
                staged = map_tasks(spark, placed, _DESCRIPTOR_SCHEMA, tasks, schema)
                staged.write.mode("overwrite").partitionBy(_COMPONENT).parquet(str(folder))
            crash_point(f"after write {STAGING} rows")  # no marker yet: a retry writes the folder again
            # Small by construction: a row per descriptor, which the driver holds already.
            read = _read_partition(folder / f"{_COMPONENT}={_READ}", _READ, _READ_SCHEMA).to_pylist()
        # A table read in parts has a row per part; one error is enough to leave the whole table out.
        failed = {row["table_name"]: row["error"] for row in read if row["error"] is not None}
        new_failures = sorted(set(failed) - set(earlier_failures))
        if new_failures and self.covered():
            # Components of this run already applied these tables' batches: leaving them out now would
            # make the components disagree. The next plan abandons the run (``lake.batches``).
            planned = {b.table_name: b for b in batches}
            reasons = [
                f"{name}: {unreadable_reason(self.lake, planned[name]) or failed[name]}"
                for name in new_failures
            ]
            covered = ", ".join(sorted(self.covered()))
            raise BatchUnreadableError(
                f"run {self.plan.run_id}: {'; '.join(reasons)}. An earlier scan of this run read these "
                f"tables for {covered}. Run the pipeline again (`lakemeta run`, or a new "
                "lakemeta_incremental run): it abandons this run and plans its tables again"
            )
        result = ScanResult(tuple(names), failed)
        (folder / _MARKER).write_text(json.dumps({"components": names, "failed": failed}))
        crash_point(f"after write {STAGING} marker")
        for message in failed.values():
            log.error("run %d: table not read, its batch stays pending: %s", self.plan.run_id, message)
        log.info(
            "run %d: scan read %d tables (%d rows) %s for %d components (%s); %d failed",
            self.plan.run_id,
            len({row["table_name"] for row in read}) - len(failed),
            sum(row["rows_read"] for row in read if row["error"] is None),
            where,
            len(names),
            ", ".join(names),
            len(failed),
        )
        return result

    def reads_on_driver(self, batches: Sequence[Batch]) -> bool:
        """Whether the batches are few and small enough to read on the driver (``reads_tables_on_driver``;
        a snapshot's size bounds what its batch reads)."""
        sizes = [b.snapshot_bytes for b in batches if b.kind != "drop"]
        return reads_tables_on_driver(sizes, self.driver_state_bytes)

    def _stage_on_driver(self, folder: Location, descriptors: list[tuple], tasks: MapBody) -> None:
        """The scan's task body run here over every descriptor, its rows staged as Spark's ``partitionBy``
        stages them: a Parquet file per component's partition (the component's column alone, which is all
        that its reader takes). Streamed: a component's rows are written as the body emits them."""
        folder.remove_tree()  # what a killed attempt left: the folder is written again, whole
        filesystem = folder.filesystem
        writers: dict[str, pq.ParquetWriter] = {}
        try:
            for batch in map_on_driver(descriptors, _DESCRIPTOR_SCHEMA, tasks):
                if not batch.num_rows:
                    continue
                column = batch.column(0)[0].as_py()  # each of the body's batches holds one component's rows
                rows = pa.Table.from_batches([batch]).select([column])
                if column not in writers:
                    partition = folder / f"{_COMPONENT}={column}"
                    filesystem.create_dir(partition.fs_path, recursive=True)
                    target = (partition / "part-00000.parquet").fs_path
                    writers[column] = pq.ParquetWriter(target, rows.schema, filesystem=filesystem)
                writers[column].write_table(rows)
        finally:
            for writer in writers.values():
                writer.close()

    def _parts(self, batch: Batch) -> list[tuple[int, tuple]]:
        """The batch's descriptors, weighted by rows: one for the batch, or for a full batch of a table
        over ``max_task_rows`` rows one per group of its files (``snapshots.file_groups``)."""
        path = str(table_path(self.lake, batch.table_name))
        descriptor = (batch.table_name, path, batch.kind, batch.source, batch.from_version, batch.to_version)
        rows = batch.snapshot_rows or 0
        if batch.kind == "full" and rows > self.max_task_rows:
            groups = file_groups(path, batch.to_version, self.max_task_rows)
            if groups is not None and len(groups) > 1:
                return [(max(count, 1), (*descriptor, files)) for files, count in groups]
        return [(max(rows, 1), (*descriptor, []))]

    def _partition(self, folder: Location, column: str, schema: StructType) -> DataFrame:
        spark = self.catalog.spark
        partition = folder / f"{_COMPONENT}={column}"
        if not partition.exists():
            return spark.createDataFrame([], schema)
        return (
            spark.read.schema(StructType([StructField(column, schema)]))
            .parquet(str(partition))
            .select(f"{column}.*")
        )

    def _staged(self, component: ScannedComponent) -> Location:
        """The partition of the component's staged partial rows, of the scan that covers it."""
        for folder, result in self.results():
            if component.name in result.components:
                return folder / f"{_COMPONENT}={component.name}"
        raise RuntimeError(f"run {self.plan.run_id}: no scan has staged the rows of {component.name}")

    def staged_bytes(self, component: ScannedComponent) -> int:
        """The bytes the component's staged partial rows take in memory: their Parquet row groups'
        uncompressed size, from the files' footers (the files themselves are compressed several times
        over, and a merge on the driver holds the rows and their groupings at once)."""
        staged = self._staged(component)
        if not staged.exists():
            return 0
        files = pads.dataset(staged.fs_path, filesystem=staged.filesystem, format="parquet")
        return sum(
            fragment.metadata.row_group(i).total_byte_size
            for fragment in files.get_fragments()
            for i in range(fragment.metadata.num_row_groups)
        )

    def partials(self, component: ScannedComponent) -> DataFrame:
        """The component's staged partial rows, less those of tables the run could not read."""
        staged = self._staged(component)
        rows = self._partition(staged.parent, component.name, component.partial_schema)
        failed = sorted(self.failed())
        return rows.where(~F.col("table_name").isin(failed)) if failed else rows

    def partials_on_driver(self, component: ScannedComponent) -> pa.Table:
        """``partials`` read on the driver with pyarrow (a small batch's: ``StateComponent.update``)."""
        rows = _read_partition(self._staged(component), component.name, component.partial_schema)
        failed = pa.array(sorted(self.failed()), pa.string())
        return rows.filter(pc.invert(pc.is_in(rows["table_name"], failed)))


def _read_partition(partition: Location, column: str, schema: StructType) -> pa.Table:
    """The staged rows of one partition (``column``'s struct, flattened to ``schema``), read with pyarrow."""
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    if not partition.exists():
        return arrow_schema.empty_table()
    # Spark's _SUCCESS and .crc files are left out by the dataset's default ignored prefixes
    files = pads.dataset(partition.fs_path, filesystem=partition.filesystem, format="parquet")
    return pa.Table.from_struct_array(files.to_table(columns=[column]).column(column)).cast(arrow_schema)


def remove_staging(catalog: Catalog, keep_run: int | None = None) -> None:
    """Remove the staged rows of every run but ``keep_run`` (committed or abandoned runs')."""
    staging = catalog.root / STAGING
    for name, is_dir in staging.children():
        if is_dir and name.startswith("run-") and (keep_run is None or name != f"run-{keep_run}"):
            (staging / name).remove_tree()
