"""The pipeline's steps, shared by `lakemeta run`, the spark-submit jobs and so the DAGs.

A run: plan the batches (or resume the unfinished plan) -> read the batches once for every state component
(``lakemeta.scan``) -> update every state component of the registry from that read (independent of each
other, so the DAG runs them in parallel) -> commit: derive the changed tables' keys
and FDs, advance the watermarks, refresh the catalog tables derived from state -> the registry's discovery
steps over the state and tables. Each step is idempotent, so a run that died at any point is finished by
running it again. Every step holds the catalog's state lock shared and a rebuild holds it
alone (``Catalog.using_state``, ``Catalog.replacing_state``), so a rebuild never interleaves with a step.
"""

from __future__ import annotations

import logging

from pyspark.sql import SparkSession
from tqdm import tqdm

from lakemeta.agreesets.discover import refresh_keys_and_dependencies
from lakemeta.catalog.contract import ensure_tables
from lakemeta.catalog.freshness import (
    complete_history,
    newest_committed_run,
    record_discovery,
    reflecting,
    results_freshness,
    stale_results,
)
from lakemeta.catalog.refresh import refresh_tables_and_columns
from lakemeta.catalog.store import report_written
from lakemeta.component import StateComponent
from lakemeta.config import Config
from lakemeta.joinsearch.discover import JoinableMatch, search_lake
from lakemeta.lake.batches import Plan, abandon_open_runs, commit_plan, open_plan, running_plan
from lakemeta.lake.tables import check_lake
from lakemeta.orchestration.publish import load_snapshots_ahead, publication_is_current, publish_audited
from lakemeta.quality.gate import audit_batches, audit_tables, import_audit_modules
from lakemeta.quality.results import Audit
from lakemeta.registry import (
    DERIVED_TABLES,
    DISCOVERY_STEPS,
    RESULT_RECORDS,
    discovery_step,
    open_catalog,
    state_components,
)
from lakemeta.scan import BatchScan, remove_staging
from lakemeta.spark.portable import describe_jobs
from lakemeta.storage import Location

log = logging.getLogger(__name__)


# The discovery step the commit does for the changed tables (``DiscoveryStep.done_by_commit``).
KEYS = next(step.name for step in DISCOVERY_STEPS if step.done_by_commit)


