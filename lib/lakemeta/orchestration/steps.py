"""The steps the DAGs' Spark tasks (``spark_tasks``) and the spark-submit jobs under jobs/ run, as one typed
table: a step's name, the function that runs it over a pipeline with its typed parameters, and what session
it needs. ``run_step`` is the one way to run one: a DAG task hands it the parameters as keyword arguments
(Airflow renders their templates), a job the ones it parsed from its command line.

A step has one name everywhere: the DAG task, the job and the logs (``scan_batches``,
``update_<component>``, ``commit_batches``, a discovery step's name, ``rebuild_state``); state components
and discovery steps are the registry's (``lakemeta.registry``).

DAG files import this when they are parsed (through ``spark_tasks``), so it imports only the configuration
and the logs; a step imports the pipeline, Spark and what it runs when it runs.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lakemeta.config import Config, add_location_arguments, add_settings_argument, load_config, parse_settings
from lakemeta.logs import configure_logging

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lakemeta.orchestration.pipeline import Pipeline

log = logging.getLogger("lakemeta")


def scan_batches(pipeline: Pipeline) -> None:
    """Read the running run's batches once for every state component (``lakemeta.scan``)."""
    plan = pipeline.running()
    if plan is not None:
        pipeline.scan_batches(plan)


def update_state(pipeline: Pipeline, component: str) -> None:
    """Apply the running run's batches to the registered state component ``component``. A retry after the
    run committed does nothing: planning anew here would commit batches whose state was never updated."""
    plan = pipeline.running()
    if plan is not None:
        pipeline.update_state(plan, component)


def commit_batches(pipeline: Pipeline) -> None:
    """Commit the running run: keys and FDs of its tables, watermarks, ``tables`` and ``columns``."""
    pipeline.commit_batches(pipeline.running())


def discover(pipeline: Pipeline, step: str) -> None:
    """Run the registered discovery step ``step`` over the committed state and tables, unless its results
    are current."""
    # As `lakemeta run`: a step whose results reflect the newest committed run with these settings (the
    # keys and FDs, which the commit derives for the changed tables) has nothing to do.
    if not pipeline.discover(step, if_stale=True):
        log.info("%s: results current, nothing to do", step)


def rebuild_state(pipeline: Pipeline) -> None:
    """Drop all state and recompute it from the lake's current snapshots."""
    pipeline.rebuild()


def joinable_search(
    pipeline: Pipeline,
    query: str,
    key: str,
    query_id: str,
    k: int | None = None,
    hash_bits: int | None = None,
) -> None:
    """The joinable-table search (MATE §6) of the lake table or file ``query`` on its comma-separated key
    columns ``key``, stored under ``query_id``; ``k`` and ``hash_bits`` default to the configuration's."""
    from lakemeta.joinsearch.discover import format_matches, parse_key_columns

    search = pipeline.config.joinsearch
    matches = pipeline.search_joinable(
        query,
        parse_key_columns(key),
        search.k if k is None else k,
        search.hash_bits if hash_bits is None else hash_bits,
        query_id,
    )
    log.info("joinable search %s:\n%s", query_id, format_matches(matches))


def audit_catalog(pipeline: Pipeline) -> str:
    """The quality gate over the catalog as written: the results' path, which the publication reads, or
    QualityGateError naming the failed expectations (the DAG run fails and nothing is published). On a DAG
    task's session the server loads the audited tables' snapshots meanwhile, so that the publication task
    finds them loaded (``Pipeline.audit``)."""
    from lakemeta.quality.gate import require_success

    return str(require_success(pipeline.audit()).path)


def publish_catalog(pipeline: Pipeline, audit: str) -> None:
    """Publish the catalog versions that the audit ``audit`` (the quality gate's results: a path or URI)
    passed."""
    from lakemeta.quality.results import Audit

    pipeline.publish(Audit.load(audit))


@dataclass(frozen=True)
class Step:
    """A step: ``run(pipeline, **parameters)``, and the session it needs."""

    run: Callable[..., Any]
    # Commits under a Delta transaction set in the session's configuration, which in a session shared by
    # the DAG run's tasks another task could set meanwhile: the task opens a Connect session of its own.
    own_session: bool = False
    metastore: bool = False  # registers the published views in the metastore
    spark: bool = True  # False: run outside a DAG task, it opens no Spark session (the gate needs none)

    @property
    def name(self) -> str:
        return self.run.__name__


STEPS: dict[str, Step] = {
    step.name: step
    for step in (
        Step(scan_batches),
        Step(update_state, own_session=True),
        Step(commit_batches),
        Step(discover),
        Step(rebuild_state, own_session=True),
        Step(joinable_search),
        Step(audit_catalog, spark=False),
        Step(publish_catalog, metastore=True),
    )
}


def step_config(settings: Sequence[str] = (), lake: str | None = None, catalog: str | None = None) -> Config:
    """The configuration a step runs with: the configured one, ``settings`` (``SECTION.KEY=VALUE``, as
    ``--set`` takes them) and the locations over it."""
    configure_logging()
    return load_config({**parse_settings(settings), "lake": lake, "catalog": catalog})


def run_step(
    name: str,
    parameters: Mapping[str, Any] | None = None,
    config: Config | None = None,
    spark: SparkSession | None = None,
    settings: Sequence[str] = (),
) -> Any:
    """Run step ``name`` with ``parameters`` (its function's keyword arguments) on ``spark`` (the Connect
    session Airflow opened for the task) or, without one, on a session of this process (under
    spark-submit, or the configured ``spark_remote``); ``config`` is :func:`step_config`'s with
    ``settings`` unless given. What the step returns is the task's XCom (the quality gate's results path,
    which the publication reads). No ``**kwargs``: Airflow hands a callable that takes them the whole task
    context."""
    parameters = dict(parameters or {})
    from lakemeta.orchestration.pipeline import Pipeline
    from lakemeta.spark import get_session, metastore_conf

    step = STEPS[name]
    config = step_config(settings) if config is None else config
    lake, catalog = config.require_paths()
    if spark is None and step.spark:
        spark = get_session(
            config.spark_master,
            app_name=f"lakemeta {name}",
            catalog=catalog,
            extra_conf=metastore_conf(config.metastore_uri) if step.metastore else None,
            locations=[lake],
            remote=config.spark_remote,
        )
    shown = ", ".join(f"{key} {value}" for key, value in parameters.items())
    log.info("%s%s: lake %s, catalog %s", name, f" ({shown})" if shown else "", config.lake, catalog)
    return step.run(Pipeline(spark, config), **parameters)


def job_parser(name: str) -> argparse.ArgumentParser:
    """The command line of step ``name``'s job under jobs/: the locations and settings, to which the job
    adds its step's parameters before :func:`run_job`."""
    parser = argparse.ArgumentParser(
        prog=f"jobs/{name}.py", description=(STEPS[name].run.__doc__ or "").split("\n\n")[0]
    )
    add_location_arguments(parser)
    add_settings_argument(parser)
    parser.set_defaults(lakemeta_step=name)  # not `step`: the discovery job's parameter is called so
    return parser


def run_job(args: argparse.Namespace, **parameters: Any) -> Any:
    """Run the step of a job's parsed command line (:func:`job_parser`) with ``parameters``."""
    return run_step(args.lakemeta_step, parameters, step_config(args.settings, args.lake, args.catalog))
