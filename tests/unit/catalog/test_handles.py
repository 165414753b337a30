"""Inside a step a catalog handle keeps one delta-rs handle per table and brings it up to date on each use
(``Catalog.delta_table``): it reads what other writers committed meanwhile, and its own writes; outside a
step every use opens the table. On delta-rs, no Spark."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa

from lakemeta.catalog import Catalog
from lakemeta.catalog.contract import ensure_tables
from lakemeta.catalog.freshness import record_discovery
from lakemeta.catalog.reflects import recorded_reflects
from lakemeta.catalog.store import COMPACT_PAST_FILES, Txn
from lakemeta.inds.columns import INPUTS
from lakemeta.storage import Location


def _steps(catalog: Catalog) -> list[str]:
    return catalog.read_small("discovery_runs")["step"].to_pylist()


def test_a_step_reads_every_commit_through_the_handle_it_keeps(tmp_path: Path) -> None:
    ours, theirs = Catalog(None, Location.parse(tmp_path)), Catalog(None, Location.parse(tmp_path))
    ensure_tables(ours)
    with ours.using_state("a step"):
        assert _steps(ours) == []
        kept = ours.delta_table("discovery_runs")
        record_discovery(theirs, "theirs", 1, "settings")  # another process's commit
        assert sorted(_steps(ours)) == ["theirs"]
        record_discovery(ours, "ours", 1, "settings")  # written through the kept handle
        assert sorted(_steps(ours)) == ["ours", "theirs"]
        assert ours.delta_table("discovery_runs") is kept
        assert kept.version() == 2
    # outside a step nothing is kept: each call opens the table
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
    ensure_tables(catalog)
    with catalog.using_state("a step"), ThreadPoolExecutor(1) as other_thread:
        kept = catalog.delta_table("runs")
        theirs = other_thread.submit(catalog.delta_table, "runs").result()
        assert theirs is not kept
        assert catalog.delta_table("runs") is kept


def test_a_small_table_appended_to_again_and_again_is_compacted_and_keeps_its_rows(tmp_path: Path) -> None:
    catalog = Catalog(None, Location.parse(tmp_path))
    ensure_tables(catalog)
    reflects = {"run": 3, "settings": "s"}
    row = {"table_name": "t", "column_name": "c", "set_size": 0}
    inputs = pa.Table.from_pylist([row], schema=catalog.arrow_schema(INPUTS))
    for step in range(3 * COMPACT_PAST_FILES):
        record_discovery(catalog, f"step {step}", step, "settings")
        catalog.append_small(INPUTS, inputs, Txn("inputs", step), reflects=reflects)
        for name in ("discovery_runs", INPUTS):
            assert len(catalog.delta_table(name).file_uris()) <= COMPACT_PAST_FILES
    assert sorted(_steps(catalog)) == sorted(f"step {step}" for step in range(3 * COMPACT_PAST_FILES))
    history = [commit["operation"] for commit in catalog.delta_table(INPUTS).history()]
    assert history.count("OPTIMIZE") == 2
    # the compaction keeps what the rows reflect, and which appends were made: a retry is skipped
    assert recorded_reflects(catalog.delta_table(INPUTS)) == reflects
    catalog.append_small(INPUTS, inputs, Txn("inputs", 0))
    assert catalog.read_small(INPUTS).num_rows == 3 * COMPACT_PAST_FILES
    # a table whose readers skip files by their statistics keeps a file per append
    for step in range(COMPACT_PAST_FILES + 2):
        catalog.append_small(INPUTS, inputs, Txn("apart", step), compact=False)
    assert len(catalog.delta_table(INPUTS).file_uris()) > COMPACT_PAST_FILES + 2
