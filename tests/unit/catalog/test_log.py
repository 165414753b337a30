"""The catalog's Delta logs are checkpointed every ten commits (``catalog.layout.LOG_PROPERTIES``), in a new
catalog and in one created before the property was set; on delta-rs, no Spark."""

from __future__ import annotations

from pathlib import Path

from lakemeta.catalog import Catalog
from lakemeta.catalog.contract import ensure_tables
from lakemeta.catalog.freshness import record_discovery
from lakemeta.catalog.layout import LOG_PROPERTIES
from lakemeta.catalog.store import arrow_schema
from lakemeta.storage import Location


def _checkpoints(table: Path) -> list[str]:
    return sorted(path.name for path in (table / "_delta_log").glob("*.checkpoint.parquet"))


def test_a_bookkeeping_tables_log_is_checkpointed_every_ten_commits(tmp_path: Path) -> None:
    catalog = Catalog(None, Location.parse(tmp_path))
    ensure_tables(catalog)
    for run in range(12):  # versions 1-12 after the creation's 0
        record_discovery(catalog, "inclusion_dependencies", run, "settings")
    # at the tenth commit, version 9, and not again before the twentieth
    assert _checkpoints(tmp_path / "discovery_runs") == [f"{9:020d}.checkpoint.parquet"]


def test_a_table_created_before_the_property_gets_it(tmp_path: Path) -> None:
    older = Location.parse(tmp_path) / "runs"
    older.create_delta(arrow_schema("runs"))
    assert not older.delta_table().metadata().configuration
    ensure_tables(Catalog(None, Location.parse(tmp_path)))
    configured = older.delta_table().metadata().configuration
    assert {key: configured.get(key) for key in LOG_PROPERTIES} == LOG_PROPERTIES
