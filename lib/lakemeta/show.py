"""`lakemeta show`: print a catalog table without a JVM (delta-rs), at any version or time."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd

from lakemeta.registry import all_schemas
from lakemeta.storage import Location

SORT_KEYS = {
    "runs": ["run_id"],
    "discovery_runs": ["finished_at"],
    "relationship_changes": ["run_id", "relationship", "change", "dep_table", "ref_table"],
    "joinable_tables": ["query_id", "rank"],
    "fk_candidates": ["rank"],
    "table_overlaps": ["left_table", "right_table"],
}


def published_version(catalog: Location | Path | str, name: str) -> int | None:
    """The version of a catalog table published last (write-audit-publish), None if none was."""
    path = Location.parse(catalog) / "published"
    if not path.is_delta_table():
        return None
    published = path.delta_table().to_pyarrow_table().to_pylist()
    versions = [row for row in published if row["table_name"] == name]
    return max(versions, key=lambda row: row["published_at"])["version"] if versions else None


def read_catalog_table(
    catalog: Location | Path | str,
    name: str,
    version: int | None = None,
    as_of: datetime | None = None,
    published: bool = False,
) -> pd.DataFrame:
    """A catalog table (the catalog a local path or a URI) as pandas: its latest version, or as it was at
    ``version`` or at time ``as_of``, or (``published``) the version published last when there is one."""
    known = all_schemas()
    if name not in known:
        raise ValueError(f"unknown catalog table {name!r}; known: {', '.join(sorted(known))}")
    path = Location.parse(catalog) / name
    if not path.is_delta_table():
        raise FileNotFoundError(f"{path} is not a Delta table: has `lakemeta run` been run on this catalog?")
    table = path.delta_table()
    if published and version is None and as_of is None:
        version = published_version(catalog, name)
    if version is not None:
        table.load_as_version(version)
    elif as_of is not None:
        table.load_as_version(as_of)
    frame = table.to_pandas()
    keys = SORT_KEYS.get(name) or [c for c in ("table_name", "dep_table", "ordinal") if c in frame.columns]
    return frame.sort_values(keys, kind="stable").reset_index(drop=True) if keys else frame


def format_table(frame: pd.DataFrame, limit: int | None) -> str:
    shown = frame if limit is None else frame.head(limit)
    text = shown.to_string(index=False, max_colwidth=60) if len(shown) else "(no rows)"
    if limit is not None and len(frame) > limit:
        text += f"\n... {len(frame) - limit} more rows ({len(frame)} in all)"
    return text
