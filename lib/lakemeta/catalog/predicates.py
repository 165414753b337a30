"""Predicates over the catalog's rows by table name: delta-rs and Spark SQL conditions built from the
pipeline's own values (literals quoted), and an Arrow mask."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def is_in(column: str, values: Sequence[str]) -> str:
    """A delta-rs predicate: ``column`` is one of ``values`` (string literals, single quotes doubled);
    false when there are none."""
    if not values:
        return "false"
    listed = ", ".join("'{}'".format(value.replace("'", "''")) for value in values)
    return f"{column} IN ({listed})"


def sql_string(value: str) -> str:
    """A Spark SQL string literal of ``value`` (backslash escapes, Spark's default)."""
    return "'{}'".format(value.replace("\\", "\\\\").replace("'", "\\'"))


def is_in_sql(column: str, values: Sequence[str]) -> str:
    """A Spark SQL predicate: ``column`` is one of ``values``; false when there are none."""
    return f"{column} IN ({', '.join(map(sql_string, values))})" if values else "false"


def of_tables(table_names: pa.Array | pa.ChunkedArray, tables: Collection[str]) -> np.ndarray:
    """Which of ``table_names`` are one of ``tables``: a mask."""
    return pc.is_in(table_names, pa.array(sorted(tables), pa.string())).to_numpy(zero_copy_only=False)


def rows_of_tables(rows: pa.Table, tables: Collection[str]) -> pa.Table:
    """The rows of ``rows`` whose ``table_name`` is one of ``tables``."""
    return rows.filter(pa.array(of_tables(rows["table_name"], tables)))
