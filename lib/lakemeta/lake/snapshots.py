"""Reading a lake table's rows at a version: the one reader every module uses.

:func:`read_table` and :func:`read_columns` read Arrow data with delta-rs on the calling process: in the
executor tasks that take a table whole (the run's scan of its batches, Many's signatures, key checks, FK
candidates) and on the driver where a table is small by construction (a joinable search's query). No JVM
is involved, so they run inside ``mapInArrow`` tasks.
"""

from __future__ import annotations

import deltalake
import pyarrow as pa


def read_table(path: str, version: int | None = None, columns: list[str] | None = None) -> pa.Table:
    """The rows of the Delta table at ``path`` at ``version`` (the newest when None), only ``columns``
    when given (delta-rs)."""
    return deltalake.DeltaTable(path, version=version).to_pyarrow_table(columns=columns)


def read_columns(path: str, version: int | None, columns: list[str]) -> list[pa.Array]:
    """A table's columns at a version, each as one array of its own type (delta-rs)."""
    table = read_table(path, version, columns)
    return [table.column(column).combine_chunks() for column in columns]


def data_files(table: deltalake.DeltaTable) -> list[str]:
    """The snapshot's data files, relative to the table and URI-encoded, as its log lists them."""
    return pa.table(table.get_add_actions(flatten=True)).column("path").to_pylist()
