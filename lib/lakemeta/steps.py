"""Entry point shared by the spark-submit jobs under jobs/: parse arguments, open a session, run a step."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from lakemeta.config import load_config
from lakemeta.lake.batches import Plan
from lakemeta.logs import configure_logging
from lakemeta.pipeline import Pipeline
from lakemeta.spark import get_session


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
    "commit": _continue_run(Pipeline.commit),
    "inclusion_estimates": Pipeline.discover,
    "rebuild": Pipeline.rebuild,
}


def main(step: str, argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=f"lakemeta pipeline step: {step}")
    parser.add_argument("--lake", type=Path, help="lake root (default: LAKEMETA_LAKE / config file)")
    parser.add_argument("--catalog", type=Path, help="catalog root (default: LAKEMETA_CATALOG / config file)")
    args = parser.parse_args(argv)
    configure_logging()
    config = load_config({"lake": args.lake, "catalog": args.catalog})
    _lake, catalog = config.require_paths()
    spark = get_session(config.spark_master, app_name=f"lakemeta {step}", catalog=catalog)
    logging.getLogger("lakemeta").info("step %s: lake %s, catalog %s", step, config.lake, catalog)
    STEPS[step](Pipeline(spark, config))
