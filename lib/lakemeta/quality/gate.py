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
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from lakemeta.catalog.schemas import CATALOG_SCHEMAS
from lakemeta.crash_points import crash_point
from lakemeta.quality.results import QUALITY_FOLDER, Audit, audit_file, batches_file
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


@dataclass(frozen=True)
class _Validation:
    context: Any  # the GX context holding the suites and their results, for Data Docs
    suites: dict[str, dict]  # each suite's validation result as recorded (``data_docs.recorded_result``)
    failures: list[str]


def _validate(source_name: str, checks: list, run_name: str, run_time: datetime) -> _Validation:
    """Validate each check's frame, its table as a data asset of the pandas data source ``source_name``,
    with its suite, in an ephemeral GX context, all under the run id ``run_name``."""
    # Great Expectations takes seconds to import: only the audits load it, not every job importing this.
    import great_expectations as gx
    from great_expectations.core.run_identifier import RunIdentifier
    from great_expectations.data_context.types.base import ProgressBarsConfig

    from lakemeta.quality.data_docs import recorded_result

    # Ephemeral: the stores are in memory, so nothing the verdict needs is read from or written to disk
    # but the tables and the results file; Data Docs come after the verdict (``data_docs``).
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_pandas(source_name)
    run_id = RunIdentifier(run_name=run_name, run_time=run_time)
    batches, suites, failures = {}, {}, []
    for check in checks:
        if check.asset_name not in batches:
            asset = source.add_dataframe_asset(check.asset_name)
            batches[check.asset_name] = asset.add_batch_definition_whole_dataframe("latest version")
        definition = context.validation_definitions.add(
            gx.ValidationDefinition(
                name=check.name,
                data=batches[check.asset_name],
                suite=context.suites.add(
                    gx.ExpectationSuite(name=check.name, expectations=check.expectations)
                ),
            )
        )
        result = definition.run(
            batch_parameters={"dataframe": pd.DataFrame(check.frame)},
            expectation_parameters=check.parameters,
            run_id=run_id,
        )
        suites[check.name] = recorded_result(result)
        failures += [
            _failure(check.name, check.asset_name, outcome)
            for outcome in suites[check.name]["results"]
            if not outcome["success"]
        ]
    return _Validation(context, suites, failures)


def _write(path: Location, record: dict) -> None:
    """Write the results whole or not at all (``Location.write_text``): a crash mid-write must not
    leave results that a later publish would fail to read."""
    path.write_text(json.dumps(record, indent=1, default=str))
    crash_point(f"after write {QUALITY_FOLDER}/{path.name.split('-')[0]}")  # audit / batches, no time


def audit_tables(catalog: Location) -> Audit:
    """Validate every catalog table at its latest version; write and return the results."""
    from lakemeta.quality.catalog_suites import PAIR_TABLES, catalog_checks

    versions, frames = {}, {}
    for name in [*AUDITED, "state/batches"]:
        table = (catalog / name).delta_table()
        versions[name] = table.version()
        rows = (catalog / name).delta_dataset(table).to_table(columns=PAIR_TABLES.get(name))
        # A pair table of a dense lake holds tens of millions of rows naming a few thousand tables and
        # columns: as categories its strings take a code each rather than an object (its suites compare
        # them, and never concatenate them).
        frames[name] = rows.to_pandas(strings_to_categorical=name in PAIR_TABLES)
    audited_at = datetime.now(UTC)
    number = int(audited_at.timestamp() * 1_000_000)
    path = catalog / QUALITY_FOLDER / audit_file(audited_at)
    validation = _validate(
        "lakemeta_catalog", catalog_checks(frames), path.name.removesuffix(".json"), audited_at
    )
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


def _data_docs(validation: _Validation, results: Location) -> Location | None:
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
        validation = _validate("lakemeta_batches", checks, path.name.removesuffix(".json"), datetime.now(UTC))
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
