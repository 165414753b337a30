"""The demo's DAG runner (``lakemeta.demo.dag_runs``): several `airflow dags test` runs in one process, in
order, each timed and recorded in Airflow's metadata database; a process whose run fails raises an error
that names its DAGs. The DAGs here need no Spark: the maintenance (delta-rs) and an incremental run over a
lake with nothing to plan."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from lakemeta.config import Config
from lakemeta.demo.dag_runs import DagRunError, airflow_environment, run_dags
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.storage import Location

pytestmark = pytest.mark.airflow


def test_runs_of_one_process_are_timed_in_order_and_a_failed_one_names_its_dags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake, catalog, home = tmp_path / "lake", tmp_path / "catalog", tmp_path / "airflow"
    write_deltalake(str(lake / "orders"), pa.table({"id": [1, 2]}))
    Pipeline(None, Config(lake=lake, catalog=catalog))  # the catalog's empty tables (delta-rs)
    shutil.rmtree(lake / "orders")  # a lake with a file but no table: the incremental run plans nothing
    (lake / "notes.csv").write_text("id\n1\n")
    monkeypatch.setenv("AIRFLOW_HOME", str(home))
    monkeypatch.setenv("LAKEMETA_RETRY_DELAY_SECONDS", "1")  # a task that fails does not hold the test
    env = airflow_environment(Location.parse(lake), Location.parse(catalog))

    times = run_dags([("lakemeta_maintenance", None), ("lakemeta_incremental", None)], env)
    assert list(times.seconds) == ["lakemeta_maintenance", "lakemeta_incremental"]
    assert all(seconds > 0 for seconds in times.seconds.values())
    assert times.wall_seconds > sum(times.seconds.values())  # the process's start is Airflow's own
    with sqlite3.connect(home / "airflow.db") as db:
        runs = db.execute("SELECT dag_id, state FROM dag_run ORDER BY start_date").fetchall()
        skipped = db.execute(
            "SELECT task_id FROM task_instance WHERE dag_id = 'lakemeta_incremental' AND state = 'skipped'"
        ).fetchall()
    assert runs == [("lakemeta_maintenance", "success"), ("lakemeta_incremental", "success")]
    assert ("scan_batches",) in skipped and ("commit_batches",) in skipped

    with pytest.raises(DagRunError, match="lakemeta_joinable_search failed after"):
        run_dags([("lakemeta_joinable_search", {"query": "orders", "key_columns": [], "k": 5})], env)
    with pytest.raises(ValueError, match="lakemeta_maintenance twice"):
        run_dags([("lakemeta_maintenance", None), ("lakemeta_maintenance", None)], env)
