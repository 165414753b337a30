"""What each result reflects (``lakemeta.catalog.freshness``): read from the commits of its record table, it
is current when it names the newest committed run and today's discovery settings; a write that records
nothing makes it unknown (stale), a commit that keeps the rows (compaction) leaves it as it was; on
delta-rs, no Spark."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa

from lakemeta.catalog import Catalog, Txn
from lakemeta.catalog.contract import ensure_tables
from lakemeta.catalog.freshness import complete_history, reflecting, results_freshness, stale_results
from lakemeta.catalog.store import arrow_schema
from lakemeta.config import Config, FkConfig

RECORDS = {"estimates": "inclusion_estimates", "derived": "tables"}


def commit_run(catalog: Catalog, run_id: int) -> None:
    row = {
        "run_id": run_id,
        "status": "succeeded",
        "tables_changed": 1,
        "rows_inserted": 1,
        "rows_deleted": 0,
    }
    catalog.append_small("runs", pa.Table.from_pylist([row], arrow_schema("runs")), Txn("runs", run_id))


def test_a_result_is_current_while_its_record_names_the_newest_committed_run_and_the_settings(
    tmp_path: Path,
) -> None:
    catalog = Catalog(None, tmp_path)
    ensure_tables(catalog)
    config = Config()
    assert stale_results(catalog, RECORDS, config) == ["estimates", "derived"]  # never recorded
    catalog.record("inclusion_estimates", reflecting(None, "own", config))  # no run committed yet
    assert stale_results(catalog, RECORDS, config) == ["derived"]
    (estimates, _) = results_freshness(catalog, RECORDS, config)
    assert estimates.reflects == {"run": None, "settings": "own", "discovery": config.discovery_settings()}

    commit_run(catalog, 1)
    assert stale_results(catalog, RECORDS, config) == ["estimates", "derived"]
    catalog.record("inclusion_estimates", reflecting(1, "own", config))
    rows = pa.Table.from_pylist(
        [{"table_name": "t", "n_rows": 3, "n_columns": 1, "last_version": 0}], arrow_schema("tables")
    )
    catalog.replace_small("tables", rows, reflects=reflecting(1, "own", config))  # with its content
    assert stale_results(catalog, RECORDS, config) == []

    # Other discovery settings: every result is stale, whichever section changed.
    other = dataclasses.replace(config, fks=FkConfig(min_score=0.5))
    assert stale_results(catalog, RECORDS, other) == ["estimates", "derived"]

    # A compaction keeps the rows and what they reflect; a write that records nothing makes it unknown.
    catalog.delta_table("tables").optimize.compact()
    assert stale_results(catalog, RECORDS, config) == []
    catalog.replace_small("tables", rows)
    assert stale_results(catalog, RECORDS, config) == ["derived"]
    assert results_freshness(catalog, RECORDS, config)[1].reflects is None


def test_recording_unchanged_rows_adds_no_file(tmp_path: Path) -> None:
    catalog = Catalog(None, tmp_path)
    ensure_tables(catalog)
    rows = pa.Table.from_pylist(
        [{"table_name": "t", "n_rows": 3, "n_columns": 1, "last_version": 0}], arrow_schema("tables")
    )
    catalog.replace_small("tables", rows)
    files = catalog.delta_table("tables").file_uris()
    catalog.record("tables", reflecting(7, "own", Config()))
    assert catalog.delta_table("tables").file_uris() == files
    assert catalog.read_small("tables").to_pylist() == rows.to_pylist()


def test_keys_derived_ahead_of_a_commit_are_current_on_either_side_of_it(tmp_path: Path) -> None:
    catalog = Catalog(None, tmp_path)
    ensure_tables(catalog)
    config, keys = Config(), {"keys": "functional_dependencies"}
    commit_run(catalog, 1)
    catalog.record("functional_dependencies", {**reflecting(1, "own", config), "derived_for": 2})
    assert stale_results(catalog, keys, config) == []  # run 2 not committed yet: run 1's
    commit_run(catalog, 2)
    (fresh,) = results_freshness(catalog, keys, config)
    assert fresh.current and fresh.run == 2
    commit_run(catalog, 3)
    assert stale_results(catalog, keys, config) == ["keys"]


def test_a_current_result_missing_from_the_history_gets_its_row_once(tmp_path: Path) -> None:
    catalog = Catalog(None, tmp_path)
    ensure_tables(catalog)
    config = Config()
    commit_run(catalog, 1)
    catalog.record("inclusion_estimates", reflecting(1, "own", config))
    for _ in range(2):
        complete_history(catalog, results_freshness(catalog, RECORDS, config))
        history = catalog.read_small("discovery_runs").select(["step", "run_id", "settings"]).to_pylist()
        assert history == [{"step": "estimates", "run_id": 1, "settings": config.discovery_settings()}]
