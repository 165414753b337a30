"""Entry point shared by the spark-submit jobs under jobs/: parse arguments, open a session, run a step."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from lakemeta.config import load_config, parse_settings
from lakemeta.joinsearch.joinable import format_matches, parse_key_columns
from lakemeta.lake.batches import Plan
from lakemeta.logs import configure_logging
from lakemeta.pipeline import Pipeline
from lakemeta.quality.gate import Audit
from lakemeta.spark import get_session, metastore_conf


def _continue_run(step: Callable[[Pipeline, Plan], None]) -> Callable[[Pipeline], None]:
    """A step after detect works on the run detect planned; a retry after that run committed does
    nothing (planning anew here would commit batches whose state was never updated)."""

    def run(pipeline: Pipeline) -> None:
        plan = pipeline.running()
        if plan is not None:
            step(pipeline, plan)

    return run


def _update(component: str) -> Callable[[Pipeline], None]:
    return _continue_run(lambda pipeline, plan: pipeline.update_state(plan, component))


STEPS: dict[str, Callable[[Pipeline], object]] = {
    "detect": Pipeline.detect,
    "update_column_profile": _update("column_profile"),
    "update_hll_counters": _update("hll_counters"),
    "update_agree_sets": _update("agree_sets"),
    "update_posting_lists": _update("posting_lists"),
    "commit": lambda pipeline: pipeline.commit(pipeline.running()),
    "keys_and_dependencies": Pipeline.derive_keys_and_dependencies,
    "inclusion_estimates": lambda pipeline: pipeline.discover("inclusion_estimates"),
    "inclusion_dependencies": lambda pipeline: pipeline.discover("inclusion_dependencies"),
    "fk_candidates": lambda pipeline: pipeline.discover("fk_candidates"),
    "rebuild": Pipeline.rebuild,
}


def _parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--lake", type=Path, help="lake root (default: LAKEMETA_LAKE / config file)")
    parser.add_argument("--catalog", type=Path, help="catalog root (default: LAKEMETA_CATALOG / config file)")
    parser.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override a configuration value, e.g. fks.inclusion_threshold=0.95 (repeatable)",
    )
    return parser


def _open(name: str, args: argparse.Namespace, metastore: bool = False) -> Pipeline:
    configure_logging()
    config = load_config({**parse_settings(args.settings), "lake": args.lake, "catalog": args.catalog})
    _lake, catalog = config.require_paths()
    extra_conf = metastore_conf(config.metastore_uri) if metastore else None
    spark = get_session(
        config.spark_master, app_name=f"lakemeta {name}", catalog=catalog, extra_conf=extra_conf
    )
    logging.getLogger("lakemeta").info("%s: lake %s, catalog %s", name, config.lake, catalog)
    return Pipeline(spark, config)


def main(step: str, argv: Sequence[str] | None = None) -> None:
    args = _parser(f"lakemeta pipeline step: {step}").parse_args(argv)
    STEPS[step](_open(step, args))


def joinable_search(argv: Sequence[str] | None = None) -> None:
    """The joinable-table search of a manually triggered DAG run (MATE §6), stored under ``--query-id``."""
    parser = _parser("lakemeta joinable-table search")
    parser.add_argument("--query", required=True, help="lake table name, or CSV / Parquet file in the lake")
    parser.add_argument("--key", required=True, help="key columns of the query, comma-separated")
    parser.add_argument("--k", type=int, required=True)
    parser.add_argument("--hash-bits", type=int, required=True, choices=[128, 256, 512])
    parser.add_argument("--query-id", required=True)
    args = parser.parse_args(argv)
    pipeline = _open("joinable search", args)
    keys = parse_key_columns(args.key)
    matches = pipeline.search_joinable(args.query, keys, args.k, args.hash_bits, args.query_id)
    logging.getLogger("lakemeta").info("joinable search %s:\n%s", args.query_id, format_matches(matches))


def publish(argv: Sequence[str] | None = None) -> None:
    """Publish the catalog versions that the audit ``--audit`` (the quality gate's results) passed."""
    parser = _parser("lakemeta publish")
    parser.add_argument("--audit", type=Path, required=True, help="the quality gate's results (JSON)")
    args = parser.parse_args(argv)
    _open("publish", args, metastore=True).publish(Audit.load(args.audit))
