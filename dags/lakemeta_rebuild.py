"""lakemeta_rebuild: triggered by hand, drop all state and recompute it, and every discovery result, from
the lake's current snapshots; then audit the catalog and publish it.

Wiring only. The trigger form asks for the word `rebuild` as confirmation: a run without it fails its
param validation and starts nothing.
"""

from __future__ import annotations

from airflow.sdk import Param, dag

from lakemeta.orchestration.dag_settings import dag_arguments
from lakemeta.orchestration.spark_tasks import publish_step, quality_gate_step, spark_step


@dag(
    dag_id="lakemeta_rebuild",
    schedule=None,
    max_active_runs=1,
    doc_md=__doc__,
    params={
        "confirm": Param(
            type="string",
            enum=["rebuild"],
            title="Confirmation",
            description="Type rebuild: all state is dropped and recomputed from the current snapshots.",
        ),
    },
    **dag_arguments(),
)
def lakemeta_rebuild() -> None:
    rebuild = spark_step("rebuild_state", "rebuild_state")
    gate = quality_gate_step()
    rebuild >> gate >> publish_step()


lakemeta_rebuild()
