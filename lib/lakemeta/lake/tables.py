"""The lake model: a lake is a root folder or object prefix (``lakemeta.storage``) and every Delta table
under it (a folder holding ``_delta_log/``) is a source table.

A table's name is its folder's path relative to the lake root (``tpch/lineitem``). Folders whose name
starts with ``_`` or ``.`` are not searched (``_quarantine`` and Spark's own hidden folders).
"""

from __future__ import annotations

import json
import posixpath

import deltalake
import pyspark.sql.functions as F
from pyspark.sql import Column
from pyspark.sql.types import DataType, StructType

from lakemeta.storage import Location


def discover_tables(lake: Location) -> list[str]:
    """Names of the Delta tables under ``lake``, sorted (one listing per folder, never of data files)."""
    return sorted(lake.relative(table) for table in lake.walk_tables())


def check_lake(lake: Location, new_catalog: bool) -> None:
    """Refuse a lake that is not there (a missing folder or bucket, an unreachable endpoint, credentials
    refused: ``StorageError`` / ``FileNotFoundError`` naming the URI), and, for a catalog not yet created,
    one holding no Delta table, which is almost always a mistyped location."""
    if not lake.exists():
        raise FileNotFoundError(f"the lake {lake} does not exist (nothing is there)")
    if new_catalog and next(lake.walk_tables(), None) is None:
        raise FileNotFoundError(f"the lake {lake} holds no Delta table (no folder with a _delta_log)")


def table_path(lake: Location, name: str) -> Location:
    """The location of table ``name``; a name that would leave the lake root is refused."""
    normal = posixpath.normpath(name) if name else ""
    if not normal or normal == "." or normal.startswith(("..", "/")):
        raise ValueError(f"table name {name!r} does not name a folder inside the lake {lake}")
    return lake / normal


def latest_version(path: Location) -> int:
    """The newest committed version of the Delta table at ``path``, read from its log (no JVM)."""
    return path.delta_table().version()


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
