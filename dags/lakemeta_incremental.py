"""lakemeta_incremental: on a schedule, bring the state up to date with the lake's changes.

Wiring only. Detect the batches from the Delta logs (a Python task, no JVM); when no table changed it
opens no run and skips the rest, so no asset is published and no discovery starts. Otherwise read the
batches once for every state component (`scan_batches`), apply them to every state component of the
registry (`lakemeta.registry.STATE_COMPONENTS`, one task `update_<component>` each) in parallel, while the
batches are audited for schema drift (reported in the log and the results; no JVM), then commit the
watermarks, which publishes the asset `lakemeta_state` that schedules `lakemeta_discovery`. The Spark
steps run on the Spark Connect server of the `lakemeta_connect` connection
(`lakemeta.orchestration.spark_tasks`), no JVM per task. The lake and catalog come from LAKEMETA_LAKE /
LAKEMETA_CATALOG / LAKEMETA_CONFIG in the task's environment; the steps are idempotent, so retries are
safe.
"""

from __future__ import annotations

from airflow.sdk import dag, task

from lakemeta.orchestration.dag_settings import STATE_ASSET, dag_arguments, incremental_schedule
from lakemeta.orchestration.python_tasks import batch_audit, detect_batches
from lakemeta.orchestration.spark_tasks import spark_step
from lakemeta.registry import STATE_COMPONENTS


@dag(
    dag_id="lakemeta_incremental",
    schedule=incremental_schedule(),
    max_active_runs=1,
    doc_md=__doc__,
    **dag_arguments(),
)
def lakemeta_incremental() -> None:
    detect = task.short_circuit(task_id="detect_batches")(detect_batches)()
    scan = spark_step("scan_batches", "scan_batches")
    state_updates = [
        spark_step(entry.task_id, "update_state", component=entry.name) for entry in STATE_COMPONENTS
    ]
    audit = task(task_id="batch_audit")(batch_audit)()
    commit = spark_step("commit_batches", "commit_batches", outlets=[STATE_ASSET])
    detect >> scan >> state_updates >> commit
    detect >> audit >> commit  # the audit compares with the catalog before the commit


lakemeta_incremental()
