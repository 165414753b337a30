"""One table's batch read inside an executor task (delta-rs, no JVM): what every state component's delta
is computed from, read once per run.

:class:`TableChange` gives a batch's rows signed (``_lm_sign``: +1 inserted, -1 deleted), in slices of a
bounded number of rows and cells, and the table's snapshots before and after the batch, each read at most
once and only when asked for:

* ``full`` batch: the snapshot at ``to_version``, every row +1 (the table's state is replaced). A large
  table's full batch comes in parts, each a group of its data files (``BatchRead.files``) read by a task
  of its own, streamed in slices; a part has no snapshots to give;
* ``incremental`` batch from the change data feed: Delta's feed over (from_version, to_version] (an update
  is its pre-image -1 and its post-image +1), streamed batch by batch;
* ``incremental`` batch from a diff: the multiset difference of the two snapshots
  (``lakemeta.lake.rows.multiset_difference``); for a table above the task's row budget, the rows of the
  data files the batch removed (-1) and added (+1) (``snapshots.changed_files``), streamed, so no task
  holds either snapshot whole. A file rewritten by a DELETE or an UPDATE then brings its unchanged rows
  once with each sign: every component's delta is a sum over signed rows, so they cancel there.

These are the rows ``lakemeta.lake.batches.changes`` gives through Spark for the same batch.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

import deltalake
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import StructType

from lakemeta.hashing import ColumnHashes
from lakemeta.lake.rows import multiset_difference
from lakemeta.lake.snapshots import (
    absolute_files,
    changed_files,
    files_dataset,
    files_hold_rows,
    snapshot_size,
)
from lakemeta.lake.tables import spark_schema
from lakemeta.storage import Location

SIGN = "_lm_sign"
_FEED_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
_INSERTED = ("insert", "update_postimage")
# Cells per slice: what a component derives per cell (a posting-list item each, some 100 bytes) must stay
# small for a wide table too, in the task and in the Arrow batches it hands to Spark (TPC-H lineitem's
# 16 columns: 65,536 rows a slice, not the task's million).
_SLICE_CELLS = 1 << 20


@dataclass(frozen=True)
class BatchRead:
    """What an executor needs to read one table's batch (a row of the scan's descriptor frame)."""

    table_name: str
    path: str
    kind: str  # "incremental" | "full"
    source: str  # "cdf" | "diff" | "snapshot"
    from_version: int | None
    to_version: int
    # For a part of a full batch: the data files it reads (absolute paths); empty for the whole batch.
    files: tuple[str, ...] = ()


class TableChange:
    """One table's batch as the state components see it (module docstring)."""

    def __init__(self, batch: BatchRead, max_rows: int) -> None:
        """``max_rows``: the task's row budget (``scan.max_task_rows``); a table above it is never held
        whole, and no slice is larger."""
        if batch.files and batch.kind != "full":
            raise ValueError(f"{batch.table_name}: only a full batch is read in parts")
        self.batch = batch
        self.table_name = batch.table_name
        self.max_rows = max_rows
        self._location = Location(batch.path)

    @functools.cached_property
    def slice_rows(self) -> int:
        """Rows per slice: at most ``max_rows``, and at most ``_SLICE_CELLS`` cells."""
        return max(1, min(self.max_rows, _SLICE_CELLS // max(1, len(self.schema.fields))))

    @property
    def replaces_state(self) -> bool:
        return self.batch.kind == "full"

    @functools.cached_property
    def _table(self) -> deltalake.DeltaTable:
        return self._location.delta_table(self.batch.to_version)

    @functools.cached_property
    def schema(self) -> StructType:
        """The table's columns at ``to_version``, as Spark types (read from the log)."""
        return spark_schema(self._table)

    @functools.cached_property
    def snapshot_rows(self) -> int:
        """Rows of the snapshot at ``to_version``, from the log's file statistics."""
        return snapshot_size(self._table)[0]

    @functools.cached_property
    def _before_table(self) -> deltalake.DeltaTable | None:
        if self.batch.kind == "full":
            return None
        return self._location.delta_table(self.batch.from_version)

    @functools.cached_property
    def before_rows(self) -> int | None:
        """Rows of the snapshot at ``from_version`` from the log (None for a full batch)."""
        return None if self._before_table is None else snapshot_size(self._before_table)[0]

    @functools.cached_property
    def after(self) -> pa.Table:
        """The snapshot at ``to_version`` (not for a part of a batch)."""
        if self.batch.files:
            raise ValueError(f"{self.table_name}: a part of a batch has no snapshot; it is read in slices")
        return self._location.delta_dataset(self._table).to_table()

    @functools.cached_property
    def before(self) -> pa.Table | None:
        """The snapshot at ``from_version``; None for a full batch."""
        if self._before_table is None:
            return None
        before = self._location.delta_dataset(self._before_table).to_table()
        return before.select(self.after.column_names)

    def snapshot_slices(self) -> Iterator[pa.Table]:
        """The snapshot at ``to_version`` in slices of at most ``slice_rows`` rows, streamed from its files
        where they hold its rows (``snapshots.files_hold_rows``), otherwise sliced from ``after``."""
        if not files_hold_rows(self._table):
            yield from (
                self.after.slice(start, self.slice_rows)
                for start in range(0, self.after.num_rows, self.slice_rows)
            )
            return
        files = absolute_files(self._table, self.batch.path)
        for rows in files_dataset(self._table, files).to_batches(batch_size=self.slice_rows):
            yield pa.Table.from_batches([rows])

    def signed_slices(self) -> Iterator[pa.Table]:
        """The batch's rows with ``_lm_sign``, at most ``slice_rows`` at a time; columns as in the schema."""
        for rows, sign in self._signed_parts():
            for start in range(0, rows.num_rows, self.slice_rows):
                part = rows.slice(start, self.slice_rows)
                signs = pa.array(np.full(part.num_rows, sign, dtype=np.int64)) if sign else None
                yield part if signs is None else part.append_column(SIGN, signs)

    def _signed_parts(self) -> Iterator[tuple[pa.Table, int]]:
        """Parts of the batch's rows with their sign; sign 0 for a part carrying its own ``_lm_sign``."""
        batch = self.batch
        if batch.files:
            # The files alone hold the rows (``snapshots.file_groups``).
            for rows in files_dataset(self._table, batch.files).to_batches(batch_size=self.slice_rows):
                yield pa.Table.from_batches([rows]), 1
        elif batch.kind == "full":
            yield self.after, 1
        elif batch.source == "cdf":
            reader = (
                Location(batch.path)
                .delta_table()
                .load_cdf(starting_version=batch.from_version + 1, ending_version=batch.to_version)
            )
            # The feed comes with view types (string_view); the snapshot's types are the table's schema.
            schema = pa.schema(self._table.schema().to_arrow())
            for part in pa.RecordBatchReader.from_stream(reader):
                feed = pa.Table.from_batches([part])
                change_type = feed["_change_type"].cast(pa.string())
                inserted = pc.is_in(change_type, pa.array(_INSERTED)).to_numpy(zero_copy_only=False)
                signs = np.where(inserted, 1, -1).astype(np.int64)
                yield feed.select(schema.names).cast(schema).append_column(SIGN, pa.array(signs)), 0
        else:
            changed = None
            if self.snapshot_rows > self.max_rows:
                changed = changed_files(batch.path, batch.from_version, batch.to_version)
            if changed is None:
                deleted, inserted = multiset_difference(self.before, self.after)
                yield deleted, -1
                yield inserted, 1
                return
            for files, sign in zip(changed, (-1, 1), strict=True):
                if files:  # removed files are read with the table's schema at to_version, as the rest
                    for rows in files_dataset(self._table, files).to_batches(batch_size=self.slice_rows):
                        yield pa.Table.from_batches([rows]), sign


class TablePartial(ABC):
    """One component's work on one table's change inside a scan task (Spark-free): the task feeds it the
    change's signed rows slice by slice, then asks for the component's partial rows of the table. A table
    built from its snapshot may come in parts (``BatchRead.files``), each with a TablePartial of its own:
    the component's delta adds the parts' rows up."""

    def __init__(self, change: TableChange) -> None:
        self.change = change

    def add(self, rows: pa.Table, hashes: ColumnHashes) -> pa.Table | None:
        """Take one slice of the change's signed rows (``lakemeta.lake.table_changes``), with its columns'
        value hashes shared by the components (``hashes[column]``, computed on first use); return partial
        rows to emit right away (a component whose partial rows grow with the table's rows), or None to
        emit only at :meth:`finish`. By default the slices are not needed (the snapshots are)."""
        return None

    @abstractmethod
    def finish(self) -> pa.Table | None:
        """The partial rows of the table (in the component's ``partial_schema``), or None for none."""
