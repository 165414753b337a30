"""The steps as the DAGs' tasks (on a Spark Connect session, ``lakemeta.orchestration.dag_tasks``) and the
spark-submit jobs under jobs/ run them: parse arguments, open or take a session, run one step.

A step has one name everywhere: the DAG task, the job and the logs (``scan_batches``,
``update_<component>``, ``commit_batches``, a discovery step's name, ``rebuild_state``); state components
and discovery steps are the registry's (``lakemeta.registry``).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from pyspark.sql import SparkSession

from lakemeta.config import (
    Config,
    add_joinable_query_arguments,
    add_location_arguments,
    add_settings_argument,
    load_config,
    parse_settings,
)
from lakemeta.joinsearch.discover import format_matches, parse_key_columns
from lakemeta.logs import configure_logging
from lakemeta.pipeline import Pipeline
from lakemeta.quality.gate import require_success
from lakemeta.quality.results import Audit
from lakemeta.registry import DISCOVERY_STEPS, STATE_COMPONENTS
from lakemeta.spark import get_session, metastore_conf


def _parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    add_location_arguments(parser)
    add_settings_argument(parser)
    return parser


def _config(args: argparse.Namespace) -> Config:
    configure_logging()
    return load_config({**parse_settings(args.settings), "lake": args.lake, "catalog": args.catalog})


def _open(
    name: str, args: argparse.Namespace, spark: SparkSession | None, metastore: bool = False
) -> Pipeline:
    """The step's pipeline on ``spark`` (a Spark Connect session Airflow opened for the task) or, without
    one, on a session of this process (under spark-submit, or the configured ``spark_remote``)."""
    config = _config(args)
    lake, catalog = config.require_paths()
    extra_conf = metastore_conf(config.metastore_uri) if metastore else None
    if spark is None:
        spark = get_session(
            config.spark_master,
            app_name=f"lakemeta {name}",
            catalog=catalog,
            extra_conf=extra_conf,
            locations=[lake],
            remote=config.spark_remote,
        )
    logging.getLogger("lakemeta").info("%s: lake %s, catalog %s", name, config.lake, catalog)
    return Pipeline(spark, config)


def scan_batches(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> None:
    """Read the running run's batches once for every state component (``lakemeta.scan``)."""
    args = _parser("lakemeta step scan_batches: read the run's batches once for every component").parse_args(
        argv
    )
    pipeline = _open("scan_batches", args, spark)
    plan = pipeline.running()
    if plan is not None:
        pipeline.scan_batches(plan)


def update_state(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> None:
    """Apply the running run's batches to one registered state component. A retry after the run committed
    does nothing: planning anew here would commit batches whose state was never updated."""
    parser = _parser("lakemeta step update_<component>: apply the run's batches to one state component")
    parser.add_argument("component", choices=[entry.name for entry in STATE_COMPONENTS])
    args = parser.parse_args(argv)
    pipeline = _open(f"update_{args.component}", args, spark)
    plan = pipeline.running()
    if plan is not None:
        pipeline.update_state(plan, args.component)


def commit_batches(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> None:
    """Commit the running run: keys and FDs of its tables, watermarks, ``tables`` and ``columns``."""
    args = _parser("lakemeta step commit_batches: commit the run's batches").parse_args(argv)
    pipeline = _open("commit_batches", args, spark)
    pipeline.commit_batches(pipeline.running())


def discover(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> None:
    """Run one registered discovery step over the committed state and tables, unless its results are
    current."""
    parser = _parser("lakemeta discovery step")
    parser.add_argument("step", choices=[step.name for step in DISCOVERY_STEPS])
    args = parser.parse_args(argv)
    pipeline = _open(args.step, args, spark)
    # As `lakemeta run`: a step whose results reflect the newest committed run with these settings (the
    # keys and FDs, which the commit derives for the changed tables) has nothing to do.
    if not pipeline.discover(args.step, if_stale=True):
        logging.getLogger("lakemeta").info("%s: results current, nothing to do", args.step)


def rebuild_state(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> None:
    """Drop all state and recompute it from the lake's current snapshots."""
    args = _parser("lakemeta step rebuild_state: drop the state and recompute it").parse_args(argv)
    _open("rebuild_state", args, spark).rebuild()


def joinable_search(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> None:
    """The joinable-table search of a manually triggered DAG run (MATE §6), stored under ``--query-id``."""
    parser = _parser("lakemeta joinable-table search")
    add_joinable_query_arguments(parser)
    parser.add_argument("--query-id", required=True)
    args = parser.parse_args(argv)
    pipeline = _open("joinable search", args, spark)
    search = pipeline.config.joinsearch
    k = search.k if args.k is None else args.k
    hash_bits = search.hash_bits if args.hash_bits is None else args.hash_bits
    keys = parse_key_columns(args.key)
    matches = pipeline.search_joinable(args.query, keys, k, hash_bits, args.query_id)
    logging.getLogger("lakemeta").info("joinable search %s:\n%s", args.query_id, format_matches(matches))


def audit_catalog(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> str:
    """The quality gate over the catalog as written: the results' path, which the publication reads, or
    QualityGateError naming the failed expectations (the DAG run fails and nothing is published). The gate
    itself needs no Spark, and without ``spark`` (a spark-submit of jobs/) it opens no session; on a DAG
    task's session the server loads the audited tables' snapshots meanwhile, so that the publication
    task finds them loaded (``Pipeline.audit``)."""
    args = _parser("lakemeta step audit_catalog: the quality gate over the catalog").parse_args(argv)
    return str(require_success(Pipeline(spark, _config(args)).audit()).path)


def publish_catalog(argv: Sequence[str] | None = None, spark: SparkSession | None = None) -> None:
    """Publish the catalog versions that the audit ``--audit`` (the quality gate's results) passed."""
    parser = _parser("lakemeta publish")
    parser.add_argument("--audit", required=True, help="the quality gate's results (JSON): a path or URI")
    args = parser.parse_args(argv)
    _open("publish", args, spark, metastore=True).publish(Audit.load(args.audit))
