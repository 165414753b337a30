"""The pipeline's steps, shared by `lakemeta run`, the spark-submit jobs and so the DAGs.

A run: plan the batches (or resume the unfinished plan) -> update every state component (independent of
each other, so the DAG runs them in parallel) -> commit: derive the changed tables' keys and FDs, advance
the watermarks, refresh the catalog tables derived from state -> discovery over the state and tables
(inclusion estimates, inclusion dependencies). Each step is idempotent, so a run that died at any point
is finished by running it again. Every step holds the catalog's state lock shared and a rebuild holds it
alone (``Catalog.using_state``, ``Catalog.replacing_state``), so a rebuild never interleaves with a step.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession
from tqdm import tqdm

from lakemeta.agreesets.agree_set_state import (
    refresh_keys_and_dependencies,
    unique_column_flags,
    update_agree_sets,
)
from lakemeta.catalog import STATE_SCHEMAS, Catalog
from lakemeta.catalog.database import publish_catalog
from lakemeta.catalog.refresh import refresh_tables_and_columns
from lakemeta.config import Config
from lakemeta.fks.fk_candidates import refresh_fk_candidates
from lakemeta.inds.lake_inds import refresh_inclusion_dependencies
from lakemeta.joinsearch.joinable import JoinableMatch, search_lake
from lakemeta.joinsearch.posting_state import update_posting_lists
from lakemeta.lake.batches import Plan, abandon_open_runs, commit_plan, open_plan, running_plan
from lakemeta.profile.column_profile import update_column_profile
from lakemeta.quality.gate import Audit, audit_batches, audit_catalog
from lakemeta.sketches.hll_state import column_registers, distinct_estimates, update_hll_counters
from lakemeta.sketches.inclusion import refresh_inclusion_estimates

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
        with self.catalog.using_state("planning a run"):
            return open_plan(self.catalog, self.lake)

    def running(self) -> Plan | None:
        """The planned, uncommitted run; later steps only ever continue it, never plan anew."""
        plan = running_plan(self.catalog.root)
        if plan is None:
            log.info("no run in progress")
        return plan

    def state_components(self) -> dict[str, Callable[[Plan], object]]:
        """Each state component's update of a plan's batches, by name (DAG tasks and jobs use the names)."""
        return {
            "column_profile": lambda plan: update_column_profile(self.catalog, self.lake, plan),
            "hll_counters": lambda plan: update_hll_counters(
                self.catalog, self.lake, plan, self.config.sketches.precision
            ),
            "agree_sets": lambda plan: update_agree_sets(
                self.catalog, self.lake, plan, self.config.agree_sets
            ),
            "posting_lists": lambda plan: update_posting_lists(
                self.catalog, self.lake, plan, self.config.joinsearch
            ),
        }

    def update_state(self, plan: Plan, component: str | None = None) -> None:
        """Apply the plan to one state component, or to all of them when ``component`` is None."""
        components = self.state_components()
        with self.catalog.using_state(f"updating the state for run {plan.run_id}"):
            if not self._in_progress(plan):
                return
            for name in [component] if component else components:
                components[name](plan)

    def _in_progress(self, plan: Plan) -> bool:
        """Whether ``plan`` is still the run in progress: a rebuild abandons it, and then its steps that
        had not run must not apply it to the rebuilt state (checked under the state lock)."""
        current = running_plan(self.catalog.root)
        if current is not None and current.run_id == plan.run_id:
            return True
        log.warning(
            "run %d is no longer in progress (committed, or abandoned by a rebuild): skipped", plan.run_id
        )
        return False

    def commit(self, plan: Plan | None) -> None:
        """Derive the plan's keys and FDs, commit its watermarks, refresh ``tables`` and ``columns``.

        The derivation comes first: once the watermarks are committed the plan is no longer resumed, so a
        retry of a commit that died after them (``plan`` None), and the commit of a run a rebuild abandoned,
        only refresh the catalog tables, which are recomputed whole from the state.
        """
        with self.catalog.using_state("committing a run"):
            if plan is not None and self._in_progress(plan):
                refresh_keys_and_dependencies(
                    self.catalog, self.config.agree_sets, sorted({batch.table_name for batch in plan.batches})
                )
                commit_plan(self.catalog, plan)
            registers = column_registers(self.catalog, self.config.sketches.precision)
            profile = self.catalog.read_small("state/column_profile")
            metrics = [
                distinct_estimates(registers, profile),
                unique_column_flags(self.catalog, self.config.agree_sets),
            ]
            refresh_tables_and_columns(self.catalog, metrics)

    def discoveries(self) -> dict[str, Callable[[], object]]:
        """Each discovery over the committed state and tables, by name (DAG tasks and jobs use the names),
        in an order that runs them all: each is a deterministic function of the state, the tables and the
        configuration, and ``fk_candidates`` also of ``inclusion_estimates`` (its phase 1)."""
        return {
            "inclusion_estimates": lambda: refresh_inclusion_estimates(self.catalog, self.config.sketches),
            "inclusion_dependencies": lambda: refresh_inclusion_dependencies(
                self.catalog, self.lake, self.config.inds
            ),
            "fk_candidates": lambda: refresh_fk_candidates(
                self.catalog, self.lake, self.config.fks, self.config.sketches
            ),
        }

    def derive_keys_and_dependencies(self) -> None:
        """Keys and FDs of every table from the agree-set state, with this configuration's thresholds: the
        discovery DAG's first step, for runs triggered with another ``max_fd_error`` (the commit derives
        them for the changed tables already, so ``run`` does not repeat it)."""
        with self.catalog.using_state("deriving keys and dependencies"):
            refresh_keys_and_dependencies(self.catalog, self.config.agree_sets)

    def discover(self, discovery: str | None = None) -> None:
        """Run one discovery, or all of them when ``discovery`` is None."""
        discoveries = self.discoveries()
        with self.catalog.using_state(discovery or "discovery"):
            for name in [discovery] if discovery else discoveries:
                discoveries[name]()

    def run(self) -> Plan:
        """All steps in this process, with a progress bar on a terminal; a rebuild started meanwhile waits
        for the whole run."""
        components, discoveries = self.state_components(), self.discoveries()
        total = len(components) + len(discoveries) + 3
        with (
            self.catalog.using_state("a run"),
            tqdm(total=total, desc="run", unit="step", disable=None) as progress,
        ):
            progress.set_postfix_str("detect batches")
            plan = self.detect()
            progress.update()
            progress.set_postfix_str("audit batches for schema drift")
            audit_batches(self.catalog.root, self.lake)
            progress.update()
            for name in components:
                progress.set_postfix_str(f"update {name} of {len(plan.batches)} tables")
                self.update_state(plan, name)
                progress.update()
            progress.set_postfix_str("commit")
            self.commit(plan)
            progress.update()
            for name in discoveries:
                progress.set_postfix_str(name.replace("_", " "))
                self.discover(name)
                progress.update()
        return plan

    def audit(self) -> Audit:
        """The quality gate over the catalog as written (``lakemeta.quality``); the results are kept."""
        return audit_catalog(self.catalog.root)

    def publish(self, audit: Audit) -> int:
        """Publish the audited versions of the catalog's tables (the session needs a metastore:
        ``metastore_conf``); a failed audit raises QualityGateError. Returns the number of tables."""
        return publish_catalog(self.catalog, audit)

    def search_joinable(
        self, source: str, key_columns: list[str], k: int, hash_bits: int, query_id: str
    ) -> list[JoinableMatch]:
        """The top-k joinable tables for a query table of the lake (MATE §6), stored under ``query_id``."""
        self.catalog.spark.sparkContext.setJobDescription(f"joinable search {query_id}: {source}")
        with self.catalog.using_state(f"joinable search {query_id}"):
            return search_lake(
                self.catalog, self.lake, source, key_columns, k, hash_bits, query_id, self.config.ingest
            )

    def rebuild(self) -> Plan:
        """Drop all state (watermarks included) and recompute it from the lake's current snapshots, holding
        the state alone: it waits for the steps in progress, and the run in progress is abandoned (its
        remaining steps find that and skip)."""
        with self.catalog.replacing_state():
            abandon_open_runs(self.catalog)
            for name in STATE_SCHEMAS:
                self.catalog.truncate(name)
            log.info("state dropped: %d state tables truncated", len(STATE_SCHEMAS))
            return self.run()
