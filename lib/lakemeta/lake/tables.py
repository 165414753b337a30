"""The lake model: a lake is a root folder and every Delta table under it is a source table.

A table's name is its folder's path relative to the lake root (``tpch/lineitem``). Folders whose name
starts with ``_`` or ``.`` are not searched (``_quarantine`` and Spark's own hidden folders).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import deltalake
import pyspark.sql.functions as F
from pyspark.sql import Column
from pyspark.sql.types import DataType, StructType


def discover_tables(lake: Path) -> list[str]:
    """Names of the Delta tables under ``lake``, sorted."""
    names: list[str] = []
    for folder, subfolders, _files in os.walk(lake):
        if "_delta_log" in subfolders:
            names.append(Path(folder).relative_to(lake).as_posix())
            subfolders.clear()  # a table's own folders hold data files, never other tables
            continue
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(("_", ".")))
    return sorted(names)


def table_path(lake: Path, name: str) -> Path:
    """The folder of table ``name``; a name that would leave the lake root is refused."""
    root = lake.resolve()
    path = (root / name).resolve()
    if path == root or root not in path.parents:
        raise ValueError(f"table name {name!r} does not name a folder inside the lake {root}")
    return path


def latest_version(path: Path) -> int:
    """The newest committed version of the Delta table at ``path``, read from its log (no JVM)."""
    return deltalake.DeltaTable(str(path)).version()


def spark_schema(table: deltalake.DeltaTable) -> StructType:
    """A Delta table's schema as Spark types, read from its log (no JVM): both speak Delta's JSON schema."""
    return StructType.fromJson(json.loads(table.schema().to_json()))


def source_column(name: str) -> Column:
    """A reference to a source table's column by its exact name: names may hold dots, spaces and
    backticks, which an unquoted ``F.col`` would read as nesting or refuse."""
    return F.col("`" + name.replace("`", "``") + "`")


def is_plain_type_name(type_name: str) -> bool:
    """Whether a column of the type named ``type_name`` (``DataType.simpleString``, as the catalog records
    it) holds single values (numbers, strings, dates, binary) rather than nested or semi-structured ones
    (arrays, maps, structs, VARIANT): only plain values are sketched and indexed."""
    return not type_name.startswith(("array<", "map<", "struct<", "variant"))


def holds_plain_values(data_type: DataType) -> bool:
    """``is_plain_type_name`` for a Spark type."""
    return is_plain_type_name(data_type.simpleString())
