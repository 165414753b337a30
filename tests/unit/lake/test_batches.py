"""Two runs started at once plan one run: the catalog's lease serialises planning
(``lake.batches.open_plan``), on local disk and in the S3 server.

Planning reads and writes only the small bookkeeping tables, with delta-rs, so two real processes, each in a
working directory of its own, race here without a JVM."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pyarrow as pa

from lakemeta.catalog import Catalog
from lakemeta.catalog.contract import ensure_tables
from lakemeta.lake.batches import open_plan
from lakemeta.show import read_catalog_table
from lakemeta.storage import Location

N_TABLES = 40


def _plan(barrier, lake: str, catalog: str, workdir: str, results) -> None:
    os.chdir(workdir)
    store = Catalog(None, Location(catalog))  # the bookkeeping tables need no Spark session
    barrier.wait()  # both processes plan at the same moment
    plan = open_plan(store, Location(lake))
    results.put((plan.run_id, sorted(batch.table_name for batch in plan.batches)))


def test_two_runs_started_at_once_plan_one_run(root: Location, tmp_path: Path) -> None:
    lake, catalog = root / "lake", root / "catalog"
    names = [f"t{i:02d}" for i in range(N_TABLES)]
    for name in names:
        (lake / name).write_delta(pa.table({"x": [1, 2, 3]}))
    ensure_tables(Catalog(None, catalog))
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(2), context.Queue()
    workdirs = [tmp_path / f"process-{i}" for i in range(2)]
    processes = []
    for workdir in workdirs:
        workdir.mkdir()
        arguments = (barrier, lake.uri, catalog.uri, str(workdir), results)
        processes.append(context.Process(target=_plan, args=arguments))
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
        assert process.exitcode == 0
    # Both continue the one plan: run 1, every table once.
    assert [results.get(timeout=5) for _ in processes] == [(1, names), (1, names)]
    planned = read_catalog_table(catalog, "state/batches")
    assert sorted(planned.table_name) == names and set(planned.run_id) == {1}
    runs = read_catalog_table(catalog, "runs")
    assert list(zip(runs.run_id, runs.status, strict=True)) == [(1, "running")]
