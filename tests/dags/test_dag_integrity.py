"""Every DAG file imports cleanly, and its wiring is what the pipeline expects."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.airflow


@pytest.fixture(scope="module")
def dagbag(tmp_path_factory: pytest.TempPathFactory):
    import os

    os.environ.setdefault("AIRFLOW_HOME", str(tmp_path_factory.mktemp("airflow-home")))
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(REPO / "dags"))


def test_dags_import_without_errors(dagbag):
    assert dagbag.import_errors == {}
    assert {"lakemeta_incremental", "lakemeta_joinable_search"} <= set(dagbag.dag_ids)


def test_incremental_dag_wiring(dagbag):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    dag = dagbag.dags["lakemeta_incremental"]
    assert dag.max_active_runs == 1
    upstream = {t.task_id: sorted(t.upstream_task_ids) for t in dag.tasks}
    state_updates = [
        "update_agree_sets",
        "update_column_profile",
        "update_hll_counters",
        "update_posting_lists",
    ]
    assert upstream == {
        "detect_batches": [],
        **{task: ["detect_batches"] for task in state_updates},
        "commit_batches": state_updates,
        "inclusion_estimates": ["commit_batches"],
        "inclusion_dependencies": ["commit_batches"],
        "fk_candidates": ["inclusion_estimates"],
    }
    for task in dag.tasks:
        assert isinstance(task, SparkSubmitOperator)
        assert task.retries >= 1 and task.retry_exponential_backoff
        assert Path(task.application).parent == REPO / "jobs" and Path(task.application).exists()
        assert task.conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
        assert task.env_vars["SPARK_LOCAL_IP"] == "127.0.0.1"


def triggered(params, values: dict) -> dict:
    """The params of a run triggered with ``values``, resolved and validated as the trigger form does."""
    chosen = copy.deepcopy(params)
    chosen.update(values)
    return chosen.validate()


def test_joinable_search_dag_validates_its_params(dagbag):
    from airflow.exceptions import ParamValidationError

    dag = dagbag.dags["lakemeta_joinable_search"]
    assert dag.schedule is None or dag.timetable.summary == "None"
    (task,) = dag.tasks
    assert Path(task.application) == REPO / "jobs" / "joinable_search.py"
    assert "{{ run_id }}" in task.application_args
    good = {"query": "shop/orders", "key_columns": ["id", "note"], "k": 5, "hash_bits": 128}
    assert triggered(dag.params, good) == good
    for bad in (
        {"key_columns": []},
        {"key_columns": ["id", "id"]},
        {"k": 0},
        {"hash_bits": 100},
        {"query": ""},
    ):
        with pytest.raises(ParamValidationError):
            triggered(dag.params, {**good, **bad})
    with pytest.raises(ParamValidationError):  # the query and its key columns have no default
        triggered(dag.params, {"k": 5})
