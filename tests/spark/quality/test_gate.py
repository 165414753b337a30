"""The quality gate (write-audit-publish): a catalog the pipeline wrote passes its suites; ranges, duplicates,
an accepted FK without a key and a table that ``columns`` does not describe fail it, with the failures named
by suite, table and column, and the GX validation results kept; the Data Docs of the last audits are beside
them, and a failure to render them changes no verdict. A failed audit publishes nothing, nor does one older
than the audit published. A run's batches are audited for schema drift."""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from lakemeta.catalog.store import Txn, arrow_schema
from lakemeta.config import Config
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.orchestration.publish import publish_audited
from lakemeta.orchestration.steps import run_step, step_config
from lakemeta.quality.gate import QualityGateError, audit_batches
from lakemeta.quality.results import Audit

from ..lake_changes import process

pytestmark = pytest.mark.spark


def run_name(audit: Audit) -> str:
    """The GX run of an audit: its results file's name."""
    return audit.path.name.removesuffix(".json")


def test_the_pipeline_s_catalog_passes_and_bad_rows_fail_by_name(
    spark, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lake = tmp_path / "lake"
    write_deltalake(str(lake / "orders"), pa.table({"id": [1, 2, 3, 4], "note": ["a", None, "c", "a"]}))
    write_deltalake(str(lake / "items"), pa.table({"order_id": [1, 1, 2, 4, 3]}))
    pipeline = Pipeline(spark, Config(lake=lake, catalog=tmp_path / "catalog"))
    process(pipeline, "column_profile", "hll_counters", "column_values", "agree_sets")
    pipeline.discover()

    passed = pipeline.audit()
    assert passed.success and passed.failures == []
    recorded = json.loads(passed.path.read_text())
    catalog = tmp_path / "catalog"
    assert recorded["versions"]["fk_candidates"] == DeltaTable(str(catalog / "fk_candidates")).version()
    suites = recorded["suites"]
    assert set(suites) >= {"fk_candidates", "runs", "accepted_fks_reference_keys", "tables_are_described"}
    assert sum(len(suite["results"]) for suite in suites.values()) > 40
    # Each suite is a GX validation of the catalog table itself, one GX run per audit, named after it.
    assert suites["accepted_fks_reference_keys"]["meta"]["active_batch_definition"]["data_asset_name"] == (
        "fk_candidates"
    )
    assert {suite["meta"]["run_id"]["run_name"] for suite in suites.values()} == {run_name(passed)}
    index = catalog / "_quality" / "data_docs" / "index.html"
    assert run_name(passed) in index.read_text() and "accepted_fks_reference_keys" in index.read_text()
    # The DAG's gate task and jobs/audit_catalog.py run the step: the path of a passing audit of the same
    # versions, for the publication.
    config = step_config(lake=str(lake), catalog=str(catalog))
    stepped = Audit.load(run_step("audit_catalog", config=config))
    assert stepped.success and stepped.versions == passed.versions and stepped.path != passed.path

    bad_fks = pa.Table.from_pylist(
        [
            {"fk_table": "items", "fk_columns": ["order_id"], "pk_table": "orders", "pk_columns": ["note"]}
            | {"emd": emd, "rank": rank, "accepted": True, "pk_source": "agree_sets"}  # "note" is no key
            for emd, rank in ((1.5, 7), (0.0, 8))
        ],
        schema=arrow_schema("fk_candidates"),
    )
    write_deltalake(str(catalog / "fk_candidates"), bad_fks, mode="append")
    ghost = {
        "table_name": ["ghost"],
        "n_rows": [5],
        "n_columns": [1],
        "last_version": [0],
        "updated_at": [None],
    }
    write_deltalake(str(catalog / "tables"), pa.table(ghost, schema=arrow_schema("tables")), mode="append")
    # The pair tables are validated in parts (one part here): their suites still see each bad row.
    pair = {"dep_table": "items", "dep_column": "order_id", "ref_table": "orders", "ref_column": "id"}
    bad_estimate = {**pair, "estimate": 0.5, "error_bound": 0.1, "status": "guessed"}
    estimates = pa.Table.from_pylist([bad_estimate], arrow_schema("inclusion_estimates"))
    write_deltalake(str(catalog / "inclusion_estimates"), estimates, mode="append")
    inds = pa.Table.from_pylist([{**pair, "coverage": 1.0}] * 2, arrow_schema("inclusion_dependencies"))
    write_deltalake(str(catalog / "inclusion_dependencies"), inds, mode="append")
    failed = pipeline.audit()
    assert not failed.success and failed.path != passed.path
    with pytest.raises(QualityGateError, match="accepted_fks_reference_keys"):
        run_step("audit_catalog", config=config)  # the task fails: nothing is published
    text = "\n".join(failed.failures)
    assert "fk_candidates: expect_column_values_to_be_between emd" in text and "1.5" in text
    assert "fk_candidates: expect_compound_columns_to_be_unique" in text
    assert (
        "inclusion_estimates: expect_column_values_to_be_in_set status failed; unexpected: ['guessed']"
        in text
    )
    assert "inclusion_dependencies: expect_compound_columns_to_be_unique" in text
    # The checks across tables fail on the rows of the real tables, with the values of the tables they
    # refer to as the suites' parameters.
    assert (
        "accepted_fks_reference_keys on fk_candidates: expect_column_values_to_be_in_set pk_key failed; "
        "unexpected: ['orders(note)', 'orders(note)']"
    ) in failed.failures
    assert (
        "tables_are_described on tables: expect_column_values_to_be_in_set shape failed; "
        "unexpected: ['ghost: 1x5']"
    ) in failed.failures
    assert "columns_describe_tables" not in text  # every described table is listed still
    (reference_keys,) = json.loads(failed.path.read_text())["suites"]["accepted_fks_reference_keys"][
        "results"
    ]
    assert not reference_keys["success"]
    assert "orders(id)" in reference_keys["expectation_config"]["kwargs"]["value_set"]
    # The Data Docs show both audits, the failed one's page with the row that failed.
    site = catalog / "_quality" / "data_docs"
    assert run_name(passed) in index.read_text() and run_name(failed) in index.read_text()
    (page,) = (site / "validations" / "accepted_fks_reference_keys" / run_name(failed)).rglob("*.html")
    assert "orders(note)" in page.read_text()

    # Data Docs are a view of the results: a site that cannot be written is a warning, not a verdict.
    shutil.rmtree(site)
    site.write_text("a file where the site's folder was")
    with caplog.at_level(logging.WARNING, logger="lakemeta.quality.gate"):
        again = pipeline.audit()
    assert (
        again.failures == failed.failures
        and json.loads(again.path.read_text())["failures"] == failed.failures
    )
    assert "Data Docs not rendered" in caplog.text
    with pytest.raises(QualityGateError, match="expectations failed"):
        publish_audited(pipeline.catalog, failed)
    assert not DeltaTable.is_deltatable(str(catalog / "published")) or not len(
        DeltaTable(str(catalog / "published")).to_pyarrow_table()
    )

    # Once a newer audit is published, an older one's publish (a late retry) changes nothing; a newer one
    # goes on to publish (which needs a metastore, that this session has not).
    record = {"table_name": ["tables"], "version": [1], "published_at": [None], "audit": ["newer.json"]}
    pipeline.catalog.append_small("published", pa.table(record), Txn("publish", passed.number + 1))
    assert publish_audited(pipeline.catalog, passed) == 0
    newer = dataclasses.replace(passed, number=passed.number + 2)
    with pytest.raises(ValueError, match="needs a session with a metastore"):
        publish_audited(pipeline.catalog, newer)


def test_a_batch_whose_schema_drifted_is_reported_by_column(spark, tmp_path: Path) -> None:
    lake, catalog = tmp_path / "lake", tmp_path / "catalog"
    write_deltalake(str(lake / "orders"), pa.table({"id": [1, 2], "note": ["a", None]}))
    write_deltalake(str(lake / "items"), pa.table({"order_id": [1, 1, 2]}))
    pipeline = Pipeline(spark, Config(lake=lake, catalog=catalog))
    process(pipeline, "column_profile")
    assert audit_batches(pipeline.catalog.root, pipeline.lake) is None  # no run in progress

    # orders: id retyped, note removed, shipped added; items: rows only; regions: new, nothing to drift from.
    write_deltalake(
        str(lake / "orders"),
        pa.table({"id": ["1", "2"], "shipped": [True, False]}),
        mode="overwrite",
        schema_mode="overwrite",
    )
    write_deltalake(str(lake / "items"), pa.table({"order_id": [2]}), mode="append")
    write_deltalake(str(lake / "regions"), pa.table({"region": ["north"]}))
    plan = pipeline.detect_batches()
    written = []
    for _attempt in range(2):  # a retry finds the results of the first attempt: no audit again
        audit = audit_batches(pipeline.catalog.root, pipeline.lake)
        written.append(audit.path.read_text())
        assert audit.path == pipeline.catalog.root / "_quality" / f"batches-run-{plan.run_id}.json"
        assert not audit.success and audit.versions == {"items": 1, "orders": 1, "regions": 0}
        assert audit.failures == [
            "batch orders @ 1: expect_column_values_to_be_in_set signature failed; "
            "unexpected: ['id string', 'shipped boolean']",
            "batch orders @ 1: expect_column_distinct_values_to_contain_set signature failed; "
            "missing: ['id bigint', 'note string']",
        ]
    assert written[0] == written[1]  # the time it was audited at too
    suites = json.loads(audit.path.read_text())["suites"]
    assert sorted(suites) == ["batch items @ 1", "batch orders @ 1"]
    assert suites["batch items @ 1"]["success"]
