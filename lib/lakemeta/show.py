"""`lakemeta show`: print a catalog table without a JVM (delta-rs), at any version or time, what each
result reflects (``freshness``), or where each table's published version is (``published-versions``), as a
text table for people or as JSON or CSV for programs."""

from __future__ import annotations

import base64
import csv
import io
import json
import math
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pyarrow as pa

from lakemeta.catalog.freshness import results_freshness
from lakemeta.catalog.publication import newest_publication, published_versions
from lakemeta.catalog.store import arrow_schema
from lakemeta.config import Config
from lakemeta.registry import RESULT_RECORDS, all_schemas, open_catalog
from lakemeta.storage import Location

# The names `lakemeta show` takes beside the catalog tables: what each result reflects, and where each
# table's published version is.
FRESHNESS = "freshness"
PUBLISHED_VERSIONS = "published-versions"

SORT_KEYS = {
    "runs": ["run_id"],
    "discovery_runs": ["finished_at"],
    "relationship_changes": ["run_id", "relationship", "change", "dep_table", "ref_table"],
    "joinable_tables": ["query_id", "rank"],
    "fk_candidates": ["rank"],
    "table_overlaps": ["left_table", "right_table"],
}


def read_catalog_rows(
    catalog: Location | Path | str,
    name: str,
    version: int | None = None,
    as_of: datetime | None = None,
    published: bool = False,
) -> pa.Table:
    """A catalog table (the catalog a local path or a URI) as Arrow, in a stable order: its latest version,
    or as it was at ``version`` or at time ``as_of``, or (``published``) the version published last when
    there is one."""
    known = all_schemas()
    if name not in known:
        raise ValueError(f"unknown catalog table {name!r}; known: {', '.join(sorted(known))}")
    path = Location.parse(catalog) / name
    if not path.is_delta_table():
        raise FileNotFoundError(f"{path} is not a Delta table: has `lakemeta run` been run on this catalog?")
    table = path.delta_table()
    if published and version is None and as_of is None:
        root = Location.parse(catalog)
        # the version the newest publication points the views at (none before the first publication)
        version = published_versions(root).get(name) if (root / "published").is_delta_table() else None
    if version is not None:
        table.load_as_version(version)
    elif as_of is not None:
        table.load_as_version(as_of)
    rows = path.delta_dataset(table).to_table()
    keys = SORT_KEYS.get(name) or [
        c for c in ("table_name", "dep_table", "ordinal") if c in rows.column_names
    ]
    return rows.sort_by([(key, "ascending") for key in keys]) if keys else rows  # Arrow's sort is stable


def freshness_rows(config: Config) -> pa.Table:
    """What each result of ``config``'s catalog reflects (``lakemeta.catalog.freshness``), a row each in run
    order: the table recording it, the committed run it read, whether it was computed with today's
    discovery settings, and whether it is current (that run is the newest committed one, and the settings
    are today's). No JVM."""
    catalog = open_catalog(None, config.catalog)
    found = results_freshness(catalog, RESULT_RECORDS, config)
    settings = config.discovery_settings()
    return pa.table(
        {
            "result": [each.step for each in found],
            "record_table": [each.record for each in found],
            "run_id": pa.array([each.run for each in found], pa.int64()),
            "settings_current": [(each.reflects or {}).get("discovery") == settings for each in found],
            "current": [each.current for each in found],
        }
    )


def published_version_rows(catalog: Location | Path | str) -> pa.Table:
    """Each catalog table of the newest publication: its name, the Delta version the quality gate passed,
    its path (a URI) and when it was published; any Delta reader (delta-rs, Spark, DuckDB through Arrow)
    reads what the gate passed at that path and version, never a later write. No rows before the first
    publication."""
    root = Location.parse(catalog)
    if (root / "published").is_delta_table():
        newest = newest_publication(root).sort_by("table_name")
    else:
        newest = arrow_schema("published").empty_table()
    paths = pa.array([(root / name).uri for name in newest["table_name"].to_pylist()], pa.string())
    return (
        newest.select(["table_name", "version"])
        .append_column("path", paths)
        .append_column("published_at", newest["published_at"])
    )


def read_catalog_table(
    catalog: Location | Path | str,
    name: str,
    version: int | None = None,
    as_of: datetime | None = None,
    published: bool = False,
) -> pd.DataFrame:
    """:func:`read_catalog_rows` as pandas."""
    return read_catalog_rows(catalog, name, version, as_of, published).to_pandas()


def format_table(frame: pd.DataFrame, limit: int | None) -> str:
    shown = frame if limit is None else frame.head(limit)
    text = shown.to_string(index=False, max_colwidth=60) if len(shown) else "(no rows)"
    if limit is not None and len(frame) > limit:
        text += f"\n... {len(frame) - limit} more rows ({len(frame)} in all)"
    return text


def format_json(rows: pa.Table) -> str:
    """The rows as one JSON document, a list of objects keyed by column (see :func:`_plain` for values)."""
    return json.dumps([_plain(row) for row in rows.to_pylist(maps_as_pydicts="strict")], ensure_ascii=False)


def format_csv(rows: pa.Table) -> str:
    """The rows as CSV (RFC 4180 quoting) under a header of the column names: null is an empty field, a
    list or map its JSON, other values as :func:`_plain` writes them."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(rows.column_names)
    for row in rows.to_pylist(maps_as_pydicts="strict"):
        writer.writerow([_csv_field(value) for value in row.values()])
    return out.getvalue().removesuffix("\n")


def _csv_field(value: object) -> str:
    plain = _plain(value)
    if plain is None:
        return ""
    return plain if isinstance(plain, str) else json.dumps(plain, ensure_ascii=False)


def _plain(value: object) -> object:
    """A value as JSON holds it: dates and times in ISO 8601, binary in base64, decimals as text (exact),
    NaN and infinities as null (JSON has neither); lists and maps element by element."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, date | time):  # datetime is a date
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
