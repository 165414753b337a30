"""The pipeline's steps, shared by `lakemeta run`, the spark-submit jobs and so the DAGs.

A run: plan the batches (or resume the unfinished plan) -> update every state component -> commit the
watermarks -> refresh the catalog tables derived from state. Each step is idempotent, so a run that
died at any point is finished by running it again.
"""

from __future__ import annotations

import logging
from pathlib import Path

from pyspark.sql import SparkSession
from tqdm import tqdm

from lakemeta.catalog import STATE_SCHEMAS, Catalog
from lakemeta.catalog.refresh import refresh_tables_and_columns
from lakemeta.config import Config
from lakemeta.lake.batches import Plan, abandon_open_runs, commit_plan, open_plan, running_plan
from lakemeta.profile.column_profile import update_column_profile

log = logging.getLogger(__name__)


class Pipeline:
    def __init__(self, spark: SparkSession, config: Config) -> None:
        lake, catalog_root = config.require_paths()
        if not lake.is_dir():
            raise FileNotFoundError(f"lake folder {lake} does not exist")
        self.config = config
        self.lake: Path = lake
        self.catalog = Catalog(spark, catalog_root)
        self.catalog.ensure_tables()

    def detect(self) -> Plan:
        return open_plan(self.catalog, self.lake)

    def running(self) -> Plan | None:
        """The planned, uncommitted run; later steps only ever continue it, never plan anew."""
        plan = running_plan(self.catalog)
        if plan is None:
            log.info("no run in progress: nothing to do")
        return plan

    def update_state(self, plan: Plan) -> None:
        update_column_profile(self.catalog, self.lake, plan)

    def commit(self, plan: Plan) -> None:
        commit_plan(self.catalog, plan)
        refresh_tables_and_columns(self.catalog)

    def run(self) -> Plan:
        """All steps in this process, with a progress bar on a terminal."""
        with tqdm(total=3, desc="run", unit="step", disable=None) as progress:
            progress.set_postfix_str("detect batches")
            plan = self.detect()
            progress.update()
            progress.set_postfix_str(f"update state of {len(plan.batches)} tables")
            self.update_state(plan)
            progress.update()
            progress.set_postfix_str("commit")
            self.commit(plan)
            progress.update()
        return plan

    def rebuild(self) -> Plan:
        """Drop all state (watermarks included) and recompute it from the lake's current snapshots."""
        abandon_open_runs(self.catalog)
        for name in STATE_SCHEMAS:
            self.catalog.truncate(name)
        log.info("state dropped: %d state tables truncated", len(STATE_SCHEMAS))
        return self.run()
