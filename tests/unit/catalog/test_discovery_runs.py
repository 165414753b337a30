"""Which steps' results are stale (``lakemeta.catalog.discovery_runs.stale_steps``): those whose newest
record in ``discovery_runs`` does not name the given newest committed run with the given settings, in the
order asked; on delta-rs, no Spark."""

from __future__ import annotations

from pathlib import Path

from lakemeta.catalog import Catalog
from lakemeta.catalog.contract import ensure_tables
from lakemeta.catalog.discovery_runs import record_discovery, stale_steps
from lakemeta.storage import Location


def test_a_step_is_stale_unless_its_newest_record_names_the_run_and_the_settings(tmp_path: Path) -> None:
    catalog = Catalog(None, Location.parse(tmp_path))
    ensure_tables(catalog)
    assert stale_steps(catalog, ["a", "b"], "s", None) == ["a", "b"]  # never recorded
    record_discovery(catalog, "a", None, "s")  # over an empty state: no run committed yet
    assert stale_steps(catalog, ["a", "b"], "s", None) == ["b"]
    record_discovery(catalog, "a", 3, "s")
    record_discovery(catalog, "b", 3, "other")
    assert stale_steps(catalog, ["b", "a"], "s", 3) == ["b"]
    assert stale_steps(catalog, ["b", "a"], "s", 4) == ["b", "a"]
    record_discovery(catalog, "b", 3, "s")  # its newest record counts
    assert stale_steps(catalog, ["a", "b"], "s", 3) == []
    assert stale_steps(catalog, ["a", "b"], "other", 3) == ["a", "b"]
