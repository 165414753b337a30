"""lakemeta_incremental: on a schedule, bring state and catalog up to date with the lake's changes.

Wiring only: each task is a pipeline step under jobs/, launched by spark-submit through the
`spark_default` connection. The lake and catalog come from LAKEMETA_LAKE / LAKEMETA_CATALOG /
LAKEMETA_CONFIG in the task's environment; the steps are idempotent, so retries are safe.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import dag

from lakemeta.config import load_config
from lakemeta.spark import delta_jars, spark_conf, spark_environment

REPO = Path(__file__).resolve().parents[1]
SPARK_SUBMIT = str(REPO / ".venv" / "bin" / "spark-submit")

DEFAULT_ARGS = {
    "retries": 3,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
}


def spark_step(task_id: str, job: str) -> SparkSubmitOperator:
    return SparkSubmitOperator(
        task_id=task_id,
        application=str(REPO / "jobs" / job),
        conn_id="spark_default",
        spark_binary=SPARK_SUBMIT,
        jars=",".join(delta_jars()),
        conf=spark_conf(),
        env_vars=spark_environment(),
        name=f"lakemeta {task_id}",
        driver_memory="4g",
        verbose=False,
    )


@dag(
    dag_id="lakemeta_incremental",
    schedule=load_config().incremental_schedule,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    tags=["lakemeta"],
    doc_md=__doc__,
)
def lakemeta_incremental() -> None:
    detect = spark_step("detect_batches", "detect_batches.py")
    state_updates = [
        spark_step("update_column_profile", "update_column_profile.py"),
        spark_step("update_hll_counters", "update_hll_counters.py"),
    ]
    commit = spark_step("commit_batches", "commit_batches.py")
    inclusion_estimates = spark_step("inclusion_estimates", "inclusion_estimates.py")
    detect >> state_updates >> commit >> inclusion_estimates


lakemeta_incremental()
