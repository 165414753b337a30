"""The quality gate of write-audit-publish: validate the catalog's tables, as written, with the suites of
``catalog_suites`` (Great Expectations), keep the results, and say which table versions passed.

The audit reads each catalog table at its latest Delta version with delta-rs (no JVM) and records those
versions beside the results in ``<catalog>/_quality/audit-<time>.json``; ``publish_audited`` publishes
exactly the audited versions, so a table written again after its audit is not published unvalidated.

Each suite is a GX ``ExpectationSuite`` over its catalog table (a pandas data asset), run by a
``ValidationDefinition``; an audit runs them all under one GX run id, named after its results file, and
renders the Data Docs of the last audits beside the results (``data_docs``), as a checkpoint with an
``UpdateDataDocsAction`` would. Not a ``Checkpoint`` itself: a checkpoint hands every validation definition
the same batch parameters, and a dataframe asset takes its frame from them, so a checkpoint validates one
frame, where an audit validates a table per suite.

Each run's batches are audited too, for schema drift (``batch_suites``), before the run commits.
"""

from __future__ import annotations

import importlib
import json
import logging
import threading
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import pyarrow.dataset as ds

from lakemeta.catalog.schemas import CATALOG_SCHEMAS
from lakemeta.crash_points import crash_point
from lakemeta.quality.results import (
    QUALITY_FOLDER,
    Audit,
    Check,
    PartSuite,
    as_frame,
    audit_file,
    batches_file,
)
from lakemeta.quality.table_parts import PART_ROWS, merged_result, table_parts
from lakemeta.storage import Location

log = logging.getLogger(__name__)

AUDITED = [name for name in CATALOG_SCHEMAS if name != "published"]


# What the audits import, Great Expectations with them, a slow import: imported ahead by
# ``import_audit_modules``.
_AUDIT_MODULES = (
    "lakemeta.quality.batch_suites",
    "lakemeta.quality.catalog_suites",
    "lakemeta.quality.data_docs",
)


def import_audit_modules() -> None:
    """Import the audits' modules in a thread of this process. A run starts it first: its driver then
    mostly waits for Spark, so that Great Expectations' import overlaps the run rather than delaying its
    batch audit or its audit (a first run's batch audit, with nothing to compare, no longer loads it at all;
    bench/small_change.py's first runs measured no difference either way). A failed import is left for the
    audit's own import, which raises it there."""

    def run() -> None:
        for name in _AUDIT_MODULES:
            try:
                importlib.import_module(name)
            except Exception as error:  # the audit's own import raises it where it matters
                log.debug("audit modules not imported ahead (%s: %s)", type(error).__name__, error)
                return

    threading.Thread(target=run, name="lakemeta-audit-imports", daemon=True).start()


class QualityGateError(RuntimeError):
    """The catalog failed validation; nothing was published."""


def _failure(suite: str, table: str, outcome: dict) -> str:
    config, result = outcome["expectation_config"], outcome.get("result", {})
    kwargs = config["kwargs"]
    where = kwargs.get("column") or kwargs.get("column_list") or ""
    if config["type"] == "expect_column_distinct_values_to_contain_set":
        detail = f"missing: {sorted(set(kwargs['value_set']) - set(result.get('observed_value') or []))}"
    else:
        detail = f"unexpected: {result.get('partial_unexpected_list') or result.get('observed_value')}"
    on = suite if suite == table else f"{suite} on {table}"
    return f"{on}: {config['type']} {where} failed; {detail}"


