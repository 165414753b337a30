"""lakemeta_rebuild: triggered by hand, drop all state and recompute it, and every discovery result, from
the lake's current snapshots; then audit the catalog and publish it.

Wiring only. The trigger form asks for the word `rebuild` as confirmation: a run without it fails its
param validation and starts nothing.
"""

from __future__ import annotations

import pendulum
from airflow.sdk import Param, dag, task

from lakemeta.spark.dag_tasks import DEFAULT_ARGS, PUBLISH_ARGS, spark_step
from lakemeta.tasks import quality_gate


@dag(
    dag_id="lakemeta_rebuild",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    default_args=DEFAULT_ARGS,
    tags=["lakemeta"],
    doc_md=__doc__,
    params={
        "confirm": Param(
            type="string",
            enum=["rebuild"],
            title="Confirmation",
            description="Type rebuild: all state is dropped and recomputed from the current snapshots.",
        ),
    },
)
def lakemeta_rebuild() -> None:
    rebuild = spark_step("rebuild_state", "rebuild_state")
    gate = task(task_id="quality_gate")(quality_gate)()
    rebuild >> gate >> spark_step("publish", "publish_catalog", PUBLISH_ARGS)


lakemeta_rebuild()
