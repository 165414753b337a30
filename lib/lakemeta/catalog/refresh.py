"""The catalog's `tables` and `columns`, derived from state (state and metrics kept apart, as Deequ does).

Both are small by construction (a row per table or column) and recomputed whole from the state after
each run on the driver, which keeps them exactly in step with the state whatever happened before.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.catalog.store import Catalog, arrow_schema

log = logging.getLogger(__name__)


def refresh_tables_and_columns(catalog: Catalog, column_metrics: Sequence[pa.Table]) -> None:
    """Rewrite ``tables`` and ``columns`` from the state; ``column_metrics`` are tables keyed by
    (table_name, column_name) holding metric columns of ``columns`` derived from other state components
    (``n_distinct_estimate``, ``is_unique``, ``n_distinct``); a metric missing for a column is null."""
    profile = catalog.read_small("state/column_profile")
    columns = profile
    for metrics in column_metrics:
        columns = columns.join(metrics, ["table_name", "column_name"], join_type="left outer")
    for name in ("n_distinct_estimate", "is_unique", "n_distinct"):
        if name not in columns.column_names:
            columns = columns.append_column(
                name, pa.nulls(len(columns), arrow_schema("columns").field(name).type)
            )
    columns = columns.sort_by([("table_name", "ascending"), ("ordinal", "ascending")])
    count = len(columns)

    batches = catalog.read_small("state/batches")
    committed = batches.filter(batches["committed"]).sort_by([("run_id", "ascending")]).to_pylist()
    latest = {row["table_name"]: row for row in committed}  # later runs overwrite earlier ones
    runs = catalog.read_small("runs").to_pylist()
    finished = {row["run_id"]: row["finished_at"] for row in runs}

    per_table = profile.group_by("table_name").aggregate([("n_rows", "max"), ("column_name", "count")])
    names = per_table["table_name"].to_pylist()
    listed = [name in latest and latest[name]["kind"] != "drop" for name in names]
    tables = pa.table(
        {
            "table_name": names,
            "n_rows": per_table["n_rows_max"],
            "n_columns": pc.cast(per_table["column_name_count"], pa.int32()),
            "last_version": [latest[n]["to_version"] if n in latest else None for n in names],
            "updated_at": [finished.get(latest[n]["run_id"]) if n in latest else None for n in names],
        }
    ).filter(pa.array(listed, pa.bool_()))
    catalog.replace_small("columns", columns.select(arrow_schema("columns").names))
    catalog.replace_small("tables", tables.sort_by("table_name"))
    log.info("catalog refreshed: %d tables, %d columns", len(tables), count)
