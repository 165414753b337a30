"""The Airflow tasks that run a step on the Spark Connect server (shared by the DAG files).

Each task is the Spark provider's ``@task.pyspark`` operator on the connection ``lakemeta_connect`` (type
``spark_connect``): the task process opens a session of the server (``lakemeta.spark.connect``), runs the
step of ``lakemeta.orchestration.steps`` on it with the task's parameters, and closes its client, so no
task starts a JVM. The jobs under jobs/ run the same steps under spark-submit, for schedulers other than
these DAGs.

The Spark tasks of one DAG run share one session (``connect.run_session_id``), which keeps its Python
workers warm from task to task; the server ends it once idle. The steps that commit under a Delta
transaction set in the session's configuration (``Step.own_session``: the state updates, the rebuild) are
the exception: each opens a session of its own and releases it.

With Airflow's OpenLineage provider configured, each task's COMPLETE event lists the tables its step
read and wrote (``lineage``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook
from airflow.providers.apache.spark.operators.spark_pyspark import PySparkOperator
from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import Asset, BaseHook

from lakemeta.orchestration.dag_settings import PUBLISHED_ASSET, SPARK_POOL
from lakemeta.orchestration.steps import STEPS, run_step
from lakemeta.spark.connect import AIRFLOW_CONNECTION


class SparkStepOperator(PySparkOperator):
    """The provider's PySparkOperator, on its DAG run's Connect session unless the step needs its own
    (module docstring), which also tells Airflow's OpenLineage provider, when it is on, the tables its
    step read and wrote."""

    def execute(self, context: Any) -> Any:
        from lakemeta.orchestration import lineage  # loads the catalog and the lake: at run time

        self.run_id = context["run_id"]
        watch = lineage.StepWatch(self.op_args[0]) if lineage.lineage_enabled() else None
        try:
            return super().execute(context)
        finally:
            if watch is not None:
                self.step_lineage = watch.finish()

    def execute_callable(self) -> Any:
        from lakemeta.spark.connect import attach_session, open_session, run_session_id, session_url
        from lakemeta.spark.interruption import task_tag
        from lakemeta.spark.serving import require_serving

        connection = BaseHook.get_connection(self.conn_id)
        url = SparkConnectHook(self.conn_id).get_connection_url()
        require_serving(url)  # a server that is not there fails the task in seconds, saying what to start
        conf = {"spark.app.name": f"{self.dag_id}-{self.task_id}"}
        conf.update((key, str(value)) for key, value in connection.extra_dejson.items())
        if STEPS[self.op_args[0]].own_session:
            spark = open_session(url, conf)  # released when the task ends
        else:
            session_id = run_session_id(self.dag_id, self.run_id)
            spark, shared = attach_session(url, session_id, conf["spark.app.name"], conf)
            if shared:
                self.log.info("on the run's Connect session %s", session_id)
            else:
                self.log.info("on a Connect session of its own: the run's, %s, has ended", session_id)
        # Every operation of this attempt carries its tag: ``on_kill`` interrupts them on the server.
        self.job_tag, self.session_url = task_tag(), session_url(url, spark.session_id)
        spark.addTag(self.job_tag)
        try:
            self.op_kwargs = {**self.op_kwargs, "spark": spark}
            return PythonOperator.execute_callable(self)
        finally:
            spark.stop()

    def on_kill(self) -> None:
        """Airflow kills the task (SIGTERM, or its timeout): interrupt the step's operations on the Connect
        server and return once none runs, so that no job of this attempt outlives it and races the retry.
        A client of its own does it: the task's may be waiting in its call when the signal comes."""
        from lakemeta.spark.connect import interrupt_on_server

        if getattr(self, "job_tag", None):
            interrupt_on_server(self.session_url, self.job_tag)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """The provider's lineage of the step (the DefaultExtractor calls this after ``execute``)."""
        from lakemeta.orchestration import lineage

        return getattr(self, "step_lineage", lineage.StepLineage()).operator_lineage()


def spark_step(
    task_id: str,
    step: str,
    /,
    settings: Sequence[str] = (),
    outlets: Sequence[Asset] = (),
    **parameters: Any,
) -> PySparkOperator:
    """The task that runs step ``step`` of ``lakemeta.orchestration.steps.STEPS`` (``discover``,
    ``update_state``...) with ``parameters`` and the ``settings`` (``SECTION.KEY=VALUE``), both templated,
    on the Connect server of the ``lakemeta_connect`` connection, in the pool ``lakemeta_spark``."""
    return SparkStepOperator(
        task_id=task_id,
        python_callable=run_step,
        op_args=[step],
        op_kwargs={"parameters": parameters, "settings": list(settings)},
        conn_id=AIRFLOW_CONNECTION,
        pool=SPARK_POOL,
        outlets=list(outlets),
    )


def quality_gate_step() -> PySparkOperator:
    """The quality gate over the catalog as written (``steps.audit_catalog``): its results path is the
    task's XCom. A Spark task though the gate itself needs no Spark: the server loads the audited tables'
    snapshots while the task audits them, which the publication task then finds loaded."""
    return spark_step("quality_gate", "audit_catalog")


def publish_step() -> PySparkOperator:
    """The task that publishes what the quality gate task of the same DAG run audited (its return value),
    and on success emits the asset ``lakemeta_catalog_published``."""
    return spark_step(
        "publish",
        "publish_catalog",
        outlets=[PUBLISHED_ASSET],
        audit="{{ ti.xcom_pull(task_ids='quality_gate') }}",
    )