class SuiteValidation:
    """Validates checks in an ephemeral GX context, each check's frame as a data asset (its table) of the
    pandas data source ``source_name``, all under the run id ``run_name``; keeps each suite's result as
    recorded (``data_docs.recorded_result``) and a line per failed expectation."""

    def __init__(self, source_name: str, run_name: str, run_time: datetime) -> None:
        # Great Expectations takes seconds to import: only the audits load it, not every job importing this.
        import great_expectations as gx
        from great_expectations.core.run_identifier import RunIdentifier
        from great_expectations.data_context.types.base import ProgressBarsConfig

        # Ephemeral: the stores are in memory, so nothing the verdict needs is read from or written to disk
        # but the tables and the results file; Data Docs come after the verdict (``data_docs``).
        self.context = gx.get_context(mode="ephemeral")
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self._source = self.context.data_sources.add_pandas(source_name)
        self._run_id = RunIdentifier(run_name=run_name, run_time=run_time)
        self._batches: dict[str, Any] = {}
        self.suites: dict[str, dict] = {}
        self.failures: list[str] = []

    def _definition(self, name: str, asset_name: str, expectations: list) -> Any:
        import great_expectations as gx

        if asset_name not in self._batches:
            asset = self._source.add_dataframe_asset(asset_name)
            self._batches[asset_name] = asset.add_batch_definition_whole_dataframe("latest version")
        suite = self.context.suites.add(gx.ExpectationSuite(name=name, expectations=expectations))
        return self.context.validation_definitions.add(
            gx.ValidationDefinition(name=name, data=self._batches[asset_name], suite=suite)
        )

    def _run(self, definition: Any, frame: pd.DataFrame, parameters: dict) -> dict:
        from lakemeta.quality.data_docs import recorded_result

        return recorded_result(
            definition.run(
                batch_parameters={"dataframe": frame}, expectation_parameters=parameters, run_id=self._run_id
            )
        )

    def _record(self, name: str, asset_name: str, recorded: dict) -> None:
        self.suites[name] = recorded
        self.failures += [
            _failure(name, asset_name, outcome) for outcome in recorded["results"] if not outcome["success"]
        ]

    def validate(self, check: Check) -> None:
        definition = self._definition(check.name, check.asset_name, check.expectations)
        self._record(
            check.name, check.asset_name, self._run(definition, pd.DataFrame(check.frame), check.parameters)
        )

    def validate_in_parts(
        self,
        name: str,
        suite: PartSuite,
        rows: ds.Dataset,
        columns: list[str] | None = None,
        part_rows: int = PART_ROWS,
    ) -> None:
        """Validate the table ``name`` (its rows as a dataset, the ``columns`` its suite reads: all when
        None) with ``suite``, in parts of about ``part_rows`` rows: one result, the parts' merged, in the
        results and in the store the Data Docs render."""
        from lakemeta.quality.data_docs import store_result

        definition = self._definition(name, name, suite.expectations)
        parts = table_parts(rows, suite.key, columns, part_rows)
        merged = merged_result([self._run(definition, frame, {}) for frame in parts])
        store_result(self.context, merged)  # where each part's run left its own result
        self._record(name, name, merged)


def _write(path: Location, record: dict) -> None:
    """Write the results whole or not at all (``Location.write_text``): a crash mid-write must not
    leave results that a later publish would fail to read."""
    path.write_text(json.dumps(record, indent=1, default=str))
    crash_point(f"after write {QUALITY_FOLDER}/{path.name.split('-')[0]}")  # audit / batches, no time


def audit_tables(catalog: Location) -> Audit:
    """Validate every catalog table at its latest version; write and return the results."""
    from lakemeta.quality.catalog_suites import CHECKED_COLUMNS, catalog_checks, part_suites

    in_parts = part_suites()
    versions, datasets = {}, {}
    for name in [*AUDITED, "state/batches"]:
        table = (catalog / name).delta_table()
        versions[name] = table.version()
        datasets[name] = (catalog / name).delta_dataset(table)
    audited_at = datetime.now(UTC)
    number = int(audited_at.timestamp() * 1_000_000)
    path = catalog / QUALITY_FOLDER / audit_file(audited_at)
    validation = SuiteValidation("lakemeta_catalog", path.name.removesuffix(".json"), audited_at)
    # The tables validated in parts first, before the others are read whole: their peaks do not add up.
    for name, suite in in_parts.items():
        validation.validate_in_parts(name, suite, datasets[name], CHECKED_COLUMNS.get(name))
    frames = {
        name: as_frame(dataset.to_table(columns=CHECKED_COLUMNS.get(name)))
        for name, dataset in datasets.items()
        if name not in in_parts
    }
    for check in catalog_checks(frames):
        validation.validate(check)
    suites, failures = validation.suites, validation.failures
    versions = {name: version for name, version in versions.items() if name in AUDITED}
    _write(
        path,
        {
            "audited_at": audited_at.isoformat(),
            "number": number,
            "catalog": str(catalog),
            "success": not failures,
            "versions": versions,
            "failures": failures,
            "suites": suites,
        },
    )
    n_expectations = sum(len(s["results"]) for s in suites.values())
    docs = _data_docs(validation, path)
    log.info(
        "quality gate: %d suites, %d expectations over %d catalog tables, %d failed; results in %s%s",
        len(suites),
        n_expectations,
        len(versions),
        len(failures),
        path,
        "" if docs is None else f"; Data Docs in {docs}",
    )
    return Audit(path, number, not failures, versions, failures, docs)


