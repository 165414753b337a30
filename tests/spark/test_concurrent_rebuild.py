"""A rebuild started while an incremental run is in progress (a manual lakemeta_rebuild DAG run beside a
scheduled lakemeta_incremental run) corrupts nothing: it waits for the step that is writing, abandons the
run, and the run's later steps, started while the rebuild works, wait for it and then skip.

Each side is its own ``Pipeline`` (its own catalog handle and leases, as another process has), in a
thread of this process sharing the test's Spark session, with the lake and the catalog in the S3 server:
object storage, where a lease is a conditional write. The leases themselves are tested on local disk and in
the S3 server alike (tests/unit/catalog/test_store.py); what this test adds, the steps' and the rebuild's
use of them, does not depend on where the catalog is."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from lakemeta import crash_points
from lakemeta.config import Config
from lakemeta.orchestration.pipeline import Pipeline
from lakemeta.registry import state_schemas
from lakemeta.storage import Location

from .lake_changes import create_spark_table, drop_table, process, random_change, random_rows
from .test_crash_recovery import catalog_rows

pytestmark = pytest.mark.spark

ABOUT_TO_WRITE = "before merge state/hll_counters"


def _statuses(pipeline: Pipeline) -> list[str]:
    return pipeline.catalog.read_small("runs").sort_by("run_id")["status"].to_pylist()


def test_a_rebuild_waits_for_the_step_writing_and_the_run_it_abandons_writes_nothing_after(
    spark, s3, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Location.parse(s3.prefix("concurrent-rebuild"))
    rng = np.random.default_rng(3)
    lake = root / "lake"
    for name in ("a", "b", "c"):
        create_spark_table(spark, lake / name, random_rows(rng, 8))
    config = Config(lake=lake, catalog=root / "catalog")
    incremental = Pipeline(spark, config)
    process(incremental, *(c.name for c in incremental.components()))
    random_change(spark, rng, lake / "a", foreign=False)
    random_change(spark, rng, lake / "b", foreign=False)
    plan = incremental.detect_batches()

    # The incremental run's HLL step has its counts and is about to MERGE them when table b leaves the lake
    # and a rebuild starts. Were the rebuild not to wait, the MERGE could land on the truncated state and
    # leave b's counts in it, which the rebuild's plan (without b) never removes.
    about_to_write, resume = threading.Event(), threading.Event()

    def hold(label: str) -> None:
        if label == ABOUT_TO_WRITE and not about_to_write.is_set():
            about_to_write.set()
            assert resume.wait(300)

    monkeypatch.setattr(crash_points, "on_reach", hold)
    rebuilder = Pipeline(spark, config)
    with ThreadPoolExecutor(max_workers=3) as threads:
        step = threads.submit(incremental.update_state, plan, "hll_counters")
        assert about_to_write.wait(300)
        drop_table(lake / "b")
        rebuild = threads.submit(rebuilder.rebuild)
        time.sleep(3)
        assert _statuses(incremental) == ["succeeded", "running"]  # the rebuild waits for the step...
        resume.set()
        step.result(timeout=300)
        while "abandoned" not in _statuses(incremental):  # ...then abandons the run and rebuilds
            time.sleep(0.2)
        # The run's next step, started while the rebuild works, waits for it and then skips.
        later_step = threads.submit(incremental.update_state, plan, "agree_sets")
        rebuilt = rebuild.result(timeout=600)
        later_step.result(timeout=300)
    incremental.commit_batches(plan)  # the run's last step: commits nothing, refreshes the derived tables

    assert _statuses(incremental) == ["succeeded", "abandoned", "succeeded"]
    assert rebuilt.run_id == 3 and {batch.table_name for batch in rebuilt.batches} == {"a", "c"}
    reference = Pipeline(spark, Config(lake=lake, catalog=root / "reference"))
    process(reference, *(c.name for c in reference.components()))
    state = sorted(state_schemas())
    assert catalog_rows(config.catalog, state) == catalog_rows(root / "reference", state)