class Pipeline:
    def __init__(self, spark: SparkSession | None, config: Config) -> None:
        """The pipeline over ``config``'s lake and catalog. Without a Spark session (None) it serves the
        steps that need no JVM: planning (``detect_batches``) and ``results_current``."""
        lake, catalog_root = config.require_paths()
        self.config = config
        self.lake: Location = lake
        self.catalog = open_catalog(spark, catalog_root)
        # Both places are checked before anything is written: a wrong bucket, endpoint or credential, or a
        # lake with no Delta table for a new catalog, stops here with nothing written.
        check_lake(lake, new_catalog=not catalog_root.exists())
        ensure_tables(self.catalog)

    def detect_batches(self) -> Plan | None:
        """The run in progress, planned now when none is; None, and no run opened, when no table
        changed (Delta logs only: no Spark)."""
        with self.catalog.using_state("planning a run"):
            return open_plan(self.catalog, self.lake)

    def stale_results(self) -> list[str]:
        """The discovery steps (and ``DERIVED_TABLES``) whose results do not reflect the newest committed
        run with this configuration's settings, in run order."""
        return stale_results(self.catalog, RESULT_RECORDS, self.config)

    def results_current(self) -> bool:
        """Whether every result reflects the newest committed run with these settings and is published:
        with no run in progress (``detect_batches`` None), a run has nothing to do. Reads Delta logs only,
        so ``lakemeta run`` answers without Spark."""
        return not self.stale_results() and publication_is_current(self.catalog.root)

    def running(self) -> Plan | None:
        """The planned, uncommitted run; later steps only ever continue it, never plan anew."""
        plan = running_plan(self.catalog.root)
        if plan is None:
            log.info("no run in progress")
        return plan

    def components(self) -> list[StateComponent]:
        """The registered state components (``lakemeta.registry.STATE_COMPONENTS``), in run order."""
        return [component(self.catalog, self.lake, self.config) for component in state_components()]

    def _named(self, component: str | None) -> list[StateComponent]:
        components = [c for c in self.components() if component is None or c.name == component]
        if not components:
            raise KeyError(f"no state component named {component!r}")
        return components

    def _scan(self, plan: Plan, pending: list[StateComponent]) -> None:
        """The run's scan, run now for those of ``pending`` that no recorded scan covers."""
        scan = BatchScan(self.catalog, self.lake, plan, self.config.scan)
        covered = scan.covered()
        uncovered = [c for c in pending if c.name not in covered]
        if uncovered:
            scan.run(uncovered)

    def scan_batches(self, plan: Plan) -> None:
        """Read the plan's batches once for every state component that has not applied them yet."""
        with self.catalog.using_state(f"scanning the batches of run {plan.run_id}"):
            if self._in_progress(plan):
                self._scan(plan, [c for c in self.components() if not c.applied(plan)])

    def update_state(self, plan: Plan, component: str | None = None) -> None:
        """Apply the plan to one state component (by name), or to all of them when ``component`` is None,
        from the run's scan (run first for the components no recorded scan covers)."""
        components = self._named(component)
        with self.catalog.using_state(f"updating the state for run {plan.run_id}"):
            if not self._in_progress(plan):
                return
            pending = [c for c in components if not c.applied(plan)]
            if pending:
                self._scan(plan, pending)  # one scan for all of them; each then finds it
            for each in pending:
                each.update(plan)
            for each in components:
                if each not in pending and plan.batches:  # committed by an earlier attempt of this step
                    report_written(each.state_table())

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

    def commit_batches(self, plan: Plan | None) -> None:
        """Derive the plan's keys and FDs, commit its watermarks, refresh ``tables`` and ``columns``.

        The derivation comes first: once the watermarks are committed the plan is no longer resumed, so a
        retry of a commit that died after them (``plan`` None), and the commit of a run a rebuild abandoned,
        only refresh the catalog tables, which are recomputed whole from the state. The keys of the plan's
        tables, derived ahead of its commit, are written saying so (``derived_for``) while every other
        table's are current: from the run's commit on, that makes them all current (``freshness``).
        """
        root, settings = self.catalog.root, self.config.discovery_settings()
        records = {name: RESULT_RECORDS[name] for name in (KEYS, DERIVED_TABLES)}
        changed: list[str] | None = None  # the tables whose rows of `columns` are derived again (None: all)
        with self.catalog.using_state("committing a run"):
            if plan is not None and self._in_progress(plan):
                # The unchanged tables' keys stay current if they were (derived over the last committed
                # run with these settings), or when there is no such run: this one covers every table. So
                # do their rows of `columns`.
                last = newest_committed_run(self.catalog)
                keys, tables_and_columns = results_freshness(self.catalog, records, self.config)
                keys_reflect = None  # not current: the discovery derives every table's again
                if last is None or keys.current:
                    keys_reflect = {**reflecting(last, settings, self.config), "derived_for": plan.run_id}
                if last is not None and tables_and_columns.current:
                    changed = plan.tables
                failed = BatchScan(self.catalog, self.lake, plan, self.config.scan).failed()
                refresh_keys_and_dependencies(
                    self.catalog,
                    self.config.agree_sets,
                    sorted({b.table_name for b in plan.without(set(failed)).batches}),
                    self.config.scan.driver_state_bytes,
                    keys_reflect,
                )
                commit_plan(self.catalog, plan, failed)
            running = running_plan(root)
            committed = newest_committed_run(self.catalog)
            remove_staging(self.catalog, keep_run=running.run_id if running else None)
            derived = [component.derive(changed) for component in self.components()]
            metrics = [each for each in derived if each is not None]
            reflects = reflecting(committed, settings, self.config)
            refresh_tables_and_columns(self.catalog, metrics, changed, reflects)
            complete_history(self.catalog, results_freshness(self.catalog, records, self.config))

    def discover(self, step: str | None = None, if_stale: bool = False) -> list[str]:
        """Run one discovery step of the registry (by name), or every one that the commit has not done
        already (``DiscoveryStep.done_by_commit``), in the registry's order; with ``if_stale`` only those
        whose results do not reflect the newest committed run with these settings (``stale_results``,
        checked in the same hold of the state, through the Delta handles the steps go on with). Each is a
        deterministic function of the state, the tables and the configuration, and of the results of the
        steps it comes after. Returns the steps run."""
        steps = [s for s in DISCOVERY_STEPS if s.name == step or (step is None and not s.done_by_commit)]
        if not steps:
            raise KeyError(f"no discovery step named {step!r}")
        settings = self.config.discovery_settings()
        with self.catalog.using_state(step or "discovery"):
            if if_stale:
                found = results_freshness(
                    self.catalog, {each.name: each.record for each in steps}, self.config
                )
                complete_history(self.catalog, found)
                steps = [each for each, fresh in zip(steps, found, strict=True) if not fresh.current]
            for each in steps:
                # Read before the step: a run committing meanwhile is not claimed by its record.
                committed = newest_committed_run(self.catalog)
                discovery_step(each)(self.catalog, self.lake, self.config, committed)
                record_discovery(self.catalog, each.name, committed, settings)
        return [each.name for each in steps]

    def run(self) -> Plan | None:
        """All steps in this process, with a progress bar on a terminal; a rebuild started meanwhile waits
        for the whole run. When no table changed no run is opened, and only the results that do not
        reflect the newest committed run with these settings are computed again (none, usually). Returns
        the run's plan, None when there was none."""
        import_audit_modules()  # for the batch audit and the audit after the run, while Spark works
        components = self.components()
        with self.catalog.using_state("a run"):
            plan = self.detect_batches()
            # The batch audit comes last before the commit, as in the DAG (beside the state updates): Great
            # Expectations' import (seconds) then overlaps the scan and the updates.
            state_steps = ["scan", *(c.name for c in components), "batch audit", "commit"]
            state_steps = [] if plan is None else state_steps
            with tqdm(total=len(state_steps), desc="state", unit="step", disable=None) as progress:
                for step in state_steps:
                    progress.set_postfix_str(f"{step.replace('_', ' ')}: {len(plan.batches)} tables")
                    if step == "scan":
                        self.scan_batches(plan)
                    elif step == "batch audit":
                        audit_batches(self.catalog.root, self.lake)
                    elif step == "commit":
                        self.commit_batches(plan)
                    else:
                        self.update_state(plan, step)
                    progress.update()
            found = results_freshness(self.catalog, RESULT_RECORDS, self.config)
            complete_history(self.catalog, found)
            stale = [each.step for each in found if not each.current]
            with tqdm(total=len(stale), desc="discovery", unit="step", disable=None) as progress:
                for step in stale:
                    progress.set_postfix_str(step.replace("_", " "))
                    if step == DERIVED_TABLES:
                        self.commit_batches(None)  # a commit that died after its watermarks
                    else:
                        self.discover(step)
                    progress.update()
        log.info(
            "run %s: %d tables changed, %d results computed again: %s",
            "none opened" if plan is None else plan.run_id,
            0 if plan is None else len(plan.batches),
            len(stale),
            ", ".join(stale) or "none",
        )
        return plan

    def audit(self) -> Audit:
        """The quality gate over the catalog as written (``lakemeta.quality``); the results are kept. On a
        Spark session, the server loads the tables' snapshots for the publication meanwhile; the gate
        itself needs none."""
        loading = load_snapshots_ahead(self.catalog) if self.catalog.has_spark else None
        audit = audit_tables(self.catalog.root)
        if loading is not None:
            loading.join()
        return audit

    def publish(self, audit: Audit) -> int:
        """Publish the audited versions of the catalog's tables (the session needs a metastore:
        ``metastore_conf``); a failed audit raises QualityGateError. Returns the number of tables."""
        return publish_audited(self.catalog, audit)

    def search_joinable(
        self, source: str, key_columns: list[str], k: int, hash_bits: int, query_id: str
    ) -> list[JoinableMatch]:
        """The top-k joinable tables for a query table of the lake (MATE §6), stored under ``query_id``."""
        describe_jobs(self.catalog.spark, f"joinable search {query_id}: {source}")
        with self.catalog.using_state(f"joinable search {query_id}"):
            return search_lake(
                self.catalog, self.lake, source, key_columns, k, hash_bits, query_id, self.config.ingest
            )

    def rebuild(self) -> Plan | None:
        """Drop all state (watermarks included) and recompute it, and every result, from the lake's
        current snapshots, holding the state alone: it waits for the steps in progress, and the run in
        progress is abandoned (its remaining steps find that and skip)."""
        with self.catalog.replacing_state():
            abandon_open_runs(self.catalog)
            for name in self.catalog.state_tables:
                self.catalog.truncate(name)
            log.info("state dropped: %d state tables truncated", len(self.catalog.state_tables))
            plan = self.run()
            if plan is None:  # a lake without tables: no run, yet every result must describe the empty state
                self.commit_batches(None)
                self.discover()
            return plan