def _data_docs(validation: SuiteValidation, results: Location) -> Location | None:
    """Render the Data Docs of the audit whose results were written to ``results``; their index page, None
    when they could not be rendered. The verdict is in the results already and never depends on the Data Docs:
    they are a view of the results that the next audit renders again, so a failure to render them is a
    warning naming the error, and the run goes on to publish. No crash point: a crash here leaves nothing
    that a retry, or a publish, reads."""
    from lakemeta.quality.data_docs import render_data_docs

    try:
        index = render_data_docs(validation.context, results.parent, results.name)
    except Exception as error:  # any failure of a derived view, named in the warning
        log.warning(
            "quality gate: Data Docs not rendered (%s: %s); the results are complete",
            type(error).__name__,
            error,
        )
        return None
    return index


def audit_batches(catalog: Location, lake: Location) -> Audit | None:
    """Check the batches of the running (planned, uncommitted) run for schema drift (``batch_suites``) and
    keep the results in ``<catalog>/_quality/batches-run-<run>.json`` (a retry writes the same file).

    Drift is reported, in the log and the results, and does not fail the run: the planner has already made
    a drifted table's batch a full one. None when no run is in progress."""
    from lakemeta.lake.batches import running_plan

    plan = running_plan(catalog)
    if plan is None:
        log.info("batch audit: no run in progress")
        return None
    path = catalog / QUALITY_FOLDER / batches_file(plan.run_id)
    if path.exists():
        # A retry of a run killed after its audit: the plan, and the catalog's columns it was audited
        # against, stay as they were while the run is running (``columns`` is refreshed after the commit
        # that ends it), so the results written then are the run's, and Great Expectations need not run.
        log.info("batch audit of run %d: done before this attempt; results in %s", plan.run_id, path)
        return Audit.load(path)
    from lakemeta.quality.batch_suites import batch_checks

    columns = (catalog / "columns").delta_dataset().to_table().to_pandas()
    checks = batch_checks(plan.batches, columns, lake)
    suites: dict[str, dict] = {}
    failures: list[str] = []
    if checks:  # none when every table is new or dropped (a first run): Great Expectations is not needed
        validation = SuiteValidation("lakemeta_batches", path.name.removesuffix(".json"), datetime.now(UTC))
        for check in checks:
            validation.validate(check)
        suites, failures = validation.suites, validation.failures
    versions = {batch.table_name: batch.to_version for batch in plan.batches if batch.kind != "drop"}
    _write(
        path,
        {
            "audited_at": datetime.now(UTC).isoformat(),
            "run_id": plan.run_id,
            "number": plan.run_id,
            "lake": str(lake),
            "success": not failures,
            "versions": versions,
            "failures": failures,
            "suites": suites,
        },
    )
    drifted = sorted({line.split(" @ ")[0].removeprefix("batch ") for line in failures})
    log.info(
        "batch audit of run %d: %d batches, %d compared with the catalog's columns, %d with schema drift%s; "
        "results in %s",
        plan.run_id,
        len(plan.batches),
        len(suites),
        len(drifted),
        f" ({', '.join(drifted)})" if drifted else "",
        path,
    )
    for line in failures:
        log.warning("schema drift: %s", line)
    return Audit(path, plan.run_id, not failures, versions, failures)


def require_success(audit: Audit) -> Audit:
    """The audit, or QualityGateError naming what failed and where the results are."""
    if not audit.success:
        shown = "\n  ".join(audit.failures[:20])
        raise QualityGateError(
            f"{len(audit.failures)} expectations failed (results in {audit.path}):\n  {shown}"
        )
    return audit
