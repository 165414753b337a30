"""Reading a lake table's rows at a version: the one reader every module uses.

:func:`read_table` and :func:`read_columns` read Arrow data with delta-rs on the calling process: in the
executor tasks that take a table whole (the run's scan of its batches, Many's signatures, key checks, FK
candidates) and on the driver where a table is small by construction (a joinable search's query). No JVM
is involved, so they run inside ``mapInArrow`` tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from urllib.parse import unquote

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as dataset

from lakemeta.storage import Location

_SNAPSHOTS_KEPT = 4096
"""Snapshots a process keeps open for one scope (``read_columns``)."""


@lru_cache(maxsize=_SNAPSHOTS_KEPT)
def _opened(scope: str, path: str, version: int) -> deltalake.DeltaTable:
    """A version of a Delta table opened once per process and scope (a version's files never change
    while the scope lasts)."""
    return Location(path).delta_table(version)


def snapshot(path: str, version: int | None, scope: str | None = None) -> deltalake.DeltaTable:
    """The Delta table at ``path`` at ``version`` (the newest when None): opened anew, or with a
    ``scope`` once per process for that scope (``read_columns``)."""
    if scope is None or version is None:
        return Location(path).delta_table(version)
    return _opened(scope, path, version)


def read_table(path: str, version: int | None = None, columns: list[str] | None = None) -> pa.Table:
    """The rows of the Delta table at ``path`` at ``version`` (the newest when None), only ``columns``
    when given (delta-rs)."""
    return Location(path).delta_dataset(Location(path).delta_table(version)).to_table(columns=columns)


def read_columns(
    path: str, version: int | None, columns: list[str], files: Sequence[str] = (), scope: str | None = None
) -> list[pa.Array]:
    """A table's columns at a version, each as one array of its own type (delta-rs); of only the rows of
    ``files`` when given (a group of ``file_groups``). With a ``scope`` (one FK step's tasks), the version
    is opened once per process for it: the step's tasks read the columns of the same few thousand small
    tables over and over in each Python worker, and opening one replays its log, often longer than reading
    its columns."""
    table = snapshot(path, version, scope)
    location = Location(path)
    data = files_dataset(table, files) if files else location.delta_dataset(table)
    read = data.to_table(columns=columns)
    return [read.column(column).combine_chunks() for column in columns]


def files_dataset(table: deltalake.DeltaTable, files: Sequence[str]) -> dataset.Dataset:
    """Some data files of a snapshot (their URIs, a group of ``file_groups``) as one dataset of the
    table's schema, which fills the columns files written before a column was added lack."""
    locations = [Location(file) for file in files]
    return dataset.dataset(
        [location.fs_path for location in locations],
        schema=pa.schema(table.schema().to_arrow()),
        format="parquet",
        filesystem=locations[0].filesystem if locations else None,
    )


def data_files(table: deltalake.DeltaTable) -> list[str]:
    """The snapshot's data files, relative to the table and URI-encoded, as its log lists them."""
    return pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist()


def snapshot_size(table: deltalake.DeltaTable) -> tuple[int, int]:
    """Rows and bytes of a snapshot's data files, from the log's file statistics (no data read); a file
    written without statistics counts its bytes only."""
    actions = pa.table(table.get_add_actions(flatten=True))
    if not len(actions):
        return 0, 0
    return int(pc.sum(actions["num_records"]).as_py() or 0), int(pc.sum(actions["size_bytes"]).as_py() or 0)


def files_hold_rows(table: deltalake.DeltaTable) -> bool:
    """Whether the snapshot's rows are exactly those of its data files read as they are: no deletion
    vectors, column mapping or partition columns (whose values live in the log, not the files)."""
    protocol = table.protocol()
    return not (
        set(protocol.reader_features or ()) & {"deletionVectors", "columnMapping"}
        or protocol.min_reader_version >= 2
        or table.metadata().partition_columns
    )


def absolute_files(table: deltalake.DeltaTable, path: str) -> list[str]:
    """The snapshot's data files as URIs (``data_files`` are relative and URI-encoded)."""
    return [f"{path.rstrip('/')}/{unquote(file)}" for file in data_files(table)]


def changed_files(path: str, before: int, after: int) -> tuple[list[str], list[str]] | None:
    """The data files (absolute paths) of the snapshot at ``before`` that the one at ``after`` no longer
    has, and those it has anew: the rows of the second less those of the first are the change between
    the versions, as a signed multiset (a file rewritten by a DELETE or UPDATE brings its unchanged rows
    once with each sign). None where the files alone do not hold the rows (``files_hold_rows``)."""
    tables = [Location(path).delta_table(version) for version in (before, after)]
    if not all(files_hold_rows(table) for table in tables):
        return None
    old, new = (set(absolute_files(table, path)) for table in tables)
    return sorted(old - new), sorted(new - old)


def file_groups(path: str, version: int, max_rows: int) -> list[tuple[list[str], int]] | None:
    """The snapshot's data files (absolute paths) in groups of at most ``max_rows`` rows by the log's file
    statistics (a single larger file is a group of its own), with each group's rows; None when the files
    alone do not hold the rows (``files_hold_rows``) or a file has no row count, and the table must be
    read whole."""
    table = Location(path).delta_table(version)
    if not files_hold_rows(table):
        return None
    actions = pa.table(table.get_add_actions(flatten=True))
    if actions["num_records"].null_count:
        return None
    groups: list[tuple[list[str], int]] = []
    files: list[str] = []
    rows = 0
    for file, count in zip(actions["path"].to_pylist(), actions["num_records"].to_pylist(), strict=True):
        if files and rows + count > max_rows:
            groups.append((files, rows))
            files, rows = [], 0
        files.append(f"{path.rstrip('/')}/{unquote(file)}")
        rows += count
    if files:
        groups.append((files, rows))
    return groups
