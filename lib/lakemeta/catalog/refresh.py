"""The catalog's `tables` and `columns`, derived from state (state and metrics kept apart, as Deequ does).

Both are small by construction (a row per table or column) and computed on the driver. ``tables`` is
recomputed whole from the state after each run; ``columns`` too, or only the rows of the run's tables
when the rest reflect the state of the run before (their tables' state has not changed since): what a
column's metrics cost is then a read of its own tables' state, not of every table's.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lakemeta.catalog.predicates import is_in, rows_of_tables
from lakemeta.catalog.store import Catalog, arrow_schema

log = logging.getLogger(__name__)


def refresh_tables_and_columns(
    catalog: Catalog,
    column_metrics: Sequence[pa.Table],
    changed: Sequence[str] | None = None,
    reflects: dict | None = None,
) -> None:
    """Rewrite ``tables`` and ``columns`` from the state, or of ``columns`` only the rows of the ``changed``
    tables (their metrics alone given); ``column_metrics`` are tables keyed by (table_name, column_name)
    holding metric columns of ``columns`` derived from other state components (``n_distinct_estimate``,
    ``is_unique``, ``n_distinct``); a metric missing for a column is null. ``tables``, written last, records
    ``reflects`` (``lakemeta.catalog.freshness``)."""
    profile = catalog.read_small("state/column_profile")
    columns = profile if changed is None else rows_of_tables(profile, changed)
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
    predicate = None if changed is None else is_in("table_name", changed)
    catalog.replace_small("columns", columns.select(arrow_schema("columns").names), predicate)
    catalog.replace_small("tables", tables.sort_by("table_name"), reflects=reflects)
    scope = "" if changed is None else f" of {len(changed)} changed tables"
    log.info("catalog refreshed: %d tables, %d columns%s", len(tables), count, scope)
