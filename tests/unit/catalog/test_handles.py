"""Inside a step a catalog handle keeps one delta-rs handle per table and brings it up to date on each use
(``Catalog.delta_table``): it reads what other writers committed meanwhile, and its own writes; outside a
step every use opens the table. On delta-rs, no Spark."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lakemeta.catalog import Catalog
from lakemeta.catalog.discovery_runs import record_discovery
from lakemeta.storage import Location


def _steps(catalog: Catalog) -> list[str]:
    return catalog.read_small("discovery_runs")["step"].to_pylist()


def test_a_step_reads_every_commit_through_the_handle_it_keeps(tmp_path: Path) -> None:
    ours, theirs = Catalog(None, Location.parse(tmp_path)), Catalog(None, Location.parse(tmp_path))
    ours.ensure_tables()
    with ours.using_state("a step"):
        assert _steps(ours) == []
        kept = ours.delta_table("discovery_runs")
        record_discovery(theirs, "theirs", 1, "settings")  # another process's commit
        assert sorted(_steps(ours)) == ["theirs"]
        record_discovery(ours, "ours", 1, "settings")  # written through the kept handle
        assert sorted(_steps(ours)) == ["ours", "theirs"]
        assert ours.delta_table("discovery_runs") is kept
        assert kept.version() == 2
    # outside a step a rebuild may recreate a table: nothing is kept
    assert ours.delta_table("discovery_runs") is not ours.delta_table("discovery_runs")
    record_discovery(theirs, "theirs again", 2, "settings")
    assert sorted(_steps(ours)) == ["ours", "theirs", "theirs again"]


def test_a_table_a_step_replaces_before_it_exists_is_created(tmp_path: Path) -> None:
    catalog = Catalog(None, Location.parse(tmp_path))
    with catalog.using_state("a step"):
        catalog.truncate("tables")
        assert catalog.read_small("tables").num_rows == 0
        assert catalog.delta_table("tables").version() == 0


def test_another_thread_of_a_step_opens_its_own_handle(tmp_path: Path) -> None:
    catalog = Catalog(None, Location.parse(tmp_path))
    catalog.ensure_tables()
    with catalog.using_state("a step"), ThreadPoolExecutor(1) as other_thread:
        kept = catalog.delta_table("runs")
        theirs = other_thread.submit(catalog.delta_table, "runs").result()
        assert theirs is not kept
        assert catalog.delta_table("runs") is kept
