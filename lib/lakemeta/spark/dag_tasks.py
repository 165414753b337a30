"""The Airflow task that runs a job under jobs/ through spark-submit (shared by the DAG files)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset

from lakemeta.config import load_config
from lakemeta.spark.session import delta_jars, spark_conf, spark_environment

REPO = Path(__file__).resolve().parents[3]
SPARK_SUBMIT = str(REPO / ".venv" / "bin" / "spark-submit")

# Steps are idempotent, so retries are safe; backing off rides out a busy cluster or a locked table.
DEFAULT_ARGS = {
    "retries": 3,
    "retry_delay": timedelta(seconds=30),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=10),
}


# The publish job publishes what the quality gate task of the same DAG run audited (its return value).
PUBLISH_ARGS = ["--audit", "{{ ti.xcom_pull(task_ids='quality_gate') }}"]


def state_asset() -> Asset:
    """The committed state: lakemeta_incremental's commit produces it, lakemeta_discovery runs on it."""
    catalog = load_config().catalog
    if catalog is None:
        return Asset(name="lakemeta_state")
    state = catalog / "state"
    return Asset(name="lakemeta_state", uri=f"file://{state}" if state.is_local else state.uri)


def spark_step(
    task_id: str, job: str, application_args: Sequence[str] = (), outlets: Sequence[Asset] = ()
) -> SparkSubmitOperator:
    """spark-submit of ``jobs/<job>`` through the ``spark_default`` connection, with Delta's jars and the
    configured catalog (its embedded metastore lives beside it) and the storage of the lake and catalog."""
    config = load_config()
    return SparkSubmitOperator(
        task_id=task_id,
        application=str(REPO / "jobs" / job),
        application_args=list(application_args),
        outlets=list(outlets),
        conn_id="spark_default",
        spark_binary=SPARK_SUBMIT,
        jars=",".join(delta_jars()),
        conf=spark_conf(config.catalog, [config.lake]),
        env_vars=spark_environment(),
        name=f"lakemeta {task_id}",
        driver_memory="4g",
        verbose=False,
    )
