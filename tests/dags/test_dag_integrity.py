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


DAG_IDS = {"lakemeta_incremental", "lakemeta_discovery", "lakemeta_joinable_search", "lakemeta_rebuild"}


def test_dags_import_without_errors(dagbag):
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == DAG_IDS


def upstream(dag) -> dict[str, list[str]]:
    return {task.task_id: sorted(task.upstream_task_ids) for task in dag.tasks}


def step_of(task) -> str:
    """The step of ``lakemeta.steps`` a Spark task runs."""
    return task.op_args[0]


def arguments_of(task) -> list[str]:
    """The arguments (templates) a Spark task hands its step."""
    return task.op_args[1]


def test_every_task_but_planning_and_the_audits_is_a_retried_step_on_the_connect_server(dagbag):
    from airflow.providers.apache.spark.operators.spark_pyspark import PySparkOperator

    from lakemeta import steps
    from lakemeta.spark.dag_tasks import run_step

    for dag_id in DAG_IDS:
        for task in dagbag.dags[dag_id].tasks:
            assert task.retries >= 1 and task.retry_exponential_backoff
            # No Spark: planning reads Delta logs, the audits run Great Expectations over files.
            if task.task_id in ("detect_batches", "quality_gate", "batch_audit"):
                assert task.python_callable.__module__ == "lakemeta.tasks"
                continue
            assert isinstance(task, PySparkOperator) and task.python_callable is run_step
            assert task.conn_id == "lakemeta_connect"
            assert callable(getattr(steps, step_of(task)))  # the same step a job under jobs/ runs
            assert (REPO / "jobs" / f"{step_of(task)}.py").exists()


def test_incremental_dag_updates_state_and_publishes_the_asset_discovery_runs_on(dagbag):
    from lakemeta.registry import STATE_COMPONENTS

    dag = dagbag.dags["lakemeta_incremental"]
    assert dag.max_active_runs == 1
    state_updates = [entry.task_id for entry in STATE_COMPONENTS]
    assert state_updates == [
        "update_column_profile",
        "update_hll_counters",
        "update_column_values",
        "update_agree_sets",
        "update_posting_lists",
    ]
    for entry in STATE_COMPONENTS:  # one job for every component, which it names
        task = dag.get_task(entry.task_id)
        assert step_of(task) == "update_state"
        assert arguments_of(task) == [entry.name]
    assert upstream(dag) == {
        "detect_batches": [],
        "scan_batches": ["detect_batches"],
        "batch_audit": ["detect_batches"],
        **{task: ["scan_batches"] for task in state_updates},
        "commit_batches": sorted(["batch_audit", *state_updates]),
    }
    # No table changed: planning returns False, which skips every task after it, the commit with its
    # asset among them (not only the direct downstream tasks).
    detect = dag.get_task("detect_batches")
    assert (
        type(detect).__name__ == "_ShortCircuitDecoratedOperator" and detect.ignore_downstream_trigger_rules
    )
    (asset,) = dag.get_task("commit_batches").outlets
    assert asset.name == "lakemeta_state"
    discovery = dagbag.dags["lakemeta_discovery"]
    assert [a.name for a in discovery.timetable.asset_condition.objects] == ["lakemeta_state"]


def test_a_registered_state_component_gets_its_task(dagbag, monkeypatch: pytest.MonkeyPatch):
    """A new component is a module and a registry entry: the incremental DAG then runs it like the others
    (the toy component of tests/spark/test_registry.py)."""
    from airflow.dag_processing.dagbag import DagBag

    from lakemeta import registry

    entry = registry.ComponentEntry("row_counts", "tests.spark.test_registry:RowCounts")
    monkeypatch.setattr(registry, "STATE_COMPONENTS", (*registry.STATE_COMPONENTS, entry))
    dag = DagBag(dag_folder=str(REPO / "dags" / "lakemeta_incremental.py")).dags["lakemeta_incremental"]
    assert arguments_of(dag.get_task("update_row_counts")) == ["row_counts"]
    assert upstream(dag)["update_row_counts"] == ["scan_batches"]
    assert "update_row_counts" in dag.get_task("commit_batches").upstream_task_ids


