"""lakemeta_maintenance: daily, compact, checkpoint and VACUUM every state and catalog table
(`lakemeta.orchestration.maintenance`), keeping the versions of the retention window
(`maintenance.retention_days`) and the published ones.

Wiring only. One Python task: delta-rs does the work, no Spark. It holds the state lease alone, so a run's
steps that start meanwhile wait for it (and it for them).
"""

from __future__ import annotations

from airflow.sdk import dag, task

from lakemeta.orchestration.dag_settings import dag_arguments, maintenance_schedule
from lakemeta.orchestration.python_tasks import maintain_catalog


@dag(
    dag_id="lakemeta_maintenance",
    schedule=maintenance_schedule(),
    max_active_runs=1,
    doc_md=__doc__,
    **dag_arguments(),
)
def lakemeta_maintenance() -> None:
    task(task_id="maintain_catalog")(maintain_catalog)()


lakemeta_maintenance()
