"""Primary-key candidates for the FK search: found, not assumed (Zhang et al. §2 take them as known).

* Tables with agree-set state (``agree_sets.max_rows``): their minimal unique column combinations of up to
  ``max_key_columns`` columns (``unique_column_combinations``) whose columns hold no null.
* Larger tables keep no agree-sets; their single columns are checked exactly instead, but only those that
  can be unique: no null, and an HLL distinct estimate within four standard errors (1.04 / sqrt(2^p),
  BML §2.2) of the row count. One Spark task per group of tables reads those columns with delta-rs and
  compares the distinct count with the row count. Multi-column keys of such tables must be declared.
* Keys declared in the configuration (``fks.declared_keys``) are added.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.agreesets.agree_set_state import tracked_tables
from lakemeta.catalog import Catalog
from lakemeta.config import FkConfig
from lakemeta.inds.lake_inds import read_table_strings
from lakemeta.lake.tables import table_path
from lakemeta.spark.placement import balanced_frame

log = logging.getLogger(__name__)

_ESTIMATE_SIGMAS = 4.0
_CHECK_SCHEMA = "table_name string, path string, version long, n_rows long, columns array<string>"


@dataclass(frozen=True)
class Key:
    table: str
    columns: tuple[str, ...]


def _unique_columns(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Per table: which of the listed columns hold ``n_rows`` distinct values (a non-null column)."""
    for batch in batches:
        found = []
        for table in batch.to_pylist():
            strings = read_table_strings(table["path"], table["version"], table["columns"])
            for column, values in zip(table["columns"], strings, strict=True):
                unique = values.null_count == 0 and len(pc.unique(values)) == len(values) == table["n_rows"]
                if unique:
                    found.append({"table_name": table["table_name"], "column_name": column})
        yield pa.RecordBatch.from_pylist(
            found, schema=pa.schema([("table_name", pa.string()), ("column_name", pa.string())])
        )


def _checked_single_keys(catalog: Catalog, lake: Path, precision: int) -> set[Key]:
    """Exactly checked unique columns of the tables without agree-set state."""
    tracked = tracked_tables(catalog)
    tables = {
        row["table_name"]: row
        for row in catalog.read_small("tables").select(["table_name", "n_rows", "last_version"]).to_pylist()
    }
    columns = catalog.read_small("columns").to_pylist()
    relative_error = 1.04 / np.sqrt(2.0**precision)
    could_be_unique: dict[str, list[str]] = {}
    for column in columns:
        table = tables.get(column["table_name"])
        if table is None or column["table_name"] in tracked or not table["n_rows"] or column["n_nulls"]:
            continue
        estimate = column["n_distinct_estimate"] or 0
        if estimate >= table["n_rows"] * (1 - _ESTIMATE_SIGMAS * relative_error):
            could_be_unique.setdefault(column["table_name"], []).append(column["column_name"])
    if not could_be_unique:
        return set()
    rows = [
        (
            tables[name]["n_rows"] * len(names),
            (name, str(table_path(lake, name)), tables[name]["last_version"], tables[name]["n_rows"], names),
        )
        for name, names in sorted(could_be_unique.items())
    ]
    spark = catalog.spark
    spark.sparkContext.setJobDescription(
        f"FK keys: uniqueness of {sum(len(n) for n in could_be_unique.values())} columns"
    )
    found = balanced_frame(spark, rows, _CHECK_SCHEMA).mapInArrow(
        _unique_columns, "table_name string, column_name string"
    )
    return {Key(row["table_name"], (row["column_name"],)) for row in found.toArrow().to_pylist()}


def find_keys(catalog: Catalog, lake: Path, config: FkConfig, precision: int) -> list[Key]:
    """The key candidates of the lake's committed tables, sorted by table and columns."""
    nulls = {
        (row["table_name"], row["column_name"]): row["n_nulls"]
        for row in catalog.read_small("columns").select(["table_name", "column_name", "n_nulls"]).to_pylist()
    }
    keys = {
        Key(row["table_name"], tuple(row["columns"]))
        for row in catalog.read_small("unique_column_combinations").to_pylist()
        if 0 < len(row["columns"]) <= config.max_key_columns
        and all(nulls.get((row["table_name"], column)) == 0 for column in row["columns"])
    }
    checked = _checked_single_keys(catalog, lake, precision)
    declared = {
        Key(table, tuple(columns)) for table, listed in config.declared_keys.items() for columns in listed
    }
    log.info(
        "FK keys: %d from unique column combinations, %d unique columns of tables without agree-sets, "
        "%d declared",
        len(keys),
        len(checked),
        len(declared),
    )
    return sorted(keys | checked | declared, key=lambda key: (key.table, key.columns))