def test_discovery_dag_wiring_and_params(dagbag):
    from airflow.exceptions import ParamValidationError

    from lakemeta.registry import DISCOVERY_STEPS

    dag = dagbag.dags["lakemeta_discovery"]
    assert dag.max_active_runs == 1
    for step in DISCOVERY_STEPS:  # the registry's steps, each after the steps it reads
        task = dag.get_task(step.name)
        assert step_of(task) == "discover"
        assert arguments_of(task)[0] == step.name
        assert set(step.after) <= task.upstream_task_ids
    assert upstream(dag) == {
        "keys_and_dependencies": [],
        "inclusion_estimates": [],
        "inclusion_dependencies": [],
        "fk_candidates": ["inclusion_estimates", "keys_and_dependencies"],
        "quality_gate": ["fk_candidates", "inclusion_dependencies"],
        "publish": ["quality_gate"],
    }
    assert "{{ ti.xcom_pull(task_ids='quality_gate') }}" in arguments_of(dag.get_task("publish"))
    defaults = triggered(dag.params, {})
    assert defaults == {
        "inclusion_floor": 0.5,
        "exact_max_distinct": 16_384,
        "max_error_bound": 0.25,
        "max_fd_error": 0.01,
        "ind_filters": "relational",
        "fk_inclusion_threshold": 0.9,
        "require_name_match": False,
        "fk_name_signal": True,
        "fk_sample_emd": 0.05,
        "fk_prefix_share": 0.5,
        "fk_overlap_share": 0.5,
    }
    for bad in (
        {"inclusion_floor": 1.5},
        {"exact_max_distinct": -1},
        {"fk_inclusion_threshold": 0},
        {"ind_filters": "all"},
        {"require_name_match": "yes"},
        {"fk_sample_emd": -0.1},
    ):
        with pytest.raises(ParamValidationError):
            triggered(dag.params, bad)
    # The params a run is triggered with reach every discovery step as typed configuration settings.
    from lakemeta.config import load_config, parse_settings

    chosen = triggered(
        dag.params,
        {"inclusion_floor": 0.7, "ind_filters": "web", "require_name_match": True, "fk_name_signal": False},
    )
    for task_id in (
        "keys_and_dependencies",
        "inclusion_estimates",
        "inclusion_dependencies",
        "fk_candidates",
    ):
        task = dag.get_task(task_id)
        args = task.render_template(arguments_of(task), {"params": chosen})
        settings = [args[i + 1] for i, arg in enumerate(args) if arg == "--set"]
        config = load_config(parse_settings(settings), environ={})
        assert (config.sketches.inclusion_floor, config.inds.filters, config.fks.require_name_match) == (
            0.7,
            "web",
            True,
        )
        assert (config.agree_sets.max_fd_error, config.fks.inclusion_threshold) == (0.01, 0.9)
        assert (config.fks.name_signal, config.fks.sample_emd) == (False, 0.05)


def test_rebuild_dag_asks_for_confirmation(dagbag):
    from airflow.exceptions import ParamValidationError

    dag = dagbag.dags["lakemeta_rebuild"]
    assert upstream(dag) == {
        "rebuild_state": [],
        "quality_gate": ["rebuild_state"],
        "publish": ["quality_gate"],
    }
    assert triggered(dag.params, {"confirm": "rebuild"}) == {"confirm": "rebuild"}
    for bad in ({}, {"confirm": "yes"}):
        with pytest.raises(ParamValidationError):
            triggered(dag.params, bad)


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
    assert step_of(task) == "joinable_search"
    assert "{{ run_id }}" in arguments_of(task)
    good = {"query": "shop/orders", "key_columns": ["id", "note"], "k": 5, "hash_bits": 128}
    assert triggered(dag.params, good) == good
    for query in ("queries/q.csv", "sales 2024 ü", "a..b/c.csv"):
        assert triggered(dag.params, {**good, "query": query})["query"] == query
    for bad in (
        {"key_columns": []},
        {"key_columns": ["id", "id"]},
        {"k": 0},
        {"hash_bits": 100},
        {"query": ""},
        {"query": "/etc/passwd"},
        {"query": "../outside.csv"},
        {"query": "shop/../../outside.csv"},
        {"key_columns": ["id,note"]},
    ):
        with pytest.raises(ParamValidationError):
            triggered(dag.params, {**good, **bad})
    with pytest.raises(ParamValidationError):  # the query and its key columns have no default
        triggered(dag.params, {"k": 5})
